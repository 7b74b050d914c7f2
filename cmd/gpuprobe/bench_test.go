package main

import (
	"context"
	simnode "github.com/gpuprobe/gpuprobe/sim/node"
	"io"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/report"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// BenchmarkCheckSimulatedDGXH100 is a full 'check': collect every source of
// a simulated DGX H100 through the real collectors, judge, render JSON. The
// sub-benchmarks differ only in the checks selected, so their ratio is the
// cost of judging.
func BenchmarkCheckSimulatedDGXH100(b *testing.B) {
	spec, err := simulate.Parse("dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	src, err := simnode.Sources(spec)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		patterns []string
	}{
		{"foundation", []string{"gpu.driver", "gpu.count", "gpu.ecc", "gpu.row_remap"}},
		{"hardware", []string{"gpu", "nvlink", "fabric"}},
		{"all", nil},
	} {
		checks, err := check.Select(tc.patterns, nil)
		if err != nil {
			b.Fatal(err)
		}
		cfg := check.DefaultConfig()
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				n := collect.Node(ctx, collect.Options{Sources: src, CallTimeout: 10 * time.Second})
				rs := check.Run(ctx, n, cfg, checks)
				if err := report.New(n, rs, false, time.Since(start)).WriteJSON(io.Discard); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
		})
	}
}
