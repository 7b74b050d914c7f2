// Command sxidgen writes check/sxidnvidia.go, NVIDIA's NVSwitch SXid table,
// from the pinned copy of NVIDIA/NVSentinel's sxiderrorsmapping.csv
// (third_party/nvsentinel-sxid/, its commit in SOURCE there):
//
//	go generate ./check
//
// (check/sxidcatalogue.go holds the go:generate line; it runs from check/.)
//
// A tool of its own rather than more flags on tools/xidgen: the two tables
// come from different NVIDIA sources (xidgen reads the Xid Catalog page,
// this a CSV of NVSentinel's) that are pinned and re-read on their own
// schedules, and a run of either regenerates only its own files. The
// parser, the mapping of the CSV's action names to check's SXAction*
// constants (an action it does not know stops the run) and the Go text
// itself live in internal/xidcatalog, so that check's test regenerates the
// file in memory and compares it byte for byte.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/gpuprobe/gpuprobe/internal/xidcatalog"
)

func main() {
	in := flag.String("in", "../"+xidcatalog.SXIDSource, "pinned SXid table (NVSentinel's sxiderrorsmapping.csv)")
	out := flag.String("o", "sxidnvidia.go", "Go file to write")
	flag.Parse()
	raw, err := os.ReadFile(*in)
	if err != nil {
		log.Fatal(err)
	}
	src, err := xidcatalog.SXIDGo(string(raw))
	if err != nil {
		log.Fatalf("%s: %v", *in, err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
