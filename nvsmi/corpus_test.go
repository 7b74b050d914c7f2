package nvsmi_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/nvsmi"
	"github.com/gpuprobe/gpuprobe/state"
)

// corpusCase labels one real capture in testdata/ (each names its source
// in its "# source:" header) and says what the real checks must conclude.
type corpusCase struct {
	file string
	// healthy is the label: no check may fail. Checks in want are the
	// only ones allowed to say anything but pass or skip.
	healthy bool
	// why is the label's evidence.
	why string
	// want is each non-pass, non-skip verdict, with the GPUs it names.
	want map[string]verdict
	// err: the capture must be refused with an error containing this.
	err string
	// gpus is how many GPUs the state must hold.
	gpus int
	// count: text gpu.count's summary must hold (a partial capture says
	// how many GPUs are not in it).
	count string
}

type verdict struct {
	status  check.Status
	devices []int
}

var all8 = []int{0, 1, 2, 3, 4, 5, 6, 7}

var corpus = []corpusCase{
	{file: "gpud_a10_535.129.03_nvidia-smi-q.txt", gpus: 1,
		why: "Remapped Rows: Uncorrectable Error 4, Pending Yes. A pending remap takes effect only after a GPU reset " +
			"(NVIDIA, A100/Ampere GPU memory error management: 'row-remapping ... requires a GPU reset'); gpud added this very capture " +
			"as the case that must alert (leptonai/gpud#80)",
		want: map[string]verdict{"gpu.row_remap": {check.Fail, []int{0}}}},
	{file: "gpud_h100_535.183.01_nvidia-smi-q_truncated-invalid.txt", gpus: 1, healthy: true,
		why: "gpud's 'invalid' fixture: Attached GPUs 8, one GPU block cut off after its clock event reasons (whose HW Slowdown rows " +
			"gpud's authors garbled to 'Invalid HW Slowdown'). Issue 26: a partial capture is judged on what it shows: GPU 0000:53:00.0 " +
			"at Gen5 x16 of Gen5 x16, persistence on, MIG off; its clock event reasons, temperature, power, ECC and processes are after " +
			"or inside the cut (unknown, skipped); the other 7 attached GPUs are not in the capture, neither missing nor passed. " +
			"Before issue 26 the capture was refused",
		count: "8 GPUs attached (the capture's Attached GPUs); 1 shown and judged, 7 not in the capture (not judged)"},
	{file: "gpud_h100x8_535.161.08_nvidia-smi-q.txt", gpus: 8, healthy: true, // no check may fail: one sample of a slowdown warns (issue 26)

		why: "every GPU reports HW Slowdown with HW Power Brake Slowdown active at P0, clocks held at 86 MHz: " +
			"nvml.h nvmlClocksEventReasonHwPowerBrakeSlowdown is 'External Power Brake Assertion is triggered (e.g. by the system power supply)'. " +
			"Issue 26: a capture is one sample, which cannot tell a momentary brake from a held one (DCGM warns on a violation, gpud asks for a rate): warn; the daemon fails it when it holds",
		want: map[string]verdict{"gpu.throttle": {check.Warn, all8}}},
	{file: "gpud_h100x8_535.183.01_nvidia-smi-q.txt", gpus: 8, healthy: true, // no check may fail: one sample of a slowdown warns (issue 26)

		why:  "GPU 2 (75:00.0) reports HW Power Brake Slowdown and SW Thermal Slowdown active (nvml.h: an external power brake assertion); one sample: warn (issue 26)",
		want: map[string]verdict{"gpu.throttle": {check.Warn, []int{2}}}},
	{file: "gpud_rtx4090x8_535.154.05_nvidia-smi-q.txt", gpus: 8, healthy: true,
		why:  "8 busy RTX 4090s, one python rank each, no slowdown, remapped rows 0; ECC is off (a configuration, which gpu.ecc warns about by policy)",
		want: map[string]verdict{"gpu.ecc": {check.Warn, all8}}},
	{file: "gpud_titanv_560.35.03_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why:  "idle TITAN V at PCIe Gen1 of Gen3 ('may be reduced when the GPU is not in use'), desktop processes only, ECC and remapping N/A on this board; persistence off (policy warn)",
		want: map[string]verdict{"gpu.persistence": {check.Warn, []int{0}}}},
	{file: "mleng_a100_xid63_nvidia-smi-q_ecc_remapped.txt", gpus: 1,
		why:   "after Xid 63 the A100 shows Remapped Rows Pending: Yes; the author (stas00/ml-engineering) and NVIDIA's memory error management guide: reset the GPU to apply the remap",
		want:  map[string]verdict{"gpu.row_remap": {check.Fail, []int{0}}},
		count: "8 GPUs attached (the capture's Attached GPUs); 1 shown and judged, 7 not in the capture (not judged)"},
	{file: "cut_gpud_h100x8_535.183.01_i2_nvidia-smi-q.txt", gpus: 1, healthy: true, // no check may fail: one sample of a slowdown warns (issue 26)

		why: "issue 26: GPU 2's block of gpud_h100x8_535.183.01 under its header, as nvidia-smi -q -i 2 prints it: the same power brake " +
			"and SW thermal slowdown the full capture shows on that GPU (0000:75:00.0), the other 7 not in the capture; one sample: warn",
		want:  map[string]verdict{"gpu.throttle": {check.Warn, []int{0}}},
		count: "8 GPUs attached (the capture's Attached GPUs); 1 shown and judged, 7 not in the capture (not judged)"},
	{file: "cut_gpud_a10_535.129.03_fragment_nvidia-smi-q.txt", gpus: 1,
		why: "issue 26: gpud_a10_535.129.03's GPU block alone, no header (a ticket's paste): the pending row remap is still found " +
			"on the GPU the block names (0000:07:00.0); how many GPUs the node has is not in it (gpu.count skips)",
		want:  map[string]verdict{"gpu.row_remap": {check.Fail, []int{0}}},
		count: "how many GPUs the node has is not in the capture"},
	{file: "cut_gpud_rtx4090_535.154.05_windows-processes_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why: "issue 26: one RTX 4090 block (idle, no slowdown) with a Windows capture's processes: paths keep their spaces, WDDM's " +
			"'Not available' memory is unknown; ECC off (policy warn); the processes cannot be tied to a job (gpu.processes skips)",
		want:  map[string]verdict{"gpu.ecc": {check.Warn, []int{0}}},
		count: "how many GPUs the node has is not in the capture"},
	{file: "telegraf_a10g_515.105.01_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why:  "idle A10G (GPU idle active, P8) at PCIe Gen1 x8 of Gen4 x16, ECC clean, no remaps; persistence off (policy warn)",
		want: map[string]verdict{"gpu.persistence": {check.Warn, []int{0}}}},
	{file: "telegraf_2xa5000_590.44.01_nvidia-smi-q-x.xml", gpus: 2, healthy: true,
		why:  "two idle RTX A5000 at PCIe Gen1 of Gen4 holding a llama-server's memory, no slowdown, no remaps; ECC off (policy warn)",
		want: map[string]verdict{"gpu.ecc": {check.Warn, []int{0, 1}}}},
	{file: "realgpu_h100_580.159.04_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why: "a real H100 lent to this project, idle after boot: persistence on, ECC on and clean, no remaps, Gen5 x16 of Gen5 x16; " +
			"gpuprobe's own NVML run on the same GPU found nothing (testdata/nvml/)"},
	{file: "realgpu_h100_580.159.04_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why: "the same idle H100 as XML"},
	{file: "realgpu_h100-busy_580.159.04_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why: "the same H100 100% busy under a training loop at ~620 of 700 W, 63 C, no clock event active: a busy healthy GPU raises nothing"},
	{file: "realgpu_h100-busy_580.159.04_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why: "the busy H100 as XML"},
	{file: "realgpu_h200_580.159.04_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why: "a real H200 lent to this project, idle: persistence on, ECC clean, no remaps, Gen5 x16; gpuprobe's NVML run on it found nothing"},
	{file: "realgpu_h200_580.159.04_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why: "the same idle H200 as XML"},
	{file: "realgpu_h200-busy_580.159.04_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why: "another real H200 100% busy under a bf16 matmul loop at its power cap (691 of 700 W, SW Power Cap active, 69 C), " +
			"one compute process: working at the cap is not a fault, and the capture cannot say whose job the process is (gpu.processes skips)"},
	{file: "realgpu_h200-busy_580.159.04_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why: "the busy H200 as XML"},
	// Captures added by the nvidia-smi corpus hunt (each names its source in
	// its header; TestCorpusFields holds what each must import to).
	{file: "telegraf_t4_515.105.01_nvidia-smi-q-x.xml", gpus: 1,
		why: "a Tesla T4 at P0 with GPU idle Not Active and a python compute process, its link at Gen3 x8 of Gen3 x16. nvml.h, " +
			"nvmlDeviceGetMaxPcieLinkWidth: 'the maximum PCIe link width possible with this device and system. I.E. for a device with a " +
			"16x PCIe bus width attached to a 8x PCIe system bus this function will report a max link width of 8': Max 16x says the " +
			"slot offers 16 lanes and the link trained at 8 while in use (the generation is at its maximum, so this is not idle power " +
			"saving). Persistence off (policy warn)",
		want: map[string]verdict{"gpu.pcie_link": {check.Fail, []int{0}}, "gpu.persistence": {check.Warn, []int{0}}}},
	{file: "telegraf_rtx3080-wddm_536.40_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why: "an idle GeForce RTX 3080 (WDDM) whose 1128 MiB are held by five graphics (type G) processes the capture lists " +
			"(Xorg, gnome-shell, Edge, Firefox, VS Code): desktop clients, not a leftover compute context. gpu.processes said '1128 MiB " +
			"in use with no compute process listed' and told the reader to kill leftovers; persistence mode is N/A under WDDM (unknown, skipped)"},
	{file: "telegraf_rtx3080_595.58.03_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why: "a GeForce RTX 3080 at work (P2, GPU idle Not Active, 65 % utilisation) with 9184 MiB used and no process listed: the processes " +
			"exist but nvidia-smi could not see them (another PID namespace), so whether any is a leftover is not in the capture " +
			"(gpu.processes says so and skips; it warned 'leftover' before). Persistence off (policy warn)",
		want: map[string]verdict{"gpu.persistence": {check.Warn, []int{0}}}},
	{file: "telegraf_quadrop400_418.43_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why:  "an idle Quadro P400 on driver 418.43: ECC, retired pages, power draw and limit N/A on this board (unknown, skipped); persistence off (policy warn)",
		want: map[string]verdict{"gpu.persistence": {check.Warn, []int{0}}}},
	{file: "telegraf_gtx1660ti_418.43_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why:  "an idle GTX 1660 Ti that driver 418.43 names 'Graphics Device' (it predates the board): ECC and retired pages N/A; persistence off (policy warn)",
		want: map[string]verdict{"gpu.persistence": {check.Warn, []int{0}}}},
	{file: "telegraf_rtx4000sffada_595.84_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why:  "an idle RTX 4000 SFF Ada, remapped rows 0, a python (C) and a Chromium (C+G) process beside two graphics clients (the capture cannot say whose job they are: skipped); ECC disabled (policy warn)",
		want: map[string]verdict{"gpu.ecc": {check.Warn, []int{0}}}},
	{file: "azhpc_a100x8_460.32.03_nvidia-smi-q.txt", gpus: 8, healthy: true,
		why:  "Azure ND A100 v4, 8 idle A100-SXM4-40GB on driver 460.32.03: ECC clean, remapped rows 0, Gen4 x16; persistence off (policy warn)",
		want: map[string]verdict{"gpu.persistence": {check.Warn, all8}}},
	{file: "azurehpc_8gpu_535.86.10_nvidia-smi-q-d-page-retirement.txt", gpus: 8, healthy: true,
		why: "nvidia-smi -q -d PAGE_RETIREMENT: each GPU block holds its Retired Pages alone (0, 0, No). The -d option is nvidia-smi's own " +
			"('Display only selected information', nvidia-smi(1)); the importer refused the capture as holding nothing it reads. The pages " +
			"are judged (none retired, none pending); everything -d left out is not in the capture"},
	{file: "mangohud_geforce_495.44_nvidia-smi-q-d-performance.txt", gpus: 1, healthy: true,
		why: "nvidia-smi -q -d PERFORMANCE posted in an issue: P0, Idle Active, no slowdown. The importer refused it as holding nothing it " +
			"reads; its clock event reasons are judged (none of the slowdowns), the rest is not in the capture"},
	{file: "gls_a100x4_555.42.02_nvidia-smi-q.txt", gpus: 4,
		why: "GPU 1 (9E:00.0): 353 correctable DRAM errors and a row remapped for them, Pending: Yes. nvidia-smi(1): Pending 'Indicates " +
			"whether or not a row is pending remapping. The GPU must be reset for the remapping to go into effect'; NVIDIA's A100 memory " +
			"error management guide likewise. GPU 2 (C2:00.0) shows Correctable Error 1 with Pending: No: a row already remapped at the " +
			"last reset, 639 of 640 banks left, which is the mechanism working (no finding); correctable ECC errors alone fail nothing",
		want: map[string]verdict{"gpu.row_remap": {check.Fail, []int{1}}}},
	{file: "gls_v100x8_550.127.05_nvidia-smi-q.txt", gpus: 8, healthy: true,
		why: "8 idle V100-SXM2-16GB: Volta retires pages and has no row remapper (N/A: unknown, skipped). GPU 4 (00:08.0) has one page " +
			"retired for repeated single-bit errors, Pending Page Blacklist No: already blacklisted, which is the mechanism working " +
			"(NVIDIA's dynamic page retirement guide; the GPU debug guidelines count toward replacement only far above one); ECC clean, Gen3 x16, persistence on"},
	{file: "gls_gtx680_470.256.02_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why: "a Kepler GTX 680 on R470: clock event reasons, PCIe link, power and the temperature thresholds are N/A, so those checks say " +
			"what the capture printed and where (they said 'not in the capture' for the reasons and the thresholds); persistence off (policy warn)",
		want: map[string]verdict{"gpu.persistence": {check.Warn, []int{0}}}},
	{file: "gls_gh200_550.127.05_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why: "an idle GH200 (C2C, ATS): one DRAM uncorrectable ECC error in its lifetime (aggregate 1, volatile 0) whose row was remapped " +
			"(Uncorrectable Error 1, Pending No, 3071 of 3072 banks): no error since the last reset and the remap applied, so nothing fails; " +
			"gpu.ecc now says the lifetime error instead of 'no uncorrectable ECC errors'. The GPU's own 88 of 700 W is judged (the module's 170 of 1000 W includes the Grace CPU)"},
	{file: "gls_rtx5090_570.124.06_nvidia-smi-q.txt", gpus: 1, healthy: true,
		why: "an idle RTX 5090 (P8, 0 % utilisation, only SW Power Cap set) at Gen1 x8 of Gen5 x16, which nvidia-smi documents for an idle GPU " +
			"('may be reduced when the GPU is not in use'); ECC N/A on this board"},
	{file: "telegraf_a100-mig_535.54.03_nvidia-smi-q-x_excerpt.xml", gpus: 1, healthy: true,
		why: "edited upstream: attached_gpus 4, one <gpu> kept: an idle A100 in MIG mode (27 C, 67 W, ECC clean; remapped rows N/A " +
			"as NVML answers under MIG); persistence off (policy warn). Issue 26: judged on the GPU shown, the other 3 not in the " +
			"capture; before issue 26 it was refused",
		want:  map[string]verdict{"gpu.persistence": {check.Warn, []int{0}}},
		count: "4 GPUs attached (the capture's Attached GPUs); 1 shown and judged, 3 not in the capture (not judged)"},
	{file: "netdata_a100-mig-vm_510.47.03_nvidia-smi-q-x.xml", gpus: 1, healthy: true,
		why: "hw3: a whole (attached_gpus 1) A100 in MIG mode in a VM, two instances idle, MIG current = pending (nothing to apply). " +
			"Under MIG NVML answers the volatile ECC counters, utilisation and remapped rows N/A (nvidia-smi prints N/A): whether an " +
			"uncorrectable error happened since the last reset is not in the capture, so gpu.ecc and gpu.row_remap skip, never pass; " +
			"the lifetime counts are 0. P0 with no clock event reason and 67 of 400 W: no slowdown; persistence off (policy warn)",
		want: map[string]verdict{"gpu.persistence": {check.Warn, []int{0}}}},
	// Handle failures (hw3): nvidia-smi prints "Unable to determine the
	// device handle for GPU <bus>: <NVML error>" in place of a GPU NVML
	// would not open. These captures were refused ("no Attached GPUs line
	// and no GPU block"), and a GPU off the bus was no finding at all.
	{file: "nvdocker1553_gpu0_nvidia-smi-a-i0_handle-unknown-error.txt", gpus: 1,
		why: "nvidia-smi -a -i 0 of a GPU that dropped off the bus (its owner): nvmlDeviceGetHandleByIndex failed with NVML_ERROR_UNKNOWN " +
			"for 0000:09:00.0. nvml.h: a GPU without a handle cannot be queried at all; the node must not take jobs on it. What else is " +
			"wrong (lost or another fault) the capture cannot say, so it is 'NVML cannot open the GPU', not 'fell off the bus'",
		want:  map[string]verdict{"gpu.count": {check.Fail, []int{0}}},
		count: "NVML cannot open the GPU: nvmlDeviceGetHandleByIndex: Unknown Error"},
	{file: "owod81_nvidia-smi_handle-gpu-is-lost.txt", gpus: 1,
		why: "the handle failure with NVML_ERROR_GPU_IS_LOST (nvml.h: 'The GPU has fallen off the bus or has otherwise become " +
			"inaccessible'); nvidia-smi adds 'Reboot the system to recover this GPU', as NVIDIA's Xid catalogue gives Xid 79 (fallen off " +
			"the bus) RESTART_BM",
		want:  map[string]verdict{"gpu.count": {check.Fail, []int{0}}},
		count: "GPU is lost (fell off the bus)"},
	// hw4: NVML's error strings in place of values (ALTERED capture: its
	// header says which lines and from what).
	{file: "altered_gpud_rtx4090_535.154.05_not-ready-reset-required_nvidia-smi-q.txt", gpus: 1,
		why: "a GeForce block altered to a faulted RTX 3090's values: 'Reset Required : Yes' (nvml.h " +
			"nvmlDeviceGetGpuRecoveryAction / NVML_ERROR_RESET_REQUIRED: 'The GPU requires a reset before it can be used again') fails " +
			"gpu.count; 'System is not in ready state' (NVML_ERROR_NOT_READY) and 'Unknown Error' stand where values were: unknown, " +
			"never zero and never a refusal (the capture was refused: 'GPU Current Temp: ... is not a number'); ECC off (policy warn)",
		want: map[string]verdict{"gpu.count": {check.Fail, []int{0}}, "gpu.ecc": {check.Warn, []int{0}}},
		// A fragment (partial): the reset is gpu.count's summary.
		count: "GPU 0 (0000:01:00.0): the driver requires a GPU reset before the GPU is used again"},
	{file: "akash209_rtx4090_nvidia-smi_handle-unknown-error-nospace.txt", gpus: 1,
		why: "R535's form without a space after 'GPU', upper-case hex; the same post's dmesg shows Xid 79 on 0000:a1:00 (kernel-logs/" +
			"akash209-...): NVML cannot open the GPU",
		want:  map[string]verdict{"gpu.count": {check.Fail, []int{0}}},
		count: "NVML cannot open the GPU"},
}

// TestCorpus judges every real capture with the real checks: healthy ones
// raise no false alarm, faulty ones fail the right check on the right GPUs,
// broken ones are refused with an error naming the file and line.
func TestCorpus(t *testing.T) {
	listed := map[string]bool{}
	for _, tc := range corpus {
		listed[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "# source: ") {
				t.Errorf("%s does not start with a '# source:' line", path)
			}
			n, err := nvsmi.Parse(path, data, time.Now())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), path+":") {
					t.Fatalf("error = %v, want one naming %s and a line, containing %q", err, path, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(n.NVML.GPUs); got != tc.gpus {
				t.Fatalf("%d GPUs, want %d", got, tc.gpus)
			}
			checks, err := check.Select(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			results := check.Run(context.Background(), n, check.DefaultConfig(), checks)
			for _, r := range results {
				if r.ID == "gpu.count" && tc.count != "" && !strings.Contains(r.Summary, tc.count) {
					t.Errorf("gpu.count: %q, want it to hold %q", r.Summary, tc.count)
				}
			}
			if (tc.count != "") != (n.Capture.Partial != "") {
				t.Errorf("capture.partial %q; the label says partial=%v", n.Capture.Partial, tc.count != "")
			}
			failed := false
			for _, r := range results {
				w, expected := tc.want[r.ID]
				switch {
				case expected:
					if r.Status != w.status || !sameInts(devices(r), w.devices) {
						t.Errorf("%s: %s on %v (%s), want %s on %v", r.ID, r.Status, devices(r), r.Summary, w.status, w.devices)
					}
				case r.Status != check.Pass && r.Status != check.Skip:
					t.Errorf("%s: unexpected %s: %s %v", r.ID, r.Status, r.Summary, r.Details)
				}
				failed = failed || r.Status == check.Fail
			}
			if failed == tc.healthy {
				t.Errorf("labelled healthy=%v (%s), but a check failed=%v", tc.healthy, tc.why, failed)
			}
			for id := range tc.want {
				if !hasResult(results, id) {
					t.Errorf("no result for %s", id)
				}
			}
		})
	}
	// Every capture in testdata/ is labelled.
	files, _ := filepath.Glob("testdata/*")
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue // testdata/fuzz: the fuzzer's findings
		}
		if base := filepath.Base(f); !listed[base] && !strings.HasPrefix(base, "synthetic_") {
			t.Errorf("%s has no label in the corpus table", base)
		}
	}
}

// What a capture cannot tell skips: the kernel log (gpu.xid), sysfs
// topology, Slurm, NVLinks. None of those checks may pass on a capture.
func TestCorpusSkipsWhatCapturesLack(t *testing.T) {
	n := parse(t, "gpud_h100x8_535.183.01_nvidia-smi-q.txt")
	checks, _ := check.Select(nil, nil)
	for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), checks) {
		lacking := r.ID == "gpu.xid" || r.ID == "fabric.sxid"
		for _, p := range []string{"nvlink.", "topo.", "job.", "slurm.", "pcie.", "nccl.", "iommu.", "gdr.", "ib."} {
			lacking = lacking || strings.HasPrefix(r.ID, p)
		}
		if lacking && r.Status != check.Skip {
			t.Errorf("%s: %s (%s), want skip: a capture does not hold what it judges", r.ID, r.Status, r.Summary)
		}
	}
}

func parse(t *testing.T, file string) *state.Node {
	t.Helper()
	path := filepath.Join("testdata", file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := nvsmi.Parse(path, data, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func devices(r check.Result) []int {
	var out []int
	for _, d := range r.Devices {
		out = append(out, d.Index)
	}
	sort.Ints(out)
	return out
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func hasResult(rs []check.Result, id string) bool {
	for _, r := range rs {
		if r.ID == id {
			return true
		}
	}
	return false
}
