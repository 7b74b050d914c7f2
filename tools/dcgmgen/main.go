// Command dcgmgen writes check/dcgmreplay.go, DCGM's PCIe replay limit per
// lane and minute for each PCIe generation, from the pinned excerpt of
// NVIDIA/DCGM's DcgmHealthWatch.cpp (third_party/dcgm/, its commit and line
// ranges in SOURCE there):
//
//	go generate ./check
//
// (check/health.go holds the go:generate line; it runs from check/.)
//
// A tool of its own rather than a mode of tools/xidgen: its source is
// DCGM's C++, not NVIDIA's Xid tables. The parser, which stops on any row
// or line of a shape it does not know, and the Go text live in
// internal/dcgmreplay, so that check's test regenerates the file in memory
// and compares it byte for byte.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/gpuprobe/gpuprobe/internal/dcgmreplay"
)

func main() {
	in := flag.String("in", "../"+dcgmreplay.Source, "pinned excerpt of DcgmHealthWatch.cpp")
	source := flag.String("source", "../"+dcgmreplay.SourceNote, "the excerpt's SOURCE file (for its commit)")
	out := flag.String("o", "dcgmreplay.go", "Go file to write")
	flag.Parse()
	excerpt, err := os.ReadFile(*in)
	if err != nil {
		log.Fatal(err)
	}
	note, err := os.ReadFile(*source)
	if err != nil {
		log.Fatal(err)
	}
	src, err := dcgmreplay.Go(string(excerpt), string(note))
	if err != nil {
		log.Fatalf("%s: %v", *in, err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
