package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/check"
)

// The golden reports are written by the report itself (-update), so on their
// own they prove only that nothing changed. Here each golden's meaningful
// lines are stated from the simulated faults (sim/nvml/faults.go) and the
// checks' rules (docs/checks.md), and held against the golden files and a
// fresh rendering: a golden regenerated from a wrong report fails.

type statedReport struct {
	spec    string
	checks  []string
	verbose bool
	total   int               // checks in the report
	notPass map[string]string // check → status, for every check that did not pass
	lines   []string          // text lines that must appear, whole
}

const (
	gpu3Remap  = "GPU 3 (0000:5d:00.0): row remap pending"
	gpu2Link   = "GPU 2 (0000:4c:00.0): 17 of 18 NVLinks up (link 0 down)"
	remapFix   = "fix: drain the node and reset the GPU (nvidia-smi -r) to apply the pending remap"
	simHeader  = "gpuprobe check on gpu042 (simulated dgx-h100) — 8 GPUs, driver 550.54.15, CUDA 12.4 — 2026-11-22 06:00:00 UTC"
	pad        = "                                "
	persistOff = "persistence mode off: every NVML/CUDA client pays the driver's start-up cost"
)

// jobAndSlurmSkips are the checks that skip on a simulated node outside a
// job and outside Slurm, and those that need what the simulation lacks.
var jobAndSlurmSkips = map[string]string{
	"gpu.retired_pages":   "skip", // H100 remaps rows instead
	"job.visible_devices": "skip", "job.gpu_sharing": "skip", "job.numa_affinity": "skip", "job.cpus_per_gpu": "skip",
	"job.exclusive": "skip", "job.master_addr": "skip", "job.nccl_env": "skip", "job.cuda_compat": "skip", "job.gpu_memory": "skip",
	"nccl.transport": "skip", "slurm.gres": "skip", "slurm.topology": "skip",
	"container.shm": "skip", "container.memlock": "skip", "container.rdma_devices": "skip", "container.visible_devices": "skip", "container.driver_libs": "skip",
	"container.cuda_compat": "skip", "container.net_plugin": "skip",
}

func plus(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

var allFaults = statedReport{
	spec: "dgx-h100:row-remap-pending=3,persistence-off,nvlink-down=2", checks: []string{"all"}, total: 42,
	notPass: plus(jobAndSlurmSkips, "gpu.row_remap", "fail", "nvlink.state", "fail", "gpu.persistence", "warn"),
	lines: []string{
		"*** SIMULATED: dgx-h100:row-remap-pending=3,persistence-off,nvlink-down=2 (go-nvml mock; not real hardware) ***",
		simHeader,
		"  FAIL   gpu.row_remap          " + gpu3Remap,
		pad + remapFix,
		"  FAIL   nvlink.state           " + gpu2Link,
		"  WARN   gpu.persistence        GPUs 0,1,2,3,4,5,6,7: " + persistOff,
		pad + "- GPU 0 (0000:19:00.0): " + persistOff,
		pad + "- GPU 7 (0000:db:00.0): " + persistOff,
		pad + "fix: enable nvidia-persistenced (systemctl enable --now nvidia-persistenced)",
		"  PASS   gpu.count              8 GPUs reachable (expected 8, platform dgx-h100)",
		"  PASS   nvlink.errors          no NVLink errors over thresholds on 143 links (totals since the counters were last reset, from one sample); 1 down link(s) without counters not judged here (nvlink.state judges them)",
		"  PASS   topo.gpu_nic_affinity  each of 8 GPUs has a NIC within PXB",
		"FAIL: 2 fail, 1 warn, 19 pass, 20 skip in 0.01s [SIMULATED]",
	},
}

func statedReports() map[string]statedReport {
	verbose := allFaults
	verbose.verbose = true
	verbose.lines = append(append([]string{}, allFaults.lines...),
		"  SKIP   gpu.retired_pages      uses row remapping instead (see gpu.row_remap)",
		"  SKIP   slurm.gres             no slurm.conf at /etc/slurm/slurm.conf (not a Slurm node, or pass --slurm-conf)")
	folded := allFaults
	folded.lines = append(append([]string{}, allFaults.lines...),
		"  SKIP   20 skipped (-v lists them): not inside a job step (16), no slurm.conf at /etc/slurm/slurm.conf (2), uses row remapping instead (1), no NCCL log given (1)")
	return map[string]statedReport{
		"healthy": {spec: "dgx-h100", total: 13, notPass: map[string]string{"gpu.retired_pages": "skip"}, lines: []string{
			simHeader,
			"  PASS   gpu.count              8 GPUs reachable (expected 8, platform dgx-h100)",
			"  PASS   gpu.row_remap          no pending or failed row remaps on 8 GPUs",
			"  SKIP   1 skipped (-v lists them): uses row remapping instead (1)",
			"PASS: 12 pass, 1 skip in 0.01s [SIMULATED]",
		}},
		// gpu-lost=5: GPU 5 answers nothing, the other checks judge 7 GPUs;
		// ecc-uncorrectable answers 2 uncorrected errors; row-remap-failure
		// answers 512 uncorrectable rows remapped and a failure.
		"faults": {spec: "dgx-h100:row-remap-pending=3,gpu-lost=5,ecc-uncorrectable=1,row-remap-failure=6", total: 13,
			notPass: map[string]string{"gpu.retired_pages": "skip", "gpu.count": "fail", "gpu.ecc": "fail", "gpu.row_remap": "fail"},
			lines: []string{
				"  FAIL   gpu.count              GPU 5 (0000:bb:00.0): GPU is lost (fell off the bus)",
				"  FAIL   gpu.ecc                GPU 1 (0000:3b:00.0): 2 uncorrectable ECC errors since the last reset",
				"  FAIL   gpu.row_remap          " + gpu3Remap + "; GPU 6 (0000:cb:00.0): row remap failure (512 uncorrectable, 0 correctable rows remapped)",
				pad + remapFix + "; drain and reset the GPU (nvidia-smi -r); run NVIDIA's HW field diagnostics (the RMA process requires them) and contact the hardware vendor if they fail or the failure recurs",
				"  PASS   gpu.throttle           no hardware or thermal slowdown on 7 GPUs",
				"  PASS   gpu.processes          7 GPUs idle, no leftover processes",
				"FAIL: 3 fail, 9 pass, 1 skip in 0.01s [SIMULATED]",
			}},
		"all-healthy": {spec: "dgx-h100", checks: []string{"all"}, total: 42, notPass: jobAndSlurmSkips, lines: []string{
			"  PASS   nvlink.state           144 NVLinks up on 8 GPUs (platform dgx-h100: 18 each)",
			"  PASS   fabric.state           fabric registration completed on 8 GPUs",
			"  PASS   ib.ports               8 RDMA ports ACTIVE/LinkUp (8× 400 Gb/s InfiniBand), expected 8 (platform)",
			"  PASS   topo.gpu_nic_affinity  each of 8 GPUs has a NIC within PXB",
			"PASS: 22 pass, 20 skip in 0.01s [SIMULATED]",
		}},
		"all-faults":         folded,
		"all-faults-verbose": verbose,
	}
}

func TestGoldenReportsStated(t *testing.T) {
	for name, st := range statedReports() {
		t.Run(name, func(t *testing.T) {
			d := document(t, st.spec, st.checks...)
			var txt, js bytes.Buffer
			if err := d.WriteText(&txt, TextOptions{Verbose: st.verbose}); err != nil {
				t.Fatal(err)
			}
			if err := d.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			goldenTxt, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			goldenJSON, err := os.ReadFile(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			for what, b := range map[string][]byte{name + ".txt": goldenTxt, "fresh text": txt.Bytes()} {
				lines := strings.Split(string(b), "\n")
				for _, want := range st.lines {
					if n := count(lines, want); n != 1 {
						t.Errorf("%s: line %q appears %d times, want once", what, want, n)
					}
				}
			}
			for what, b := range map[string][]byte{name + ".json": goldenJSON, "fresh JSON": js.Bytes()} {
				var doc struct {
					Status string         `json:"status"`
					Checks []check.Result `json:"checks"`
				}
				if err := json.Unmarshal(b, &doc); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if len(doc.Checks) != st.total {
					t.Errorf("%s: %d checks, want %d", what, len(doc.Checks), st.total)
				}
				wantStatus := "pass"
				seen := map[string]bool{}
				for _, r := range doc.Checks {
					seen[r.ID] = true
					want, ok := st.notPass[r.ID]
					if !ok {
						want = "pass"
					}
					if string(r.Status) != want {
						t.Errorf("%s: %s is %s, want %s (%s)", what, r.ID, r.Status, want, r.Summary)
					}
					if want == "fail" {
						wantStatus = "fail"
					}
				}
				for id := range st.notPass {
					if !seen[id] {
						t.Errorf("%s: %s missing", what, id)
					}
				}
				if doc.Status != wantStatus {
					t.Errorf("%s: status %s, want %s", what, doc.Status, wantStatus)
				}
			}
		})
	}
}

func count(lines []string, want string) int {
	n := 0
	for _, l := range lines {
		if l == want {
			n++
		}
	}
	return n
}
