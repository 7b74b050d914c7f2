package topo

import (
	"context"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"os"
	"path/filepath"
	"testing"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	sim "github.com/gpuprobe/gpuprobe/sim/topo"
	"github.com/gpuprobe/gpuprobe/topo/fstree"
)

// writeTree materialises a tree and returns its sysfs and procfs roots.
func writeTree(t *testing.T, tr *fstree.Tree) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := tr.Write(dir); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "sys"), filepath.Join(dir, "proc")
}

// simTopology collects a simulated model, with NVML's view of its GPUs
// (18 NVSwitch links each on Hopper) as the collector would pass it.
func simTopology(t *testing.T, raw string, links int) *topostate.Topology {
	t.Helper()
	spec, err := simulate.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sim.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	sys, proc := writeTree(t, tr)
	var hints []GPUHint
	for i, id := range []string{"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0", "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0"} {
		hints = append(hints, GPUHint{Index: i, BusID: id, SwitchLinks: links})
	}
	topo, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc, GPUs: hints, NVLinkKnown: links > 0})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
