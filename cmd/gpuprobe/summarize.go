package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/fleet"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
)

func init() { registrars = append(registrars, registerSummarize) }

// summarizeOpenTimeout bounds the open of a named input: a FIFO with no
// writer blocks open(2) forever (summarize hung on one, issue 32).
var summarizeOpenTimeout = 10 * time.Second

// openSummarizeInput opens path for reading within summarizeOpenTimeout;
// the open still blocked in its goroutine is left there (the command ends).
func openSummarizeInput(path string) (*os.File, error) {
	type res struct {
		f   *os.File
		err error
	}
	done := make(chan res, 1)
	go func() {
		f, err := os.Open(path)
		done <- res{f, err}
	}()
	t := time.NewTimer(summarizeOpenTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.f, r.err
	case <-t.C:
		go func() {
			if r := <-done; r.f != nil {
				r.f.Close()
			}
		}()
		what := "it did not open"
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			what = "a FIFO with no writer"
		}
		return nil, fmt.Errorf("%s: %s within %s", path, what, summarizeOpenTimeout)
	}
}

func registerSummarize(c *cli) {
	var files []string
	cmd := c.app.Command("summarize", "Read the JSON reports of many 'gpuprobe check --format json' runs (concatenated, with or without srun --label prefixes) and print one table of nodes × failing checks, worst first. Exit 1 if any node failed or a report is unreadable.")
	cmd.Arg("file", "Files to read; none or '-' reads standard input.").StringsVar(&files)
	cmd.Action(func(*kingpin.ParseContext) error {
		var rows []fleet.Row
		var problems []string
		if len(files) == 0 {
			files = []string{"-"}
		}
		budget := fleet.NewBudget()
		for _, f := range files {
			var r io.Reader = c.stdin
			if f != "-" {
				fh, err := openSummarizeInput(f)
				if err != nil {
					return c.usageError("summarize: %s", safetext.Clean(err.Error()))
				}
				defer fh.Close()
				r = fh
			}
			rs, ps, err := fleet.ReadBudget(r, f, budget)
			if err != nil {
				return c.usageError("summarize: %v", err)
			}
			rows, problems = append(rows, rs...), append(problems, ps...)
		}
		if len(rows) == 0 && len(problems) == 0 {
			return c.usageError("summarize: no reports in the input (want the output of 'gpuprobe check --format json')")
		}
		failed, err := fleet.Print(c.stdout, rows, problems)
		if err != nil {
			return fmt.Errorf("summarize: %w", err)
		}
		if failed {
			c.exit = exitFailed
		}
		return nil
	})
}
