package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshot --from-nvidia-smi turns a real capture into a snapshot that
// check --from-snapshot judges, and the report says it came from a capture.
func TestSnapshotFromNvidiaSMI(t *testing.T) {
	capture := filepath.Join("..", "..", "nvsmi", "testdata", "gpud_a10_535.129.03_nvidia-smi-q.txt")
	file := filepath.Join(t.TempDir(), "snap.json")
	if code, _, errs := runCLI(t, "snapshot", "--from-nvidia-smi", capture, "-o", file); code != 0 {
		t.Fatalf("snapshot exit %d: %s", code, errs)
	}
	code, out, errs := runCLI(t, "check", "--from-snapshot", file, "--format", "json")
	if code != 1 {
		t.Fatalf("the A10 with a pending row remap must fail: exit %d: %s %s", code, out, errs)
	}
	d := decode(t, out)
	if !strings.Contains(d.Capture, "nvidia-smi -q of "+capture) {
		t.Errorf("capture = %q", d.Capture)
	}
	for _, r := range d.Checks {
		if r.ID == "gpu.row_remap" && r.Status != "fail" || r.ID == "gpu.xid" && r.Status != "skip" {
			t.Errorf("%s: %s (%s)", r.ID, r.Status, r.Summary)
		}
	}

	// From stdin, text report: the banner names the capture.
	data, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	code, snap, errs := runStdin(t, string(data), "snapshot", "--from-nvidia-smi", "-")
	if code != 0 {
		t.Fatalf("stdin: exit %d: %s", code, errs)
	}
	_, text, _ := runStdin(t, snap, "check", "--from-snapshot", "-")
	if !strings.HasPrefix(text, "*** FROM A CAPTURE: nvidia-smi -q of - (Wed Sep 25 10:40:24 2024)") {
		t.Errorf("text report:\n%s", text)
	}
}

// A capture that is not one nvidia-smi run and a wrong invocation exit 2
// with a message naming the file and line; --from-nvidia-smi and
// --simulate exclude each other. A truncated capture is read as partial
// (issue 26): the GPUs it shows are judged, the rest are not in it.
func TestSnapshotFromNvidiaSMIRefuses(t *testing.T) {
	capture := filepath.Join("..", "..", "nvsmi", "testdata", "gpud_h100_535.183.01_nvidia-smi-q_truncated-invalid.txt")
	code, out, errs := runCLI(t, "snapshot", "--from-nvidia-smi", capture)
	if code != 0 || !strings.Contains(out, `"attached_gpus": 8`) || !strings.Contains(out, "the other 7 are not in the capture") {
		t.Errorf("truncated: exit %d, stdout %q, stderr %q; want a partial snapshot", code, out, errs)
	}
	twice := filepath.Join(t.TempDir(), "twice.txt")
	if err := os.WriteFile(twice, []byte("Attached GPUs : 1\nGPU 00000000:19:00.0\n    Product Name : a\nGPU 00000000:1a:00.0\n    Product Name : b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "snapshot", "--from-nvidia-smi", twice)
	if code != 2 || out != "" || !strings.Contains(errs, twice+":1: Attached GPUs is 1 but the capture holds 2 GPU blocks") {
		t.Errorf("more blocks than attached: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = runCLI(t, "snapshot", "--from-nvidia-smi", capture, "--simulate", "dgx-h100")
	if code != 2 || !strings.Contains(errs, "exclude each other") {
		t.Errorf("with --simulate: exit %d, %q", code, errs)
	}
	code, _, errs = runCLI(t, "snapshot", "--from-nvidia-smi", filepath.Join(t.TempDir(), "missing.txt"))
	if code != 2 || !strings.Contains(errs, "missing.txt") {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
}

// Real captures added by the nvidia-smi corpus hunt, end to end through the
// command line: a display-filtered capture (nvidia-smi -q -d
// PAGE_RETIREMENT, which the importer refused before) is judged on the
// section it holds and says the rest is not in it; a T4 whose link trained
// at x8 of x16 in use fails gpu.pcie_link and the run exits 1; a desktop
// GPU whose memory graphics processes hold is no leftover.
func TestSnapshotFromNvidiaSMICorpusHunt(t *testing.T) {
	cases := []struct {
		file string
		code int
		want map[string]string // check ID -> status
		text map[string]string // check ID -> a phrase its summary holds
	}{
		{"azurehpc_8gpu_535.86.10_nvidia-smi-q-d-page-retirement.txt", 0,
			map[string]string{"gpu.retired_pages": "pass", "gpu.ecc": "skip", "gpu.persistence": "skip", "gpu.pcie_link": "skip"},
			map[string]string{"gpu.ecc": "not in the capture", "gpu.retired_pages": "8 GPUs"}},
		{"mangohud_geforce_495.44_nvidia-smi-q-d-performance.txt", 0,
			map[string]string{"gpu.throttle": "pass", "gpu.temperature": "skip"},
			map[string]string{"gpu.temperature": "not in the capture"}},
		{"telegraf_t4_515.105.01_nvidia-smi-q-x.xml", 1,
			map[string]string{"gpu.pcie_link": "fail", "gpu.persistence": "warn", "gpu.retired_pages": "pass"},
			map[string]string{"gpu.pcie_link": "x8 of x16"}},
		{"telegraf_rtx3080-wddm_536.40_nvidia-smi-q-x.xml", 0,
			map[string]string{"gpu.processes": "pass", "gpu.persistence": "skip"},
			map[string]string{"gpu.processes": "graphics processes only"}},
		{"gls_gh200_550.127.05_nvidia-smi-q.txt", 0,
			map[string]string{"gpu.ecc": "pass", "gpu.row_remap": "pass"},
			map[string]string{"gpu.ecc": "uncorrectable errors in the GPU's lifetime (aggregate, before the last reset; not judged: ecc.aggregate_uncorrected_warn is 0): GPU 0: 1"}},
		{"gls_v100x8_550.127.05_nvidia-smi-q.txt", 0,
			map[string]string{"gpu.retired_pages": "pass", "gpu.row_remap": "skip"},
			map[string]string{"gpu.retired_pages": "pages retired and blacklisted, below the limit of 60: GPU 4: 1 (1 single-bit, 0 double-bit)"}},
		{"gls_gtx680_470.256.02_nvidia-smi-q.txt", 0,
			map[string]string{"gpu.throttle": "skip", "gpu.temperature": "skip", "gpu.pcie_link": "skip"},
			map[string]string{"gpu.throttle": `the capture prints "N/A" (line 69)`, "gpu.temperature": `the capture prints "N/A" (line 142)`}},
		{"gls_a100x4_555.42.02_nvidia-smi-q.txt", 1,
			map[string]string{"gpu.row_remap": "fail", "gpu.ecc": "pass"},
			map[string]string{"gpu.row_remap": "GPU 1 (0000:9e:00.0): row remap pending"}},
		{"telegraf_rtx3080_595.58.03_nvidia-smi-q-x.xml", 0,
			map[string]string{"gpu.processes": "skip"},
			map[string]string{"gpu.processes": "did not see its processes"}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			capture := filepath.Join("..", "..", "nvsmi", "testdata", tc.file)
			file := filepath.Join(t.TempDir(), "snap.json")
			if code, _, errs := runCLI(t, "snapshot", "--from-nvidia-smi", capture, "-o", file); code != 0 {
				t.Fatalf("snapshot exit %d: %s", code, errs)
			}
			code, out, errs := runCLI(t, "check", "--from-snapshot", file, "--format", "json")
			if code != tc.code {
				t.Fatalf("check exit %d, want %d: %s", code, tc.code, errs)
			}
			seen := 0
			for _, r := range decode(t, out).Checks {
				if st, ok := tc.want[r.ID]; ok {
					seen++
					if string(r.Status) != st {
						t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Summary, st)
					}
				}
				if p, ok := tc.text[r.ID]; ok && !strings.Contains(r.Summary, p) {
					t.Errorf("%s: %q, want it to hold %q", r.ID, r.Summary, p)
				}
			}
			if seen != len(tc.want) {
				t.Errorf("%d of %d expected checks reported", seen, len(tc.want))
			}
		})
	}
}
