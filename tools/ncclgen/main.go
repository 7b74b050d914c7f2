// Command ncclgen writes a synthetic NCCL_DEBUG=INFO log of a multi-node
// job, for benchmarking `gpuprobe nccl analyze`:
//
//	go run ./tools/ncclgen -size 1GB -o /tmp/nccl-1g.log
//	go run ./tools/ncclgen -mix init -size 400MB -o /tmp/nccl-init.log
//	go run ./tools/ncclgen -mix real -size 400MB -o /tmp/nccl-real.log
//
// The real mix replicates the logs of -corpus (by default the project's
// copy of the shared corpus of real logs, nccl/testdata/logs) with their
// envelopes renamed (see sim/nccllog.WriteReal) and prints its line mix on
// stderr.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	gen "github.com/gpuprobe/gpuprobe/sim/nccllog"
)

func main() {
	var o gen.Options
	size := flag.String("size", "100MB", "approximate size of the log (B, KB, MB, GB; powers of 1024)")
	out := flag.String("o", "-", "output file, - for stdout")
	flag.IntVar(&o.Ranks, "ranks", 512, "ranks in the job")
	flag.IntVar(&o.Hosts, "hosts", 64, "nodes in the job")
	flag.Uint64Var(&o.Seed, "seed", 1, "random seed: the same seed writes the same log")
	flag.StringVar(&o.Prefix, "prefix", "srun", "launcher prefix on every line: srun, mpi or none")
	flag.StringVar(&o.Transport, "transport", "gdrdma", "inter-node transport the log shows: gdrdma, ib, socket or ofi")
	flag.StringVar(&o.Mix, "mix", "train", "shape of the log: train (mostly per-operation opCount lines), init (mostly distinct connection lines) or real (real logs replicated)")
	corpus := flag.String("corpus", "nccl/testdata/logs", "for -mix real: the folder whose *.log files are replicated")
	flag.Parse()
	n, err := parseSize(*size)
	if err != nil {
		fail(err)
	}
	o.Size = n
	var logs [][]byte
	if o.Mix == "real" {
		if logs, err = readCorpus(*corpus); err != nil {
			fail(err)
		}
	}
	var w io.Writer = os.Stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		w = f
	}
	if o.Mix == "real" {
		mix, err := gen.WriteReal(w, logs, o.Size, o.Seed)
		if err != nil {
			fail(err)
		}
		fmt.Fprintf(os.Stderr, "ncclgen: real mix from %d logs of %s: %s\n", len(logs), *corpus, mix)
		return
	}
	if _, err := gen.Write(w, o); err != nil {
		fail(err)
	}
}

// readCorpus reads the *.log files of dir in name order.
func readCorpus(dir string) ([][]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("ncclgen: no *.log files in %s", dir)
	}
	sort.Strings(names)
	logs := make([][]byte, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		logs = append(logs, b)
	}
	return logs, nil
}

// parseSize reads "1GB", "512MB", "64k", "1000".
func parseSize(s string) (int64, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"GB", 1 << 30}, {"G", 1 << 30}, {"MB", 1 << 20}, {"M", 1 << 20}, {"KB", 1 << 10}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(u, suf.s) {
			u, mult = strings.TrimSuffix(u, suf.s), suf.m
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(u), 64)
	// NaN, Inf or a size past 1 PiB would wrap in int64, and one under a
	// byte ("0.0001") would be 0 (fuzz audit).
	if err != nil || !(v*float64(mult) >= 1) || v*float64(mult) > 1<<50 {
		return 0, fmt.Errorf("ncclgen: bad size %q", s)
	}
	return int64(v * float64(mult)), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}
