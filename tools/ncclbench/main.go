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

	"github.com/gpuprobe/gpuprobe/check/ncclverdict"
	"github.com/gpuprobe/gpuprobe/nccl"
)

func main() {
	f, err := nccl.AnalyzeFiles(context.Background(), os.Args[1:]...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	v := ncclverdict.Judge(f)
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
