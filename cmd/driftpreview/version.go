package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// version is stamped with -ldflags -X main.version=…; otherwise the module version.
var version = ""

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) int {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	fmt.Fprintf(stdout, "driftpreview %s\n", v)
	return exitOK
}
