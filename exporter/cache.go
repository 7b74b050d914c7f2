package exporter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// ScrapeCache serves /metrics from bytes rendered once, not once per scrape.
//
// Under a scrape storm (many Prometheus replicas, a federation fan-out, a
// curl loop) gathering and gzipping the whole exposition per request costs
// milliseconds of CPU each, and on a small node the scrapes queue behind one
// another. The data only changes when a collection cycle publishes (or an
// XID is counted), so the cache renders the node's series when the
// exporter's generation moves and the Go/process runtime series on their own
// cadence, keeps the text and its gzip side by side, and answers every other
// scrape with a copy of those bytes.
//
// Requests the cache does not hold a rendering for (protobuf, OpenMetrics,
// name[] filters) go to promhttp over the same registries: same series,
// gathered per request as before.
type ScrapeCache struct {
	node, runtime prometheus.Gatherer
	gen           func() uint64
	// RuntimeEvery is how stale the go_* and process_* series may be.
	RuntimeEvery time.Duration
	fallback     http.Handler
	now          func() time.Time

	mu         sync.Mutex // one renderer at a time; scrapes never wait on it once a rendering exists
	cur        atomic.Pointer[rendering]
	renders    atomic.Uint64
	lastAccept atomic.Pointer[negotiated]
	errorLog   promhttp.Logger
}

// rendering is one exposition in both encodings.
type rendering struct {
	gen            uint64
	runtimeAt      time.Time
	node, runtime  []family
	text, gzip     []byte
	textLen, gzLen []string
}

var (
	varyValues = []string{"Accept", "Accept-Encoding"}
	gzipValue  = []string{"gzip"}
)

// negotiated remembers the last Accept header's outcome: a fleet's
// Prometheus servers all send the same one, and negotiating it anew is a
// tenth of a cached scrape's cost.
type negotiated struct {
	accept string
	format expfmt.Format
}

func (c *ScrapeCache) negotiate(accept string) expfmt.Format {
	if last := c.lastAccept.Load(); last != nil && last.accept == accept {
		return last.format
	}
	h := http.Header{"Accept": []string{accept}}
	if accept == "" {
		h = http.Header{}
	}
	f := expfmt.NegotiateAccept(h, expfmt.DefaultAcceptedFormats()...)
	c.lastAccept.Store(&negotiated{accept, f})
	return f
}

// family is one metric family's text exposition, kept by name so the two
// halves merge into the sorted order promhttp writes.
type family struct {
	name string
	text []byte
}

// NewScrapeCache caches node (the exporter and build info, re-rendered when
// gen changes) and runtime (Go and process collectors, re-rendered at most
// every runtimeEvery).
func NewScrapeCache(node, runtime prometheus.Gatherer, gen func() uint64, runtimeEvery time.Duration, errorLog promhttp.Logger) *ScrapeCache {
	return &ScrapeCache{
		node: node, runtime: runtime, gen: gen, RuntimeEvery: runtimeEvery, now: time.Now, errorLog: errorLog,
		fallback: promhttp.HandlerFor(prometheus.Gatherers{node, runtime}, promhttp.HandlerOpts{ErrorLog: errorLog}),
	}
}

// Renders is how many times the cache has rendered (for tests and the benchmark).
func (c *ScrapeCache) Renders() uint64 { return c.renders.Load() }

func (c *ScrapeCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	format := c.negotiate(r.Header.Get("Accept"))
	if format.FormatType() != expfmt.TypeTextPlain || r.URL.RawQuery != "" {
		c.fallback.ServeHTTP(w, r)
		return
	}
	p, err := c.current()
	if err != nil {
		if c.errorLog != nil {
			c.errorLog.Println("error gathering metrics:", err)
		}
		c.fallback.ServeHTTP(w, r)
		return
	}
	// Header values are shared, read-only slices: a scrape allocates no
	// header strings.
	h := w.Header()
	h["Vary"] = varyValues
	h["Content-Type"] = []string{string(format)}
	body, n := p.text, p.textLen
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h["Content-Encoding"] = gzipValue
		body, n = p.gzip, p.gzLen
	}
	h["Content-Length"] = n
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

// current returns a fresh enough rendering, rendering at most once at a
// time: while one scrape renders, the others are served the previous bytes.
func (c *ScrapeCache) current() (*rendering, error) {
	p := c.cur.Load()
	if p != nil && !c.stale(p) {
		return p, nil
	}
	if p != nil && !c.mu.TryLock() {
		return p, nil
	}
	if p == nil {
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	if p = c.cur.Load(); p != nil && !c.stale(p) {
		return p, nil
	}
	next, err := c.render(p)
	if err != nil {
		return nil, err
	}
	c.cur.Store(next)
	return next, nil
}

func (c *ScrapeCache) stale(p *rendering) bool {
	return p.gen != c.gen() || c.now().Sub(p.runtimeAt) >= c.RuntimeEvery
}

// render re-gathers what has changed since prev and encodes both forms.
func (c *ScrapeCache) render(prev *rendering) (*rendering, error) {
	c.renders.Add(1)
	next := &rendering{}
	// Read the generation before gathering: a change during the gather
	// leaves the rendering marked old, and the next scrape renders again.
	next.gen = c.gen()
	var err error
	if prev != nil && prev.gen == next.gen {
		next.node = prev.node
	} else if next.node, err = encodeFamilies(c.node); err != nil {
		return nil, err
	}
	if now := c.now(); prev != nil && now.Sub(prev.runtimeAt) < c.RuntimeEvery {
		next.runtime, next.runtimeAt = prev.runtime, prev.runtimeAt
	} else {
		if next.runtime, err = encodeFamilies(c.runtime); err != nil {
			return nil, err
		}
		next.runtimeAt = now
	}
	next.text = merge(next.node, next.runtime)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(next.text)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	next.gzip = gz.Bytes()
	next.textLen, next.gzLen = []string{strconv.Itoa(len(next.text))}, []string{strconv.Itoa(len(next.gzip))}
	return next, nil
}

func encodeFamilies(g prometheus.Gatherer) ([]family, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	out := make([]family, 0, len(mfs))
	var b bytes.Buffer
	for _, mf := range mfs {
		b.Reset()
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return nil, fmt.Errorf("encode %s: %w", mf.GetName(), err)
		}
		out = append(out, family{mf.GetName(), bytes.Clone(b.Bytes())})
	}
	return out, nil
}

// merge writes both halves in name order, as one registry would.
func merge(a, b []family) []byte {
	all := make([]family, 0, len(a)+len(b))
	all = append(append(all, a...), b...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].name < all[j].name })
	n := 0
	for _, f := range all {
		n += len(f.text)
	}
	out := make([]byte, 0, n)
	for _, f := range all {
		out = append(out, f.text...)
	}
	return out
}

// acceptsGzip reads Accept-Encoding as RFC 9110 §12.5.3 defines it: gzip (or
// *) offered with a non-zero quality.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "x-gzip" && name != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		if q > 0 {
			return true
		}
	}
	return false
}
