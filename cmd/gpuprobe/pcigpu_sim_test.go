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
// real step does, so gpu.count passes and says the seven were not judged:
// neither failed as GPUs the driver did not bring up, nor a warning on every
// srun of a step. Without --expect-gpus the DGX's 8 is not judged either.
func TestSimulatedCgroupGPUIsAJobsView(t *testing.T) {
	for _, expect := range []string{"1", ""} {
		args := []string{"check", "--simulate", "dgx-h100:cgroup-gpu=3", "--checks", "gpu.count", "--format", "json"}
		if expect != "" {
			args = append(args, "--expect-gpus", expect)
		}
		_, out, errs := runCLI(t, args...)
		d := decode(t, out)
		if len(d.Checks) != 1 {
			t.Fatalf("checks %+v\n%s", d.Checks, errs)
		}
		r := d.Checks[0]
		if r.Status != "pass" || len(r.Details) != 0 {
			t.Errorf("expect %q: gpu.count %s %q\n%s", expect, r.Status, r.Summary, strings.Join(r.Details, "\n"))
		}
		want := "7 more GPU(s) on the bus bound to nvidia and not listed by NVML (0000:19:00.0, 0000:3b:00.0, 0000:4c:00.0, 0000:9b:00.0, 0000:bb:00.0, 0000:cb:00.0, 0000:db:00.0): not judged, Slurm job 4242's cgroup (this process runs in it) may hide the node's other GPUs from NVML"
		if !strings.Contains(r.Summary, want) || strings.Contains(r.Summary, "did not bring up") {
			t.Errorf("expect %q: gpu.count summary %q\nwant it to hold %q", expect, r.Summary, want)
		}
		if expect == "" && !strings.Contains(r.Summary, "the node's 8 not judged: Slurm job 4242's cgroup") {
			t.Errorf("the DGX's count judged in a step: %q", r.Summary)
		}
	}
	// Still what the fault shows: NVML lists the step's GPU alone (GPU 3
	// of the node, renumbered 0), and the task runs in the job's cgroup.
	_, out, errs := runCLI(t, "snapshot", "--simulate", "dgx-h100:cgroup-gpu=3")
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
