package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/internal/safefile"
	"github.com/gpuprobe/gpuprobe/nvsmi"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() { registrars = append(registrars, registerSnapshot) }

func registerSnapshot(c *cli) {
	var f collectFlags
	var out, fromSMI, fromNVLink string
	cmd := c.app.Command("snapshot", "Collect the node state and write it as JSON, for 'check --from-snapshot' or a bug report.")
	f.register(cmd, "30s")
	cmd.Flag("output", "Write to FILE instead of stdout.").Short('o').PlaceHolder("FILE").StringVar(&out)
	cmd.Flag("from-nvidia-smi", "Build the snapshot from a saved 'nvidia-smi -q' (text) or 'nvidia-smi -q -x' (XML) of any node instead of collecting ('-': stdin); what it cannot hold (kernel log, topology, Slurm, NVLinks) is marked not collected and those checks skip.").PlaceHolder("FILE").StringVar(&fromSMI)
	cmd.Flag("from-nvidia-smi-nvlink", "With --from-nvidia-smi: the same node's saved 'nvidia-smi nvlink -s' (link state), 'nvidia-smi nvlink -e' (error counters), or both one after the other, so the nvlink checks judge them.").PlaceHolder("FILE").StringVar(&fromNVLink)
	cmd.Action(func(*kingpin.ParseContext) error {
		if fromNVLink != "" && fromSMI == "" {
			return c.usageError("--from-nvidia-smi-nvlink adds to --from-nvidia-smi: give the same node's nvidia-smi -q too")
		}
		if fromNVLink == "-" && fromSMI == "-" {
			return c.usageError("--from-nvidia-smi and --from-nvidia-smi-nvlink cannot both be stdin")
		}
		if fromSMI != "" && (f.simulate != "" || f.simulateFile != "") {
			return c.usageError("--from-nvidia-smi and --simulate exclude each other")
		}
		o, err := f.options()
		if err != nil {
			return c.usageError("%v", err)
		}
		if out != "" && out != "-" {
			// Refuse a device, FIFO, socket or symlink before collecting.
			if err := safefile.CheckTarget(out); err != nil {
				return c.usageError("snapshot -o: %v", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
		defer cancel()
		var node *state.Node
		if fromSMI != "" {
			data, err := readlimit.Input(ctx, "--from-nvidia-smi", fromSMI, c.stdinIf(true), readlimit.NvidiaSMI)
			if err != nil {
				return c.usageError("snapshot: %v", err)
			}
			if node, err = nvsmi.Parse(fromSMI, data, time.Now()); err != nil {
				return c.usageError("snapshot --from-nvidia-smi: %v", err)
			}
			if fromNVLink != "" {
				raw, err := readlimit.Input(ctx, "--from-nvidia-smi-nvlink", fromNVLink, c.stdinIf(true), nvsmi.MaxNVLinkCapture)
				if err != nil {
					return c.usageError("snapshot: %v", err)
				}
				links, err := nvsmi.ParseNVLink(fromNVLink, raw)
				if err == nil {
					err = nvsmi.ApplyNVLink(node, fromNVLink, links)
				}
				if err != nil {
					return c.usageError("snapshot --from-nvidia-smi-nvlink: %v", err)
				}
			}
			node.GpuprobeVersion = o.Version
		} else {
			node = c.collectNode(ctx, &f, o)
		}
		data, err := json.MarshalIndent(node, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding snapshot: %w", err)
		}
		data = append(data, '\n')
		if out == "" || out == "-" {
			_, err = c.stdout.Write(data)
			return err
		}
		// 0600: a snapshot records the node's processes and Slurm environment.
		if err := safefile.WriteFile(out, data, 0o600); err != nil {
			return c.usageError("snapshot: %v", err)
		}
		return nil
	})
}
