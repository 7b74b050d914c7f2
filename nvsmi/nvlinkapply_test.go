package nvsmi_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/nvsmi"
)

// gls4 is a real 4x A100-SXM4-80GB `nvidia-smi -a` (gls_a100x4_555.42.02);
// its UUIDs in NVML order.
var gls4 = []string{"GPU-31515c3d-1414-7c2c-004a-f86a898946ac", "GPU-72d87681-01db-370e-567d-41afcf20fad0",
	"GPU-62989189-9e1e-ac75-4676-114f14998542", "GPU-011b2cfe-2b8e-1cb0-19e1-1b764e854dfc"}

// nvlinkS prints `nvidia-smi nvlink -s` as the real captures do
// (testdata/nvlink: "GPU N: NAME (UUID: ...)", "\t Link N: 25 GB/s" or
// "<inactive>") for the GPUs given, with the links of inactive[gpu] down.
func nvlinkS(gpus []int, inactive map[int][]int) string {
	var b strings.Builder
	for _, g := range gpus {
		fmt.Fprintf(&b, "GPU %d: NVIDIA A100-SXM4-80GB (UUID: %s)\n", g, gls4[g])
		for l := range 12 {
			v := "25 GB/s"
			for _, d := range inactive[g] {
				if d == l {
					v = "<inactive>"
				}
			}
			fmt.Fprintf(&b, "\t Link %d: %s\n", l, v)
		}
	}
	return b.String()
}

func judgeNVLink(t *testing.T, nvlink string) (map[string]check.Result, error) {
	t.Helper()
	data, err := os.ReadFile("testdata/gls_a100x4_555.42.02_nvidia-smi-q.txt")
	if err != nil {
		t.Fatal(err)
	}
	n, err := nvsmi.Parse("gls4.txt", data, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	c, err := nvsmi.ParseNVLink("nvlink.txt", []byte(nvlink))
	if err != nil {
		return nil, err
	}
	if err := nvsmi.ApplyNVLink(n, "nvlink.txt", c); err != nil {
		return nil, err
	}
	if err := n.Validate(); err != nil {
		t.Fatalf("state does not validate: %v", err)
	}
	checks, _ := check.Select([]string{"nvlink"}, nil)
	out := map[string]check.Result{}
	for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), checks) {
		out[r.ID] = r
	}
	return out, nil
}

func text(r check.Result) string {
	s := r.Summary
	for _, d := range r.Details {
		s += "\n" + d
	}
	return s
}

// A saved nvidia-smi nvlink capture added to the same node's -q is judged
// by nvlink.state and nvlink.errors as NVML's answers are; what the
// capture cannot decide is unknown, never down. The nvlink captures are
// printed in the real captures' form with this node's UUIDs (no real -q
// with a matching nvlink capture was found).
func TestNVLinkCaptureJudged(t *testing.T) {
	for _, c := range []struct {
		name, nvlink string
		state        check.Status
		errs         check.Status
		also         []string
	}{
		{name: "all active", nvlink: nvlinkS([]int{0, 1, 2, 3}, nil), state: check.Pass, errs: check.Skip,
			also: []string{"48 NVLinks up on 4 GPUs", "NVLink error counters not in the capture"}},
		{name: "two links inactive on an SXM GPU", nvlink: nvlinkS([]int{0, 1, 2, 3}, map[int][]int{1: {3, 5}}), state: check.Fail,
			also: []string{"10 of 12 NVLinks up (links 3,5 down)"}},
		{name: "GPU 3 not shown, GPU 2 with NVML's message", state: check.Pass,
			nvlink: nvlinkS([]int{0, 1}, nil) + "GPU 2: NVIDIA A100-SXM4-80GB (UUID: " + gls4[2] + ")\n\t NVML: Unable to retrieve NVLink information as all links are inActive\n",
			also:   []string{"NVLink state unknown: the capture prints \"NVML: Unable to retrieve NVLink information as all links are inActive\" (line 28)", "NVLink state unknown: not in the capture"}},
		{name: "cut after GPU 1's first link", state: check.Pass,
			nvlink: nvlinkS([]int{0}, nil) + "GPU 1: NVIDIA A100-SXM4-80GB (UUID: " + gls4[1] + ")\n\t Link 0: 25 GB/s\n......\n",
			also:   []string{"NVLink state unknown: the capture prints \"a cut (\\\"...\\\") in its links\" (line 16)"}},
		{name: "-e alone: counters, no state", state: check.Skip, errs: check.Warn,
			nvlink: "GPU 0: NVIDIA A100-SXM4-80GB (UUID: " + gls4[0] + ")\n\t Link 0: Replay Errors: 0\n\t Link 0: Recovery Errors: 1\n\t Link 0: CRC Errors: 0\n",
			also:   []string{"NVLink state not in the capture", "1 recovery errors since the counters were last reset"}},
		{name: "-e alone, no errors: CRC not judged, said so", state: check.Skip, errs: check.Pass,
			nvlink: "GPU 0: NVIDIA A100-SXM4-80GB (UUID: " + gls4[0] + ")\n\t Link 0: Replay Errors: 0\n\t Link 0: Recovery Errors: 0\n\t Link 0: CRC Errors: 0\n",
			also:   []string{"GPU 0: CRC flit on link 0; CRC data on link 0: the capture prints CRC Errors (nvidia-smi's one CRC count: flit or data, it does not say) (line 1)", "GPU 1: not in the capture"}},
		{name: "headers without UUIDs, matched by index on a whole -q", state: check.Fail,
			nvlink: strings.NewReplacer(" (UUID: "+gls4[0]+")", "", " (UUID: "+gls4[1]+")", "", " (UUID: "+gls4[2]+")", "", " (UUID: "+gls4[3]+")", "").
				Replace(nvlinkS([]int{0, 1, 2, 3}, map[int][]int{0: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}})),
			also: []string{"GPU 0 (0000:68:00.0): 0 of 12 NVLinks up (links 0-11 down)"}},
		{name: "every link inactive, no platform: unknown, not down", state: check.Skip,
			nvlink: nvlinkS([]int{0, 1, 2, 3}, map[int][]int{0: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 1: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
				2: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}),
			also: []string{"12 NVLinks listed, none active: the capture cannot tell a GPU without NVLink peers"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := judgeNVLink(t, c.nvlink)
			if err != nil {
				t.Fatal(err)
			}
			all := text(got["nvlink.state"]) + "\n" + text(got["nvlink.errors"])
			if got["nvlink.state"].Status != c.state {
				t.Errorf("nvlink.state %s, want %s:\n%s", got["nvlink.state"].Status, c.state, all)
			}
			if c.errs != "" && got["nvlink.errors"].Status != c.errs {
				t.Errorf("nvlink.errors %s, want %s:\n%s", got["nvlink.errors"].Status, c.errs, all)
			}
			for _, s := range c.also {
				if !strings.Contains(all, s) {
					t.Errorf("no %q in:\n%s", s, all)
				}
			}
		})
	}
}

// An nvlink capture of another node is refused, naming its line.
func TestNVLinkCaptureOfAnotherNode(t *testing.T) {
	for in, want := range map[string]string{
		"GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05)\n\t Link 0: 25 GB/s\n": "nvlink.txt: line 1: GPU 0 (GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05) is not in the nvidia-smi -q capture gls4.txt",
		"GPU 7: NVIDIA A100-SXM4-80GB\n\t Link 0: 25 GB/s\n":                                                  "nvlink.txt: line 1: GPU 7 prints no UUID",
	} {
		if _, err := judgeNVLink(t, in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}
