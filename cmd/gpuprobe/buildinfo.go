package main

import (
	"runtime/debug"
	"strings"

	"github.com/prometheus/common/version"
)

// The Makefile stamps prometheus/common/version with -ldflags -X (version,
// revision, branch, build user and date from git). A binary built without it
// — `go install github.com/gpuprobe/gpuprobe/cmd/gpuprobe@v1.2.3` or a plain
// `go build` — still knows what it is: the Go toolchain records the module
// version and the VCS revision in the binary, and we read them from there.
func init() { fillVersion(debug.ReadBuildInfo) }

// fillVersion fills only what -ldflags left empty, so a stamped build is
// never overridden.
func fillVersion(read func() (*debug.BuildInfo, bool)) {
	bi, ok := read()
	if !ok || bi == nil {
		return
	}
	if version.Version == "" {
		v := strings.TrimPrefix(bi.Main.Version, "v")
		if v == "" || v == "(devel)" {
			v = "0.0.0-dev"
		}
		version.Version = v
	}
	// The revision needs nothing here: prometheus/common/version reads
	// vcs.revision itself (with "-modified" for a dirty tree) when -X left it empty.
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" && version.BuildDate == "" {
			version.BuildDate = s.Value
		}
	}
}
