package main

import (
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
