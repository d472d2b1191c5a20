package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are stamped with -ldflags "-X main.version=… -X main.commit=…"
// (make build, .goreleaser.yaml, the Dockerfile). A binary built without them (go
// install …@latest, go build) falls back to what the Go toolchain recorded: the
// module version and the vcs.revision build setting.
var (
	version = ""
	commit  = ""
)

// buildInfo is debug.ReadBuildInfo, replaced in tests.
var buildInfo = debug.ReadBuildInfo

// versionInfo returns the version, the commit and the Go version of this binary.
func versionInfo() (v, c, goVersion string) {
	v, c, goVersion = version, commit, runtime.Version()
	bi, ok := buildInfo()
	if ok && bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	if v == "" {
		v = "(devel)"
		if ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	if c == "" {
		c = "unknown"
		if ok {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" {
				c = rev
				if modified == "true" {
					c += "-dirty"
				}
			}
		}
	}
	return v, c, goVersion
}

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) int {
	v, c, g := versionInfo()
	fmt.Fprintf(stdout, "driftpreview %s\ncommit: %s\ngo: %s %s/%s\n", v, c, g, runtime.GOOS, runtime.GOARCH)
	return exitOK
}
