package main

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/version"
)

// A `go install pkg@v1.2.3` binary carries its module version and VCS facts
// in the build info; an ldflags-stamped one must keep its stamp.
func TestFillVersionFromBuildInfo(t *testing.T) {
	saved := [...]string{version.Version, version.Revision, version.BuildDate}
	defer func() { version.Version, version.Revision, version.BuildDate = saved[0], saved[1], saved[2] }()
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/gpuprobe/gpuprobe", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-23T10:00:00Z"}}}
	read := func() (*debug.BuildInfo, bool) { return bi, true }

	version.Version, version.Revision, version.BuildDate = "", "", ""
	fillVersion(read)
	if version.Version != "1.2.3" || version.BuildDate != "2026-11-23T10:00:00Z" {
		t.Errorf("go install build: version %q date %q", version.Version, version.BuildDate)
	}

	version.Version, version.BuildDate = "0.4.0-3-gabcdef0", "20261123-10:00:00"
	fillVersion(read)
	if version.Version != "0.4.0-3-gabcdef0" || version.BuildDate != "20261123-10:00:00" {
		t.Errorf("stamped build was overridden: %q %q", version.Version, version.BuildDate)
	}

	version.Version = ""
	bi.Main.Version = "(devel)"
	fillVersion(read)
	if version.Version != "0.0.0-dev" {
		t.Errorf("devel build: %q", version.Version)
	}
	version.Version = ""
	fillVersion(func() (*debug.BuildInfo, bool) { return nil, false })
	if version.Version != "" {
		t.Errorf("no build info invented a version: %q", version.Version)
	}
}

// The version reaches --version, the JSON report, snapshots and
// gpuprobe_build_info.
func TestVersionEverywhere(t *testing.T) {
	saved := [...]string{version.Version, version.Revision, version.Branch}
	defer func() { version.Version, version.Revision, version.Branch = saved[0], saved[1], saved[2] }()
	version.Version, version.Revision, version.Branch = "9.8.7-test", "feedface", "ship"

	_, out, _ := runCLI(t, "--version")
	if !strings.Contains(out, "version 9.8.7-test (branch: ship, revision: feedface)") {
		t.Errorf("--version: %q", out)
	}
	_, out, _ = runCLI(t, "check", "--simulate", "dgx-h100", "--format", "json")
	if doc := decode(t, out); doc.GpuprobeVersion != "9.8.7-test" {
		t.Errorf("report gpuprobe_version %q", doc.GpuprobeVersion)
	}
	_, out, _ = runCLI(t, "snapshot", "--simulate", "dgx-h100")
	if !strings.Contains(out, `"gpuprobe_version": "9.8.7-test"`) {
		t.Errorf("snapshot lacks the version:\n%.300s", out)
	}
	_, srv := testServe(t, "dgx-h100", time.Hour)
	defer srv.Close()
	if _, body := get(t, srv.URL+"/metrics"); !strings.Contains(body, `gpuprobe_build_info{branch="ship",goarch=`) || !strings.Contains(body, `revision="feedface"`) || !strings.Contains(body, `version="9.8.7-test"`) {
		t.Errorf("build_info:\n%s", grepLines(body, "build_info"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
