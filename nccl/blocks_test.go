package nccl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// factsJSON renders an analyzer's facts without what differs between two
// ways of reading the same text (input names, byte counts).
func factsJSON(t *testing.T, a *Analyzer) string {
	t.Helper()
	f := a.Facts()
	f.Stats.Inputs, f.Stats.Bytes = nil, 0
	raw, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestBlockSizesMatchWholeFile reads every real log of the corpus (copies
// of /work/shared/nccl-logs and the issue 13 logs) with the file reader's
// block size anywhere from one byte to more than a line: a block shorter
// than a line once made a record's net name come from a reused buffer
// (the FuzzAnalyze seed 95aabd3f…, also read here). The facts must be the
// same as reading the whole file at once.
func TestBlockSizesMatchWholeFile(t *testing.T) {
	logs := corpus(t)
	more, _ := filepath.Glob("testdata/issue13/*.log")
	logs = append(logs, more...)
	type input struct {
		name string
		data []byte
	}
	var inputs []input
	for _, path := range logs {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{filepath.Base(path), raw})
	}
	// The fuzz seed, as `go test fuzz v1` stores it: one []byte literal.
	inputs = append(inputs, input{"fuzz-95aabd3f", []byte("NCCL INFO NET/0000000\n0000000000000000100000 NCCL INFO Using network \n0000")})
	prev := runtime.GOMAXPROCS(4) // several parsers, merging out of turn
	defer runtime.GOMAXPROCS(prev)
	m := DefaultMaxLineBytes
	for _, in := range inputs {
		whole := NewAnalyzer()
		if err := whole.readAtFile(context.Background(), whole.source(in.name), bytes.NewReader(in.data), int64(len(in.data)), int64(len(in.data))); err != nil {
			t.Fatal(err)
		}
		want := factsJSON(t, whole)
		for _, block := range []int{1, 2, 3, 7, 64, 100, 1000, len(in.data) - 1, m - 1, m, m + 1} {
			if block < 1 {
				continue
			}
			a := NewAnalyzer()
			if err := a.readAtFile(context.Background(), a.source(in.name), bytes.NewReader(in.data), int64(len(in.data)), int64(block)); err != nil {
				t.Fatal(err)
			}
			if got := factsJSON(t, a); got != want {
				t.Errorf("%s with %d-byte blocks: facts differ from the whole-file read:\n got %s\nwant %s", in.name, block, got, want)
			}
			// The same blocks cut out of the bytes in memory, as from a
			// mapped file.
			a = NewAnalyzer()
			if err := a.readMapped(context.Background(), a.source(in.name), &mapping{data: in.data}, int64(block)); err != nil {
				t.Fatal(err)
			}
			if got := factsJSON(t, a); got != want {
				t.Errorf("%s with %d-byte mapped blocks: facts differ from the whole-file read:\n got %s\nwant %s", in.name, block, got, want)
			}
		}
	}
}

// TestEmptyNetSelectionNamesNothing: "Using network " with its name cut off
// (the trailing blank trimmed) selects nothing. The parser classified the
// untrimmed message as a selection and the merger the trimmed one as
// nothing, and the selection took the net name of an earlier record,
// another process's: here a FastSocket process made the other one's empty
// line a decided FastSocket selection.
func TestEmptyNetSelectionNamesNothing(t *testing.T) {
	v := analyzeString(t, lines(
		"a:1:1 [0] NCCL INFO NET/FastSocket : Flow placement enabled.",
		"b:2:2 [0] NCCL INFO Using network ",
	))
	for _, p := range v.Processes {
		if p.Host == "b" && p.Net != "" {
			t.Errorf("process b: net %q (%+v) from a line that names no network", p.Net, p.NetEvidence)
		}
	}
}
