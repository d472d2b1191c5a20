package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunPreviewProfiles: --cpuprofile and --memprofile write pprof profiles
// (gzip-compressed protobuf), --trace an execution trace, and an unwritable path
// is a usage error before any work is done.
func TestRunPreviewProfiles(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var stdout, stderr bytes.Buffer
	args := []string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--live-mode", "off", "--cpuprofile", cpu, "--memprofile", mem}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitFailing {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, p := range []string{cpu, mem} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s is not a pprof profile: %v", p, err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %d bytes, %v", p, len(b), err)
		}
	}
	stdout.Reset()
	stderr.Reset()
	tr := filepath.Join(dir, "run.trace")
	args = []string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--live-mode", "off", "--trace", tr}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitFailing {
		t.Fatalf("--trace: exit %d: %s", code, stderr.String())
	}
	if b, err := os.ReadFile(tr); err != nil || !bytes.HasPrefix(b, []byte("go 1.")) || len(b) < 1024 {
		t.Errorf("--trace %s is no execution trace: %d bytes, %v", tr, len(b), err)
	}
	stdout.Reset()
	stderr.Reset()
	args = []string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--live-mode", "off", "--trace", filepath.Join(dir, "missing", "run.trace")}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitError || !strings.Contains(stderr.String(), "--trace") || stdout.Len() != 0 {
		t.Errorf("unwritable --trace: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	bad := filepath.Join(dir, "missing", "cpu.pprof")
	args = []string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--live-mode", "off", "--cpuprofile", bad}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitError || !strings.Contains(stderr.String(), "--cpuprofile") || stdout.Len() != 0 {
		t.Errorf("unwritable --cpuprofile: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
