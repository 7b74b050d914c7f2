package exporter

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuprobe/gpuprobe/check"
)

// Exporter is a prometheus.Collector over the latest snapshot. A scrape only
// reads memory: it never waits on a collection or the driver.
type Exporter struct {
	latest      atomic.Pointer[published]
	collections atomic.Uint64
	failures    atomic.Uint64
	perLink     bool
	XIDs        *XIDCounter
	updateMu    sync.Mutex // serialises Update's read-modify-write of latest
	gen         atomic.Uint64
}

// New returns an exporter; perLink adds the per-NVLink series.
func New(perLink bool) *Exporter {
	return &Exporter{perLink: perLink, XIDs: NewXIDCounter()}
}

// published is a snapshot with its series rendered once: every scrape of
// the same cycle sends the same metrics, so rendering per scrape would only
// burn CPU under a scrape storm.
type published struct {
	snap    *Snapshot
	metrics []prometheus.Metric
}

// Update publishes a cycle's outcome. A failed cycle keeps the previous
// node data but marks it stale, so dashboards never mistake old data for new.
func (e *Exporter) Update(s *Snapshot) {
	e.updateMu.Lock()
	defer e.updateMu.Unlock()
	e.collections.Add(1)
	if !s.Success {
		e.failures.Add(1)
		if prev := e.latest.Load(); prev != nil && prev.snap.Node != nil {
			stale := *s
			stale.Node, stale.Doc, stale.Stale = prev.snap.Node, prev.snap.Doc, true
			stale.At = prev.snap.At
			s = &stale
		}
	}
	e.latest.Store(&published{snap: s, metrics: render(s, e.perLink)})
	e.gen.Add(1)
}

// Generation changes whenever what Collect sends changes: a published cycle
// or a counted XID. The scrape cache re-renders only then.
func (e *Exporter) Generation() uint64 { return e.gen.Load() + e.XIDs.gen.Load() }

// render turns a snapshot into its series, for scrapes and the textfile alike.
func render(s *Snapshot, perLink bool) []prometheus.Metric {
	ch := make(chan prometheus.Metric, 256)
	var out []prometheus.Metric
	done := make(chan struct{})
	go func() {
		for m := range ch {
			out = append(out, m)
		}
		close(done)
	}()
	em := emitter{ch}
	em.gauge(dCollectSuccess, b2f(s.Success))
	em.gauge(dCollectDuration, s.Duration.Seconds())
	em.gauge(dCollectStale, b2f(s.Stale))
	if !s.At.IsZero() {
		em.gauge(dCollectTime, float64(s.At.UnixNano())/1e9)
	}
	renderState(em, s, perLink)
	close(ch)
	<-done
	return out
}

// Latest is the snapshot scrapes and /report read.
func (e *Exporter) Latest() *Snapshot {
	if p := e.latest.Load(); p != nil {
		return p.snap
	}
	return nil
}

// Collections is how many cycles have run (for tests of scrape independence).
func (e *Exporter) Collections() uint64 { return e.collections.Load() }

// Describe sends no descriptors: the series set depends on the hardware, so
// this is an "unchecked" collector.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect renders the latest snapshot.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	em := emitter{ch}
	em.counter(dCollections, float64(e.collections.Load()))
	em.counter(dCollectFailures, float64(e.failures.Load()))
	p := e.latest.Load()
	var cfg *check.Config
	if p != nil && p.snap != nil {
		cfg = p.snap.Config
	}
	e.XIDs.collect(em, cfg)
	if p == nil {
		em.gauge(dCollectSuccess, 0)
		return
	}
	for _, m := range p.metrics {
		ch <- m
	}
}

// renderState writes the node and verdict series of a snapshot; the textfile
// writer uses it too, so both outputs say the same.
func renderState(em emitter, s *Snapshot, perLink bool) {
	n := s.Node
	if n == nil {
		return
	}
	em.gauge(dSimulated, b2f(n.Simulated != ""))
	for _, src := range n.Sources {
		em.gauge(dSourceUp, b2f(src.OK), src.Name)
		em.gauge(dSourceDuration, src.DurationSeconds, src.Name)
	}
	if nv := n.NVML; nv != nil {
		em.gauge(dNVMLUp, b2f(nv.Available))
		if nv.Available {
			em.gauge(dDriverInfo, 1, nv.DriverVersion, nv.CUDADriverVersion)
			em.gauge(dGPUCount, float64(len(nv.GPUs)))
		}
	}
	cfg := s.Config
	if cfg == nil {
		cfg = check.DefaultConfig()
	}
	emitGPUs(em, n, cfg, perLink)
	emitTopology(em, n)
	if s.Doc != nil {
		healthy := true
		for _, r := range s.Doc.Checks {
			em.gauge(dCheckStatus, statusValue(r.Status), r.ID)
			healthy = healthy && r.Status != check.Fail && r.Status != check.Error
		}
		// Stale data is the last good verdict, not today's: a node whose
		// collection fails or overruns cannot be judged, and a node that
		// cannot be judged is not healthy (as the exit code and the drain
		// say). Otherwise a wedged node kept reporting yesterday's 1 and
		// GpuprobeNodeUnhealthy stayed quiet.
		em.gauge(dNodeHealthy, b2f(healthy && !s.Stale))
		if d := s.Doc.Drain; d != nil {
			em.gauge(dDrainSuppressed, b2f(d.Breaker != nil && d.Breaker.Suppressed))
		}
	}
}
