package benchout_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/benchout"
	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// Any input either parses into a Verify the verify checks judge without
// panicking, or is a *ParseError naming the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/real/*")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil && !strings.HasSuffix(p, ".source") {
			f.Add(data)
		}
	}
	f.Add([]byte("# nThread 1 nGpus 2\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] G\n  1073741824  268435456  float  sum  -1  1 2 3 4 1 2 3 x\n"))
	f.Add([]byte("Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n 0 1\n 0 1.0\n"))
	f.Add([]byte("{\"DCGM GPU Diagnostic\":{\"test_categories\":[{\"tests\":[{\"name\":\"x\",\"results\":[{\"gpu_ids\":1,\"status\":\"Fail\"}]}]}]}}"))
	checks, _ := check.VerifyChecks(nil, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := benchout.Parse("fuzz", bytes.NewReader(data))
		if err != nil {
			var pe *benchout.ParseError
			if !errors.As(err, &pe) || pe.File != "fuzz" {
				t.Fatalf("error %v is not a ParseError naming the file", err)
			}
			return
		}
		for _, r := range check.Run(context.Background(), &state.Node{Verify: v}, check.DefaultConfig(), checks) {
			if r.Status == check.Error && strings.HasPrefix(r.Summary, "internal error") {
				t.Fatalf("%s panicked on a parsed output: %s", r.ID, r.Summary)
			}
		}
	})
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "x.log: empty"},
		{"# nThread 1 nGpus 1\n  1024  256  float  sum  -1  1.0  2.0\n", "x.log:2: size-table row with 7 columns"},
		{"Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n 0 1\n 0 1.0\n", "x.log:4: matrix"},
		{"+---+\n| Diagnostic | Result |\n| a | b | c |\n", "x.log:3: dcgmi table row with 3 cells"},
		{"{\"DCGM GPU Diagnostic\": {\"x\": 1}}", "x.log:1: JSON without test_categories"},
		{"hello\n", "not an nccl-tests, nvbandwidth or dcgmi diag output"},
	} {
		_, err := benchout.Parse("x.log", strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	big := strings.NewReader(strings.Repeat("a", benchout.MaxInput+1))
	if _, err := benchout.Parse("big", big); err == nil || !strings.Contains(err.Error(), "big: over 64 MiB") {
		t.Errorf("oversized input: %v", err)
	}
}
