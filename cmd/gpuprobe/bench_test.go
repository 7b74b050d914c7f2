package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/simulate"
)

// BenchmarkCheckSimulatedDGXH100 is a full 'check': collect every GPU of a
// simulated DGX H100 through the real collector, judge, render JSON.
func BenchmarkCheckSimulatedDGXH100(b *testing.B) {
	spec, err := simulate.Parse("dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	checks, _ := check.Select(nil, nil)
	cfg := check.DefaultConfig()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n := collect.Node(ctx, collect.Options{Simulate: spec, CallTimeout: 10 * time.Second})
		rs := check.Run(ctx, n, cfg, checks)
		if err := report.New(n, rs, false, time.Since(start)).WriteJSON(io.Discard); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
