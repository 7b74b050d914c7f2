package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// fixedRuntime stands in for the Go/process collectors with a value the test
// controls, so cached and uncached expositions can be compared byte for byte.
type fixedRuntime struct{ v *float64 }

var dFixed = prometheus.NewDesc("go_fixed", "A runtime series the test moves.", nil, nil)

func (f fixedRuntime) Describe(ch chan<- *prometheus.Desc) { ch <- dFixed }
func (f fixedRuntime) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(dFixed, prometheus.GaugeValue, *f.v)
}

type cacheRig struct {
	d        *Daemon
	cache    *ScrapeCache
	direct   http.Handler // what /metrics served before the cache: promhttp over one registry
	runtimeV float64
	clock    time.Time
}

func newCacheRig(t testing.TB, spec string) *cacheRig {
	r := &cacheRig{d: daemonFor(t, spec, false), clock: time.Unix(1_800_000_000, 0)}
	node := prometheus.NewRegistry()
	node.MustRegister(r.d.Exporter)
	rt := prometheus.NewRegistry()
	rt.MustRegister(fixedRuntime{&r.runtimeV})
	all := prometheus.NewRegistry()
	all.MustRegister(r.d.Exporter, fixedRuntime{&r.runtimeV})
	r.direct = promhttp.HandlerFor(all, promhttp.HandlerOpts{})
	r.cache = NewScrapeCache(node, rt, r.d.Exporter.Generation, 15*time.Second, nil)
	r.cache.now = func() time.Time { return r.clock }
	return r
}

func scrape(t testing.TB, h http.Handler, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The cache serves exactly what promhttp over one registry serves, in both
// encodings, with the same Content-Type.
func TestScrapeCacheSameContentAsPromhttp(t *testing.T) {
	r := newCacheRig(t, "dgx-h100:row-remap-pending=3")
	r.d.Cycle(context.Background())
	r.d.Exporter.XIDs.Add(GPU{"2", "GPU-x", "0000:4c:00.0"}, 79, time.Unix(1_800_000_000, 0), 7)
	for _, accept := range []string{"", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		// Prometheus 3's default scrape_protocols without native histograms.
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"} {
		want := scrape(t, r.direct, "Accept", accept)
		got := scrape(t, r.cache, "Accept", accept)
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("Accept %q: cached body differs from promhttp's:\n--- cached\n%.2000s\n--- promhttp\n%.2000s", accept, got.Body, want.Body)
		}
		if got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("Accept %q: Content-Type %q, promhttp says %q", accept, got.Header().Get("Content-Type"), want.Header().Get("Content-Type"))
		}
		gz := scrape(t, r.cache, "Accept", accept, "Accept-Encoding", "gzip, deflate")
		if gz.Header().Get("Content-Encoding") != "gzip" || !bytes.Equal(gunzip(t, gz.Body.Bytes()), want.Body.Bytes()) {
			t.Errorf("gzip body differs or not gzip-encoded (%q)", gz.Header().Get("Content-Encoding"))
		}
	}
	if !strings.Contains(scrape(t, r.cache).Body.String(), "gpuprobe_gpu_row_remap_pending{gpu=\"3\"") {
		t.Error("the cached exposition lacks the node's series")
	}
}

// A storm of scrapes renders once per change: a cycle, an XID, the runtime
// cadence. Nothing else moves it.
func TestScrapeCacheRendersOncePerChange(t *testing.T) {
	r := newCacheRig(t, "dgx-h100")
	r.d.Cycle(context.Background())
	for i := 0; i < 1000; i++ {
		scrape(t, r.cache, "Accept-Encoding", "gzip")
	}
	if n := r.cache.Renders(); n != 1 {
		t.Fatalf("1000 scrapes of one cycle rendered %d times", n)
	}
	before := scrape(t, r.cache).Body.String()
	r.d.Cycle(context.Background())
	after := scrape(t, r.cache).Body.String()
	if r.cache.Renders() != 2 || before == after || !strings.Contains(after, "gpuprobe_collections_total 2") {
		t.Errorf("a new cycle was not picked up (renders %d)", r.cache.Renders())
	}
	r.d.Exporter.XIDs.Add(GPU{"2", "GPU-x", "0000:4c:00.0"}, 79, time.Now(), 9)
	if !strings.Contains(scrape(t, r.cache).Body.String(), `xid="79"`) {
		t.Error("an XID counted between cycles is not served")
	}
	// The runtime series are re-read on their own cadence only.
	r.runtimeV = 42
	if strings.Contains(scrape(t, r.cache).Body.String(), "go_fixed 42") {
		t.Error("runtime series re-read before their cadence")
	}
	r.clock = r.clock.Add(15 * time.Second)
	if !strings.Contains(scrape(t, r.cache).Body.String(), "go_fixed 42") {
		t.Error("runtime series not refreshed after their cadence")
	}
	if n := r.cache.Renders(); n != 4 {
		t.Errorf("renders %d, want 4 (cycle, cycle, XID, runtime)", n)
	}
}

// Formats the cache does not hold go to promhttp, which negotiates them as before.
func TestScrapeCacheFallsBackForOtherFormats(t *testing.T) {
	r := newCacheRig(t, "dgx-h100")
	r.d.Cycle(context.Background())
	pb := scrape(t, r.cache, "Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	if ct := pb.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/vnd.google.protobuf") {
		t.Errorf("protobuf scrape got %q", ct)
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics?name[]=gpuprobe_node_healthy", nil)
	rec := httptest.NewRecorder()
	r.cache.ServeHTTP(rec, req)
	if body := rec.Body.String(); !strings.Contains(body, "gpuprobe_node_healthy 1") || strings.Contains(body, "gpuprobe_gpu_info") {
		t.Errorf("name[] filter not honoured:\n%.300s", body)
	}
	if r.cache.Renders() != 0 {
		t.Errorf("fallback scrapes rendered the cache %d times", r.cache.Renders())
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "deflate, gzip;q=0.5": true, "gzip;q=0": false,
		"gzip; q=0.0, identity": false, "*": true, "br, zstd": false, "x-gzip": true,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v", h, got)
		}
	}
}

// Accept-Encoding comes from any client on the network.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0", "deflate, gzip;q=0.5", "*;q=0.1", ";;q=", "gzip;q=NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		got := acceptsGzip(h)
		if got && !strings.Contains(strings.ToLower(h), "gzip") && !strings.Contains(h, "*") {
			t.Errorf("acceptsGzip(%q) = true without gzip or * offered", h)
		}
	})
}
