package nvml

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// A job step under Slurm's ConstrainDevices: its device cgroup lets only the
// allocated /dev/nvidiaN through, and NVML enumerates those GPUs alone,
// renumbered from 0 (their minor numbers, UUIDs and bus IDs stay the node's).
// "cgroup-gpu=3,cgroup-gpu=4" is such a step holding GPUs 3 and 4;
// "cgroup-gpu=none" one holding none. The other faults name GPUs by the
// node's indexes, so this one is applied after them. gpuprobe runs in the
// step's cgroup (job_4242, simnode.Sources' StepCgroup), as it does inside
// a real step, so the GPUs the cgroup hides are not taken for GPUs the
// driver failed to bring up.
const CgroupFault = "cgroup-gpu"

func init() {
	register(CgroupFault, "GPU|none", "a device cgroup (Slurm ConstrainDevices) lets only this GPU through (repeat for more): NVML enumerates the GPUs it allows, renumbered from 0; gpuprobe runs in the job step's cgroup",
		func(*System, simulate.Fault) error { return nil })
}

// constrain keeps the GPUs the spec's cgroup-gpu faults allow, in NVML
// order, and renumbers them; without such a fault it does nothing.
func constrain(s *System) error {
	fs := s.Spec.Has(CgroupFault)
	if len(fs) == 0 {
		return nil
	}
	keep := map[int]bool{}
	for _, f := range fs {
		if f.Value == "none" {
			continue
		}
		i, err := strconv.Atoi(f.Value)
		if err != nil || i < 0 || i >= len(s.Devices) {
			return fmt.Errorf("fault %s=%s: want a GPU index 0..%d or none", f.Name, f.Value, len(s.Devices)-1)
		}
		keep[i] = true
	}
	idx := make([]int, 0, len(keep))
	for i := range keep {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var devs []*server.Device
	for n, i := range idx {
		d := s.Devices[i]
		d.Index = n
		devs = append(devs, d)
	}
	s.Devices = devs
	s.Server.Devices = s.Server.Devices[:0:0]
	for _, d := range devs {
		s.Server.Devices = append(s.Server.Devices, d)
	}
	return nil
}
