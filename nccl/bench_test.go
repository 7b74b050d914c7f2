package nccl

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gpuprobe/gpuprobe/nccl/gen"
)

var (
	benchOnce sync.Once
	benchLog  []byte
)

// benchInput is a 64 MiB synthetic log of a 512-rank, 64-node job,
// generated once per test binary.
func benchInput(b *testing.B) []byte {
	benchOnce.Do(func() {
		var buf bytes.Buffer
		buf.Grow(65 << 20)
		if _, err := gen.Write(&buf, gen.Options{Size: 64 << 20, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		benchLog = buf.Bytes()
	})
	return benchLog
}

// BenchmarkAnalyze measures the analyzer on a synthetic log and reports
// MB/s: "file" is the path `gpuprobe nccl analyze FILE` takes (parsers
// read their own blocks), "reader" the one for pipes and standard input.
// scripts/bench-nccl.sh compares a 1 GB file with grep.
func BenchmarkAnalyze(b *testing.B) {
	log := benchInput(b)
	path := filepath.Join(b.TempDir(), "bench.log")
	if err := os.WriteFile(path, log, 0o600); err != nil {
		b.Fatal(err)
	}
	check := func(v *Verdict, err error) {
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
