package topo

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// maxCPUs bounds the CPUs read: the largest machines Linux runs on have
// 8192 (NR_CPUS); a tree with more is not a machine.
const maxCPUs = 8192

// readCores groups the CPUs of /sys/devices/system/cpu/cpuN/topology into
// physical cores (physical_package_id, core_id) and orders them as Slurm's
// logical core numbers count (gres.conf(5), Cores=): by package, then by
// their lowest CPU, which is hwloc's order of cores within a package. A CPU
// without topology files (offline, or a tree without them) is left out.
func (fsr fsReader) readCores(sysfs string, notef func(string, ...any)) []topostate.Core {
	dir := filepath.Join(sysfs, "devices", "system", "cpu")
	entries, err := fsr.ReadDir(dir)
	if err != nil {
		return nil
	}
	type key struct{ pkg, core int }
	byCore := map[key][]int{}
	n := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "cpu")
		if !ok {
			continue
		}
		cpu, err := strconv.Atoi(rest)
		if err != nil || cpu < 0 {
			continue
		}
		if n++; n > maxCPUs {
			notef("%s: more than %d CPUs; cores not read", dir, maxCPUs)
			return nil
		}
		topo := filepath.Join(dir, e.Name(), "topology")
		pkg, ok1 := fsr.readInt(filepath.Join(topo, "physical_package_id"), notef)
		core, ok2 := fsr.readInt(filepath.Join(topo, "core_id"), notef)
		if !ok1 || !ok2 {
			continue
		}
		k := key{pkg, core}
		byCore[k] = append(byCore[k], cpu)
	}
	type found struct {
		core   topostate.Core
		lowest int
	}
	cores := make([]found, 0, len(byCore))
	for k, cpus := range byCore {
		sort.Ints(cpus)
		cores = append(cores, found{topostate.Core{Package: k.pkg, CoreID: k.core, CPUs: cpulist.Format(cpus)}, cpus[0]})
	}
	sort.Slice(cores, func(a, b int) bool {
		if cores[a].core.Package != cores[b].core.Package {
			return cores[a].core.Package < cores[b].core.Package
		}
		return cores[a].lowest < cores[b].lowest
	})
	out := make([]topostate.Core, len(cores))
	for i, c := range cores {
		out[i] = c.core
	}
	return out
}

// readInt reads a sysfs attribute holding one integer.
func (fsr fsReader) readInt(file string, notef func(string, ...any)) (int, bool) {
	s, ok, err := fsr.readAttr(file)
	if err != nil {
		notef("%v", err)
		return 0, false
	}
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		notef("%s: %q is not a number", file, s)
		return 0, false
	}
	return v, true
}
