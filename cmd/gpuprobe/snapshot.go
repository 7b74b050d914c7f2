package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"
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
		if err := writeFileAtomic(out, data); err != nil {
			return c.usageError("snapshot: %v", err)
		}
		return nil
	})
}

// writeFileAtomic writes beside the target and renames, so a reader never
// sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
