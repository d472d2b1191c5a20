package serverconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/render/remote"
)

// The remote: block is the whole remote policy of the server: prefixes, their
// credential files, timeouts and caps. A bad prefix is an error at its line that
// never shows a credential.
func TestRemoteBlock(t *testing.T) {
	files := secrets(t)
	body := expand(`github: {appID: 1, privateKeyFile: {app.pem}, webhookSecretFile: {gh-webhook}}
remote:
  allow:
  - url: https://charts.example.com/stable
    tokenFile: {gl-token}
  - url: http://10.0.0.5:8080/
    allowPrivate: true
  timeout: 30s
  maxArchiveBytes: 2097152
  cacheMaxBytes: 104857600
`, files)
	cfg, err := Load(writeConfig(t, body), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Remote
	if len(r.Allow) != 2 || r.Allow[0].TokenFile != files["gl-token"] || !r.Allow[1].AllowPrivate ||
		r.Timeout != 30*time.Second || r.MaxArchiveBytes != 2<<20 || r.CacheMaxBytes != 100<<20 {
		t.Errorf("remote %+v", r)
	}
	bad := expand(`github: {appID: 1, privateKeyFile: {app.pem}, webhookSecretFile: {gh-webhook}}
remote:
  allow:
  - url: https://user:hunter2@charts.example.com/
`, files)
	_, err = Load(writeConfig(t, bad), nil)
	if err == nil || !strings.Contains(err.Error(), "server.yaml:3: remote.allow") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad prefix: %v", err)
	}
}

// TestRemoteMode: remote.mode is public unless the block says allowlist or
// off; anything else is an error at its line.
func TestRemoteMode(t *testing.T) {
	files := secrets(t)
	head := "github: {appID: 1, privateKeyFile: {app.pem}, webhookSecretFile: {gh-webhook}}\n"
	for body, want := range map[string]remote.Mode{
		"":                            remote.ModePublic,
		"remote: {timeout: 5s}\n":     remote.ModePublic,
		"remote: {mode: allowlist}\n": remote.ModeAllowlist,
		"remote:\n  mode: off\n":      remote.ModeOff,
		"remote:\n  mode: public\n":   remote.ModePublic,
	} {
		cfg, err := Load(writeConfig(t, expand(head+body, files)), nil)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if cfg.Remote.Mode != want {
			t.Errorf("%q: mode %q, want %q", body, cfg.Remote.Mode, want)
		}
	}
	_, err := Load(writeConfig(t, expand(head+"remote:\n  mode: everything\n", files)), nil)
	if err == nil || !strings.Contains(err.Error(), "server.yaml:3: remote.mode") {
		t.Errorf("bad mode: %v", err)
	}
}
