package main

import (
	"net/http"
	"runtime"
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

// daemonProcs is how many CPUs the daemon's Go code runs on at once.
const daemonProcs = 2

// tuneRuntime sets the daemon's GC target and CPUs unless the admin set
// GOGC or GOMAXPROCS. The live heap is a few MiB, so collecting at 50%
// growth instead of 100% costs little CPU and keeps about a MiB of garbage
// out of the resident set. The daemon does a few milliseconds of work a
// cycle, but Go sizes its per-CPU caches, GC workers and threads by the
// node's CPUs: on a 16-CPU H200 VM it held 18 threads and 2.2 MiB more
// anonymous memory than with GOMAXPROCS=2 (tools/realgpu/captures/run5-h200), and
// GPU nodes have 100-200 CPUs. node_exporter runs on one by default
// (--runtime.gomaxprocs); two keep a scrape answered while a collection
// runs. NVML calls block in cgo, which holds a thread, not one of these.
func tuneRuntime(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	if getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) > daemonProcs {
		runtime.GOMAXPROCS(daemonProcs)
	}
}
