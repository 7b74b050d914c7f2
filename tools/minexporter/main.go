// Command minexporter is the smallest Prometheus exporter client_golang
// makes: promhttp's default handler (Go runtime and process metrics) and
// nothing else. It is the floor the daemon's memory is compared with
// (docs/metrics.md): built from this module, it links the same
// client_golang as gpuprobe, so the difference is gpuprobe's own.
//
//	go build -o /tmp/minexporter ./tools/minexporter
//	/tmp/minexporter -listen 127.0.0.1:19600 &
//	for i in $(seq 300); do curl -s -o /dev/null -H 'Accept-Encoding: gzip' http://127.0.0.1:19600/metrics; done
//	grep -E '^(Rss|Anonymous)' /proc/$!/smaps_rollup
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:19600", "address to serve /metrics on")
	flag.Parse()
	http.Handle("/metrics", promhttp.Handler())
	log.Fatal(http.ListenAndServe(*listen, nil))
}
