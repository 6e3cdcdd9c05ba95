package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are set at link time (-X main.version=… -X
// main.commit=…, see the Makefile and .goreleaser.yaml). Empty, they are
// read from the module's build information.
var version, commit string

// build is what this binary says it is.
type build struct {
	Version, Revision, GoVersion string
}

// buildInfo is the version and commit from the linker flags, else from the
// build information Go records (the module version under `go install`,
// the VCS revision under `go build` in a checkout), else "devel" and
// "unknown".
func buildInfo() build {
	b := build{Version: version, Revision: commit, GoVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && b.Revision == "" {
				b.Revision = s.Value
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	if b.Revision == "" {
		b.Revision = "unknown"
	}
	return b
}

// printVersion writes the answer to -version.
func printVersion(w io.Writer, b build) {
	fmt.Fprintf(w, "waitroom %s (commit %s, %s)\n", b.Version, b.Revision, b.GoVersion)
}
