package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: stamped values win; without them (go install …@latest) the module
// version and vcs.revision from the build info are shown.
func TestVersion(t *testing.T) {
	defer func(v, c string, bi func() (*debug.BuildInfo, bool)) { version, commit, buildInfo = v, c, bi }(version, commit, buildInfo)
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}}}
	buildInfo = func() (*debug.BuildInfo, bool) { return info, true }
	for _, tc := range []struct {
		name, version, commit string
		want                  []string
	}{
		{name: "stamped", version: "v1.2.3", commit: "abc1234", want: []string{"driftpreview v1.2.3\n", "commit: abc1234\n", "go: go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH + "\n"}},
		{name: "go install", want: []string{"driftpreview v0.3.0\n", "commit: 0123456789abcdef0123456789abcdef01234567-dirty\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			version, commit = tc.version, tc.commit
			var out bytes.Buffer
			if code := run(context.Background(), []string{"version"}, &out, &out); code != exitOK {
				t.Fatalf("exit %d", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q lacks %q", out.String(), w)
				}
			}
		})
	}
	buildInfo = func() (*debug.BuildInfo, bool) { return nil, false }
	version, commit = "", ""
	var out bytes.Buffer
	run(context.Background(), []string{"version"}, &out, &out)
	if !strings.Contains(out.String(), "driftpreview (devel)\ncommit: unknown\n") {
		t.Errorf("without build info: %q", out.String())
	}
}
