package topo

import (
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// readNUMA lists the NUMA nodes with their CPUs. A machine without the
// directory (a kernel without NUMA) has one node in effect; that is
// reported as no nodes, and callers treat fewer than two alike.
func (fsr fsReader) readNUMA(sysfs string, notef func(string, ...any)) []topostate.NUMANode {
	dir := filepath.Join(sysfs, "devices", "system", "node")
	entries, err := fsr.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []topostate.NUMANode
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "node")
		if !ok {
			continue
		}
		id, err := strconv.Atoi(rest)
		if err != nil {
			continue
		}
		n := topostate.NUMANode{ID: id}
		file := filepath.Join(dir, e.Name(), "cpulist")
		if s, ok, err := fsr.readAttr(file); err != nil {
			notef("%v", err)
		} else if ok {
			cpus, err := cpulist.Parse(s)
			if err != nil {
				notef("%s: %v", file, err)
			} else {
				n.CPUList = cpulist.Format(cpus)
			}
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
