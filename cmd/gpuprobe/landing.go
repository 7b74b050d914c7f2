package main

import (
	"bytes"
	"net/http"
	"time"

	"github.com/prometheus/common/version"

	"github.com/gpuprobe/gpuprobe/exporter"
	"github.com/gpuprobe/gpuprobe/report"
)

// landingPage serves the node's latest report as HTML on "/": what a person
// opening the daemon's port in a browser wants to see (is this node healthy,
// what is wrong and what to do), rendered from memory like every other
// endpoint. Other paths are 404, not the landing page.
func landingPage(e *exporter.Exporter, metricsPath string) http.Handler {
	links := []report.Link{
		{Href: metricsPath, Text: "Metrics"},
		{Href: "/report", Text: "Latest report (JSON)"},
		{Href: "/healthz", Text: "Health"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		p := &report.Page{Version: version.Version, Links: links, Now: time.Now()}
		if s := e.Latest(); s != nil {
			p.Doc, p.Node, p.Stale = s.Doc, s.Node, s.Stale
		}
		var b bytes.Buffer
		if err := p.WriteHTML(&b); err != nil {
			http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		// No script, style or image from anywhere but the page itself.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		h.Set("X-Content-Type-Options", "nosniff")
		w.Write(b.Bytes())
	})
}
