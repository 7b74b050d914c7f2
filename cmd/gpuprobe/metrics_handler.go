package main

import (
	"net/http"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"go.uber.org/zap"

	"github.com/gpuprobe/gpuprobe/exporter"
)

// runtimeEvery is how often the go_* and process_* series are re-read for
// /metrics: Prometheus's default scrape interval, so a scrape a minute sees
// them move every time and a storm pays for them once.
const runtimeEvery = 15 * time.Second

// metricsHandler serves /metrics from the scrape cache: the node's series
// rendered once per collection, the runtime's on their own cadence.
func (c *cli) metricsHandler(d *exporter.Daemon) (http.Handler, *exporter.ScrapeCache) {
	node := prometheus.NewRegistry()
	node.MustRegister(d.Exporter, versioncollector.NewCollector("gpuprobe"))
	rt := prometheus.NewRegistry()
	rt.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cache := exporter.NewScrapeCache(node, rt, d.Exporter.Generation, runtimeEvery, zap.NewStdLog(c.log))
	return cache, cache
}

// tuneRuntime sets the daemon's GC target unless the admin set GOGC: the
// live heap is a few MiB, so collecting at 50% growth instead of 100% costs
// little CPU and keeps about a MiB of garbage out of the resident set.
func tuneRuntime(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
