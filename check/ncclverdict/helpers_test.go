package ncclverdict

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/nccl"
)

// The judge's rules are tested on what the real parser makes of real line
// shapes: facts written by hand would test a parser that does not exist.

func analyzeString(t *testing.T, log string) *Verdict {
	t.Helper()
	f, err := nccl.Analyze(context.Background(), nccl.Input{Name: "test.log", Reader: strings.NewReader(log)})
	if err != nil {
		t.Fatal(err)
	}
	return Judge(f)
}

func analyzeFile(t *testing.T, path string) *Verdict {
	t.Helper()
	f, err := nccl.AnalyzeFiles(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return Judge(f)
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
