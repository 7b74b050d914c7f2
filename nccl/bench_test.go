package nccl

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	gen "github.com/gpuprobe/gpuprobe/sim/nccllog"
)

var (
	benchMu   sync.Mutex
	benchLogs = map[string][]byte{}
)

// benchInput is a 64 MiB synthetic log of a 512-rank, 64-node job of the
// given shape (gen.Options.Mix), generated once per test binary.
func benchInput(b *testing.B, mix string) []byte {
	benchMu.Lock()
	defer benchMu.Unlock()
	if log, ok := benchLogs[mix]; ok {
		return log
	}
	var buf bytes.Buffer
	buf.Grow(65 << 20)
	if _, err := gen.Write(&buf, gen.Options{Size: 64 << 20, Seed: 1, Mix: mix}); err != nil {
		b.Fatal(err)
	}
	benchLogs[mix] = buf.Bytes()
	return buf.Bytes()
}

// BenchmarkAnalyze measures the analyzer on the two synthetic shapes and
// reports MB/s: "file" is the path `gpuprobe nccl analyze FILE` takes
// (parsers read their own blocks), "reader" the one for pipes and
// standard input. scripts/bench-nccl.sh compares whole files with grep.
func BenchmarkAnalyze(b *testing.B) {
	for _, mix := range []string{"train", "init"} {
		b.Run(mix, func(b *testing.B) { benchAnalyze(b, mix) })
	}
}

func benchAnalyze(b *testing.B, mix string) {
	log := benchInput(b, mix)
	path := filepath.Join(b.TempDir(), "bench.log")
	if err := os.WriteFile(path, log, 0o600); err != nil {
		b.Fatal(err)
	}
	check := func(v *Verdict, err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		if v.InterNode != InterGDRDMA {
			b.Fatalf("inter_node = %q on the synthetic log", v.InterNode)
		}
	}
	b.Run("file", func(b *testing.B) {
		b.SetBytes(int64(len(log)))
		b.ReportAllocs()
		for b.Loop() {
			check(judgeFiles(context.Background(), path))
		}
	})
	b.Run("reader", func(b *testing.B) {
		b.SetBytes(int64(len(log)))
		b.ReportAllocs()
		for b.Loop() {
			// Hide the reader's size so that it is read as a stream.
			check(judge(context.Background(), Input{Name: "bench", Reader: struct{ io.Reader }{bytes.NewReader(log)}}))
		}
	})
}

// BenchmarkAnalyzeReal is BenchmarkAnalyze on the "real" shape: the
// fixture logs (the shared corpus) replicated into 64 MiB with their
// envelopes renamed (gen.WriteReal), with the line mix of real logs.
func BenchmarkAnalyzeReal(b *testing.B) {
	log := benchRealInput(b)
	path := filepath.Join(b.TempDir(), "bench.log")
	if err := os.WriteFile(path, log, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := judgeFiles(context.Background(), path); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRealInput(b *testing.B) []byte {
	benchMu.Lock()
	defer benchMu.Unlock()
	if log, ok := benchLogs["real"]; ok {
		return log
	}
	names, err := filepath.Glob("testdata/logs/*.log")
	if err != nil || len(names) == 0 {
		b.Fatalf("no fixture logs: %v", err)
	}
	var logs [][]byte
	for _, n := range names {
		l, err := os.ReadFile(n)
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, l)
	}
	var buf bytes.Buffer
	buf.Grow(65 << 20)
	if _, err := gen.WriteReal(&buf, logs, 64<<20, 1); err != nil {
		b.Fatal(err)
	}
	benchLogs["real"] = buf.Bytes()
	return buf.Bytes()
}
