package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshot --from-nvidia-smi-nvlink adds the same node's saved nvidia-smi
// nvlink -s to its -q capture, and check --from-snapshot judges its links:
// a real 4x A100-SXM4 -q (gls_a100x4_555.42.02) with an -s printed in the
// real captures' form, GPU 1's links 3 and 5 <inactive>. Without the flag
// the nvlink checks skip as before; a capture of another node, or the flag
// alone, exits 2 naming the problem.
func TestSnapshotFromNvidiaSMINVLink(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join("..", "..", "nvsmi", "testdata", "gls_a100x4_555.42.02_nvidia-smi-q.txt")
	uuids := []string{"GPU-31515c3d-1414-7c2c-004a-f86a898946ac", "GPU-72d87681-01db-370e-567d-41afcf20fad0",
		"GPU-62989189-9e1e-ac75-4676-114f14998542", "GPU-011b2cfe-2b8e-1cb0-19e1-1b764e854dfc"}
	var b strings.Builder
	for g, u := range uuids {
		fmt.Fprintf(&b, "GPU %d: NVIDIA A100-SXM4-80GB (UUID: %s)\n", g, u)
		for l := range 12 {
			v := "25 GB/s"
			if g == 1 && (l == 3 || l == 5) {
				v = "<inactive>"
			}
			fmt.Fprintf(&b, "\t Link %d: %s\n", l, v)
		}
	}
	nvlink := filepath.Join(dir, "nvlink-s.txt")
	if err := os.WriteFile(nvlink, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snap.json")
	if code, _, errs := runCLI(t, "snapshot", "--from-nvidia-smi", capture, "--from-nvidia-smi-nvlink", nvlink, "-o", snap); code != 0 {
		t.Fatalf("snapshot exit %d: %s", code, errs)
	}
	_, out, _ := runCLI(t, "check", "--from-snapshot", snap, "--checks", "nvlink", "--format", "json")
	got := map[string]string{}
	for _, r := range decode(t, out).Checks {
		got[r.ID] = string(r.Status) + ": " + r.Summary + " " + strings.Join(r.Details, " ")
	}
	if !strings.HasPrefix(got["nvlink.state"], "fail") || !strings.Contains(got["nvlink.state"], "GPU 1 (0000:9e:00.0): 10 of 12 NVLinks up (links 3,5 down)") {
		t.Errorf("nvlink.state: %s", got["nvlink.state"])
	}
	if !strings.HasPrefix(got["nvlink.errors"], "skip: NVLink error counters not in the capture") {
		t.Errorf("nvlink.errors: %s", got["nvlink.errors"])
	}

	other := filepath.Join("..", "..", "nvsmi", "testdata", "nvlink", "nccltests228_a100x8_nvlink-s.txt")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from-nvidia-smi", capture, "--from-nvidia-smi-nvlink", other}, other + ": line 1: GPU 0 (GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05) is not in the nvidia-smi -q capture"},
		{[]string{"--from-nvidia-smi-nvlink", nvlink}, "--from-nvidia-smi-nvlink adds to --from-nvidia-smi"},
	} {
		code, _, errs := runCLI(t, append([]string{"snapshot"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
