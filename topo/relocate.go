package topo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// Relocate rewrites the roots the topology was read from wherever they
// appear (roots, evidence, notes), so a topology read from a temporary
// tree (the --simulate one) reads as if it came from /sys and /proc. The
// JSON round trip reaches every string field without a walker to keep in
// step with the types.
func Relocate(t *topostate.Topology, sysfs, procfs string) error {
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("relocating the topology: %w", err)
	}
	quote := func(s string) []byte { q, _ := json.Marshal(s); return q[1 : len(q)-1] }
	b = bytes.ReplaceAll(b, quote(t.SysfsRoot), quote(sysfs))
	b = bytes.ReplaceAll(b, quote(t.ProcfsRoot), quote(procfs))
	var out topostate.Topology
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("relocating the topology: %w", err)
	}
	*t = out
	return nil
}
