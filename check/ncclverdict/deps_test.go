package ncclverdict

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJudgeImportsNoCollector keeps the judge pure: it reads facts from
// state, never the parser, the network or a process.
func TestJudgeImportsNoCollector(t *testing.T) {
	// The imports are read by the go command in a subprocess, which go
	// test's result cache does not see; stat-ing check's sources makes a
	// change there re-run this test (an import of net once passed from the
	// cache).
	files, _ := filepath.Glob("../*.go")
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/gpuprobe/gpuprobe/check").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/gpuprobe/gpuprobe/nccl", strings.HasPrefix(dep, "github.com/gpuprobe/gpuprobe/nccl/"),
			dep == "github.com/gpuprobe/gpuprobe/collect", dep == "net", strings.HasPrefix(dep, "net/"),
			strings.HasPrefix(dep, "github.com/NVIDIA/go-nvml"):
			t.Errorf("check depends on %s", dep)
		}
	}
}
