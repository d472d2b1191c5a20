package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// TestMainHelper is not a test: TestDeprecationWarningOnce runs the test binary
// with DRIFTPREVIEW_MAIN set, and it runs main() as the CLI would.
func TestMainHelper(t *testing.T) {
	args := os.Getenv("DRIFTPREVIEW_MAIN")
	if args == "" {
		t.Skip("helper process for TestDeprecationWarningOnce")
	}
	os.Args = append([]string{"driftpreview"}, strings.Split(args, "\x1f")...)
	main()
}

// TestDeprecationWarningOnce previews two kustomizations that use a deprecated
// field at base and head: kustomize prints its warning on each render (four here),
// and the CLI's stderr shows it once.
func TestDeprecationWarningOnce(t *testing.T) {
	kust := func(value string) map[string]string {
		m := map[string]string{}
		for _, app := range []string{"one", "two"} {
			m[app+"/kustomization.yaml"] = "commonLabels: {team: shop}\nresources: [cm.yaml]\n"
			m[app+"/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + app + ", namespace: shop}\ndata: {v: \"" + value + "\"}\n"
		}
		return m
	}
	base, head := t.TempDir(), t.TempDir()
	writeFiles(t, base, kust("1"))
	writeFiles(t, head, kust("2"))
	repo := gitfixture.BaseHead(t, base, head)

	cmd := exec.Command(os.Args[0], "-test.run=^TestMainHelper$")
	cmd.Env = append(os.Environ(), "KUBECONFIG=", "DRIFTPREVIEW_MAIN="+strings.Join(
		[]string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--live-mode", "off"}, "\x1f"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
	if !strings.Contains(stdout.String(), "2 targets") {
		t.Fatalf("preview did not compare both targets:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	const warning = "# Warning: 'commonLabels' is deprecated."
	if n := strings.Count(stderr.String(), warning); n != 1 {
		t.Errorf("stderr has the deprecation warning %d times, want once:\n%s", n, stderr.String())
	}
}

func TestOnceWarnings(t *testing.T) {
	var out bytes.Buffer
	w := newOnceWarnings(&out)
	for _, chunk := range []string{
		"# Warning: 'bases' is deprecated.\n",
		"plain line\n# Warn", "ing: 'bases' is deprecated.\n", // split mid-line
		"# Warning: 'vars' is deprecated.\n",
		"partial",
	} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "# Warning: 'bases' is deprecated.\nplain line\n# Warning: 'vars' is deprecated.\npartial"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
