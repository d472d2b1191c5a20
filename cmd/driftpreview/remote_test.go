package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render/remote"
)

// TestRemoteFlags: remote sources are fetched from public addresses unless
// --offline, --remote-mode or the --remote-config file's mode says otherwise;
// the flags win over the file, and contradicting flags are an error.
func TestRemoteFlags(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(cfg, []byte("remote:\n  mode: allowlist\n  allow:\n  - url: https://charts.example.com/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		want    remote.Mode // "" for no fetcher
		wantErr string
	}{
		{args: nil, want: remote.ModePublic},
		{args: []string{"--offline"}, want: ""},
		{args: []string{"--remote-mode", "off"}, want: ""},
		{args: []string{"--remote-mode", "allowlist", "--allow-remote", "https://charts.example.com/"}, want: remote.ModeAllowlist},
		{args: []string{"--remote-config", cfg}, want: remote.ModeAllowlist},
		{args: []string{"--remote-config", cfg, "--remote-mode", "public"}, want: remote.ModePublic},
		{args: []string{"--remote-config", cfg, "--offline"}, want: ""},
		{args: []string{"--offline", "--remote-mode", "public"}, wantErr: "--offline and --remote-mode public contradict"},
		{args: []string{"--remote-mode", "everything"}, wantErr: `remote.mode: "everything" is not public, allowlist or off`},
	} {
		fl := flag.NewFlagSet("preview", flag.ContinueOnError)
		fl.SetOutput(io.Discard)
		p := addPreviewFlags(fl)
		if err := fl.Parse(append(tc.args, "--remote-cache", t.TempDir())); err != nil {
			t.Fatal(err)
		}
		f, err := p.fetcher()
		name := strings.Join(tc.args, " ")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch {
		case tc.want == "" && f != nil:
			t.Errorf("%s: a fetcher in mode %s, want none", name, f.Policy().Mode)
		case tc.want != "" && (f == nil || f.Policy().Mode != tc.want):
			t.Errorf("%s: fetcher %v, want mode %s", name, f, tc.want)
		}
	}
}
