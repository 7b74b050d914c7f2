package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/safefile"
)

func init() { registrars = append(registrars, registerSnapshot) }

func registerSnapshot(c *cli) {
	var f collectFlags
	var out string
	cmd := c.app.Command("snapshot", "Collect the node state and write it as JSON, for 'check --from-snapshot' or a bug report.")
	f.register(cmd, "30s")
	cmd.Flag("output", "Write to FILE instead of stdout.").Short('o').PlaceHolder("FILE").StringVar(&out)
	cmd.Action(func(*kingpin.ParseContext) error {
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
		node := c.collectNode(ctx, &f, o)
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
