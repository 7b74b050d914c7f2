// Command ncclbench analyses NCCL logs with the nccl package, judges the
// facts with check/ncclverdict and prints the verdict as compact JSON. It exists so that scripts/bench-nccl.sh measures
// the analyzer alone, without the CLI around it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/gpuprobe/gpuprobe/check/ncclverdict"
	"github.com/gpuprobe/gpuprobe/nccl"
)

func main() {
	args := os.Args[1:]
	nccl.LimitRuntime() // bounded RSS whatever the log (docs/nccl.md, Limits)
	// NCCLBENCH_CPUPROFILE=FILE profiles the whole run (docs/nccl.md, Performance).
	if path := os.Getenv("NCCLBENCH_CPUPROFILE"); path != "" {
		pf, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer pf.Close()
		defer pprof.StopCPUProfile()
	}
	if err := run(args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		exit = 2
	}
	pprof.StopCPUProfile()
	os.Exit(exit)
}

var exit int

func run(args []string) error {
	f, err := nccl.AnalyzeFiles(context.Background(), args...)
	if err != nil {
		return err
	}
	v := ncclverdict.Judge(f)
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return err
	}
	return w.Flush()
}
