package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The simulated GPU on the PCI bus that NVML does not list (sim/nvml
// gpu-missing, gpu-excluded): the sysfs keeps it bound to nvidia; NVML's
// excluded list (nvmlGetExcludedDeviceCount) decides gpu.count.
func TestSimulatedGPUMissingFromNVML(t *testing.T) {
	for _, tc := range []struct {
		spec, expect, status, summary string
	}{
		{spec: "dgx-h100", expect: "8", status: "pass", summary: "8 GPUs reachable (expected 8)"},
		{spec: "dgx-h100:gpu-missing=7", expect: "7", status: "fail",
			summary: "the driver did not bring up GPU 0000:db:00.0: it is bound to nvidia, and NVML neither lists it nor has it excluded (nvmlGetExcludedDeviceCount: 0 excluded)"},
		{spec: "dgx-h100:gpu-excluded=7", expect: "7", status: "pass",
			summary: "7 GPUs reachable (expected 7); GPU(s) 0000:db:00.0 excluded by the driver (NVreg_ExcludedGpus), not judged"},
		// The node still has a GPU fewer than the platform's: the count
		// fails, and says why.
		{spec: "dgx-h100:gpu-excluded=7", status: "fail",
			summary: "NVML sees 7 GPUs, expected 8 (platform dgx-h100: DMI \"NVIDIA\" \"DGX H100\" with NVIDIA H100 80GB HBM3); the driver excludes 1 GPU(s) (NVreg_ExcludedGpus: 0000:db:00.0)"},
	} {
		t.Run(tc.spec+"/"+tc.expect, func(t *testing.T) {
			args := []string{"check", "--simulate", tc.spec, "--checks", "gpu.count", "--format", "json"}
			if tc.expect != "" {
				args = append(args, "--expect-gpus", tc.expect)
			}
			_, out, errs := runCLI(t, args...)
			d := decode(t, out)
			if len(d.Checks) != 1 {
				t.Fatalf("checks %+v\n%s", d.Checks, errs)
			}
			r := d.Checks[0]
			if string(r.Status) != tc.status || !strings.Contains(r.Summary, tc.summary) {
				t.Errorf("gpu.count %s %q\nwant %s %q", r.Status, r.Summary, tc.status, tc.summary)
			}
		})
	}
}

// A job step's device cgroup (sim/nvml cgroup-gpu): NVML lists the step's
// GPU alone, and the node's other seven are on the PCI bus, bound to nvidia.
// The simulation puts this process in the step's cgroup (job_<id>), as a
// real step does, so gpu.count warns that the cgroup may hide them: it does
// not fail them as GPUs the driver did not bring up.
func TestSimulatedCgroupGPUIsAJobsView(t *testing.T) {
	_, out, errs := runCLI(t, "check", "--simulate", "dgx-h100:cgroup-gpu=3", "--checks", "gpu.count", "--format", "json", "--expect-gpus", "1")
	d := decode(t, out)
	if len(d.Checks) != 1 {
		t.Fatalf("checks %+v\n%s", d.Checks, errs)
	}
	r := d.Checks[0]
	if r.Status != "warn" {
		t.Errorf("gpu.count %s %q\n%s", r.Status, r.Summary, strings.Join(r.Details, "\n"))
	}
	hidden := 0
	if strings.Contains(r.Summary, "did not bring up") {
		t.Errorf("a GPU the step's cgroup hides failed as not brought up: %q", r.Summary)
	}
	for _, l := range r.Details {
		if strings.Contains(l, "did not bring up") {
			t.Errorf("a GPU the step's cgroup hides failed as not brought up: %q", l)
		}
		if strings.Contains(l, "is bound to the nvidia driver but NVML does not list it") && strings.Contains(l, "'s cgroup (this process runs in it) may hide it from NVML") {
			hidden++
		}
	}
	if hidden != 7 {
		t.Errorf("%d GPU(s) said hidden by the step's cgroup, want the 7 it does not hold:\n%s\n%s", hidden, r.Summary, strings.Join(r.Details, "\n"))
	}
	// Still what the fault shows: NVML lists the step's GPU alone (GPU 3
	// of the node, renumbered 0), and the task runs in the job's cgroup.
	_, out, errs = runCLI(t, "snapshot", "--simulate", "dgx-h100:cgroup-gpu=3")
	var n struct {
		NVML struct {
			GPUs []struct {
				Index    int    `json:"index"`
				PCIBusID string `json:"pci_bus_id"`
			} `json:"gpus"`
		} `json:"nvml"`
		Slurm struct {
			Task struct {
				Cgroup      string `json:"cgroup"`
				CgroupJobID string `json:"cgroup_job_id"`
			} `json:"task"`
		} `json:"slurm"`
	}
	if err := json.Unmarshal([]byte(out), &n); err != nil {
		t.Fatalf("snapshot: %v\n%s", err, errs)
	}
	if g := n.NVML.GPUs; len(g) != 1 || g[0].Index != 0 || !strings.HasSuffix(strings.ToLower(g[0].PCIBusID), "5d:00.0") {
		t.Errorf("NVML GPUs %+v, want GPU 3 of the node (5d:00.0) alone, as index 0", g)
	}
	if n.Slurm.Task.CgroupJobID == "" || !strings.Contains(n.Slurm.Task.Cgroup, "/job_"+n.Slurm.Task.CgroupJobID+"/") {
		t.Errorf("task %+v: want it in a Slurm job's cgroup", n.Slurm.Task)
	}
}
