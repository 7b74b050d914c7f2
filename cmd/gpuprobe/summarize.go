package main

import (
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/fleet"
)

func init() { registrars = append(registrars, registerSummarize) }

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
		for _, f := range files {
			var r io.Reader = c.stdin
			if f != "-" {
				fh, err := os.Open(f)
				if err != nil {
					return c.usageError("summarize: %v", err)
				}
				defer fh.Close()
				r = fh
			}
			rs, ps, err := fleet.Read(r, f)
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
