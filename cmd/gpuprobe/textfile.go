package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/exporter"
	"github.com/gpuprobe/gpuprobe/internal/safefile"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	var path string
	var conf *check.Config
	checkExtensions = append(checkExtensions, checkExtension{
		flags: func(cmd *kingpin.CmdClause) {
			path = "" // flags are registered anew for every run; forget the last run's value
			cmd.Flag("textfile", "Also write the metrics to FILE for node_exporter's textfile collector (atomically: temp file + rename; FILE must be a regular file or missing, never a symlink or device).").PlaceHolder("FILE").StringVar(&path)
		},
		configure: func(f *checkFlags, cfg *check.Config, _ *collect.Options) error {
			conf = cfg
			if path == "" {
				return nil
			}
			// The textfile carries gpuprobe_node_healthy, which a subset of
			// the checks cannot decide: with --checks gpu.ecc it said 1
			// while an NVLink was down.
			// Skipping the job checks is no subset: the textfile holds only
			// node checks (and --slurm-drain skips them).
			if len(f.checks)+len(withoutJob(f.skip))+len(cfg.Checks)+len(withoutJob(cfg.Skip)) > 0 {
				return fmt.Errorf("--textfile: the metrics say whether the node is healthy, which a subset of the checks (--checks, --skip or the config's checks/skip) cannot decide; write the textfile from a run of every check")
			}
			// Refuse a device, FIFO, socket or symlink before the run, not after.
			if err := safefile.CheckTarget(path); err != nil {
				return fmt.Errorf("--textfile: %w", err)
			}
			return nil
		},
		after: func(c *cli, n *state.Node, doc *report.Document) (int, error) {
			if path == "" {
				return 0, nil
			}
			// node_exporter describes the node: job checks belong to the job's own report.
			nodeDoc := *doc
			nodeDoc.Checks = nil
			for _, r := range doc.Checks {
				if scopeOf(r.ID) == check.NodeScope {
					nodeDoc.Checks = append(nodeDoc.Checks, r)
				}
			}
			s := &exporter.Snapshot{Node: n, Doc: &nodeDoc, At: time.Now(), Duration: time.Duration(doc.ElapsedSeconds * float64(time.Second)), Success: true, Config: conf}
			if err := exporter.WriteTextfile(path, s, false); err != nil {
				return exitUsage, c.usageError("%v", err)
			}
			return 0, nil
		},
	})
}

func scopeOf(id string) check.Scope {
	for _, c := range check.All() {
		if c.ID == id {
			return c.Scope
		}
	}
	return check.NodeScope
}

// withoutJob drops the job-scope groups ("job", "container") from a skip list.
func withoutJob(skip []string) []string {
	groups := check.JobScopeGroups()
	var out []string
	for _, s := range skip {
		if !slices.Contains(groups, s) {
			out = append(out, s)
		}
	}
	return out
}
