package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/jsonbound"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/state"
)

// Every input a command reads goes through readlimit: under the run's
// deadline (a FIFO must not hang a health check) and a size limit (a 2 GB
// one-line config must not take the node's memory).

// stdinFlags are the flags whose documented value "-" means stdin (or, for
// snapshot -o, stdout). Everywhere else a lone "-" is an error: it would
// otherwise create a file named "-" or read stdin where nobody expects it.
var stdinFlags = map[string]bool{
	"check --from-snapshot":      true,
	"check --config":             true,
	"check --kernel-log":         true,
	"snapshot --output":          true,
	"snapshot --from-nvidia-smi": true,
}

// dashArgs works around the flag library turning a lone "-" into an empty
// string (so 'check --from-snapshot -' silently judged the live node): a
// value flag followed by "-" is rewritten as --flag=-, and "-" given to a
// flag that does not document it is refused with an error naming the flag.
func dashArgs(app *kingpin.Application, args []string) ([]string, error) {
	values := map[string]bool{} // long names of flags that take a value
	shorts := map[rune]string{}
	var walk func(cmds []*kingpin.CmdModel)
	addFlags := func(fs []*kingpin.FlagModel) {
		for _, f := range fs {
			if !f.IsBoolFlag() {
				values[f.Name] = true
				if f.Short != 0 {
					shorts[f.Short] = f.Name
				}
			}
		}
	}
	walk = func(cmds []*kingpin.CmdModel) {
		for _, c := range cmds {
			addFlags(c.Flags)
			walk(c.Commands)
		}
	}
	m := app.Model()
	addFlags(m.Flags)
	walk(m.Commands)

	command := ""
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, dash := "", false
		switch {
		case strings.HasPrefix(a, "--"):
			n, v, hasValue := strings.Cut(a[2:], "=")
			if hasValue {
				name, dash = n, v == "-"
			} else if values[n] && i+1 < len(args) && args[i+1] == "-" {
				name, dash = n, true
				a = "--" + n + "=-"
				i++
			}
		case len(a) == 2 && a[0] == '-' && shorts[rune(a[1])] != "" && i+1 < len(args) && args[i+1] == "-":
			name, dash = shorts[rune(a[1])], true
			a = "--" + name + "=-"
			i++
		case command == "" && !strings.HasPrefix(a, "-"):
			command = a
		}
		if dash && !stdinFlags[command+" --"+name] {
			return nil, fmt.Errorf("--%s: %w; give a file path", name, readlimit.ErrStdin)
		}
		out = append(out, a)
	}
	return out, nil
}

// configReadLimit bounds the time reading --config may take: a config is a
// few KiB. The read also ends with the run's --timeout, which --slurm-drain
// mode cuts, and arms its hard-deadline watchdog, before the config is read.
// A variable for tests.
var configReadLimit = 10 * time.Second

// loadConfig reads the YAML config (or stdin for "-" where allowed) over
// the defaults; "" is the defaults.
func (c *cli) loadConfig(ctx context.Context, path string, stdinOK bool) (*check.Config, error) {
	cfg := check.DefaultConfig()
	if path == "" {
		return cfg, nil
	}
	ctx, cancel := context.WithTimeout(ctx, configReadLimit)
	defer cancel()
	data, err := readlimit.Input(ctx, "--config", path, c.stdinIf(stdinOK), readlimit.Config)
	if err != nil {
		return nil, err
	}
	if err := check.ParseConfig(data, cfg); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return cfg, nil
}

func (c *cli) stdinIf(ok bool) io.Reader {
	if !ok {
		return nil
	}
	if c.stdin == nil {
		return strings.NewReader("")
	}
	return c.stdin
}

// Snapshot bounds: the size limit here, the shape (longest array, deepest
// nesting) in jsonbound.
const (
	snapshotLimit    = 8 << 20
	snapshotInputTag = "--from-snapshot"
)

// loadSnapshot reads and validates a saved node state ("-": stdin).
func (c *cli) loadSnapshot(ctx context.Context, path string) (*state.Node, error) {
	data, err := readlimit.Input(ctx, snapshotInputTag, path, c.stdinIf(true), snapshotLimit)
	if err != nil {
		return nil, err
	}
	return parseSnapshot(path, data)
}

// parseSnapshot decodes and validates a snapshot; name labels errors.
func parseSnapshot(name string, data []byte) (*state.Node, error) {
	if err := jsonbound.Check(data, jsonbound.MaxArray, jsonbound.MaxDepth); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	var n state.Node
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("snapshot %s: not a gpuprobe snapshot: %w", name, err)
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("snapshot %s: not a valid gpuprobe snapshot: %w", name, err)
	}
	return &n, nil
}
