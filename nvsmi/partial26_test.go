package nvsmi_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/nvsmi"
	"github.com/gpuprobe/gpuprobe/state"
)

// Issue 26, item 4: the importer judges partial captures. Each fixture is
// cut from a real capture in testdata (its "# source:" lines say which
// lines); each case was refused before ("Attached GPUs is 8 but the
// capture holds 1 GPU block(s)", "no \"Attached GPUs\" line", "Used GPU
// Memory: ... is not a number").
func TestIssue26PartialCaptures(t *testing.T) {
	a10g, err := os.ReadFile("testdata/telegraf_a10g_515.105.01_nvidia-smi-q-x.xml")
	if err != nil {
		t.Fatal(err)
	}
	// The XML <gpu> element alone, as a ticket pastes it.
	x := string(a10g)
	xmlFragment := x[strings.Index(x, "<gpu id="):strings.Index(x, "</gpu>")+len("</gpu>")] + "\n"
	for _, tc := range []struct {
		name, file, data string
		bus              string // the GPU, by what the capture shows
		attached         int
		partial          string // substring of capture.partial
		results          map[string]check.Status
		summary          map[string]string // check -> substring of its summary
	}{
		{name: "nvidia-smi -q -i 2 of an 8-GPU node", file: "testdata/cut_gpud_h100x8_535.183.01_i2_nvidia-smi-q.txt",
			bus: "0000:75:00.0", attached: 8, partial: "1 of 8 attached GPUs shown",
			// GPU 2's power brake (the full capture's finding) is judged;
			// the other 7 are neither missing nor passed.
			// (one sample: a warning, issue 26's throttle rule);
			results: map[string]check.Status{"gpu.throttle": check.Warn, "gpu.count": check.Pass},
			summary: map[string]string{"gpu.count": "7 not in the capture (not judged)", "gpu.throttle": "0000:75:00.0): hw_power_brake_slowdown active in this sample"}},
		{name: "a GPU block without the header", file: "testdata/cut_gpud_a10_535.129.03_fragment_nvidia-smi-q.txt",
			bus: "0000:07:00.0", partial: "a fragment: 1 GPU block(s) without the capture's header",
			results: map[string]check.Status{"gpu.row_remap": check.Fail, "gpu.count": check.Skip},
			summary: map[string]string{"gpu.count": "how many GPUs the node has is not in the capture", "gpu.row_remap": "0000:07:00.0): row remap pending"}},
		{name: "an XML <gpu> element alone", file: "a10g-fragment.xml", data: xmlFragment,
			bus: "0000:00:1e.0", partial: "a fragment",
			results: map[string]check.Status{"gpu.count": check.Skip, "gpu.row_remap": check.Pass}},
		{name: "a Windows fragment", file: "testdata/cut_gpud_rtx4090_535.154.05_windows-processes_nvidia-smi-q.txt",
			bus: "0000:01:00.0", partial: "a fragment",
			results: map[string]check.Status{"gpu.processes": check.Skip, "gpu.count": check.Skip}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			if tc.data == "" {
				var err error
				if data, err = os.ReadFile(tc.file); err != nil {
					t.Fatal(err)
				}
			}
			n, err := nvsmi.Parse(tc.file, data, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(n.NVML.GPUs) != 1 || n.NVML.GPUs[0].PCIBusID != tc.bus {
				t.Fatalf("GPUs %+v, want the one at %s", n.NVML.GPUs, tc.bus)
			}
			if n.Capture.AttachedGPUs != tc.attached || !strings.Contains(n.Capture.Partial, tc.partial) {
				t.Errorf("capture: attached %d, partial %q; want %d, %q", n.Capture.AttachedGPUs, n.Capture.Partial, tc.attached, tc.partial)
			}
			checks, _ := check.Select(nil, nil)
			for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), checks) {
				if want, ok := tc.results[r.ID]; ok && r.Status != want {
					t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Summary, want)
				}
				if want, ok := tc.summary[r.ID]; ok && !strings.Contains(r.Summary, want) {
					t.Errorf("%s: %q, want it to hold %q", r.ID, r.Summary, want)
				}
			}
		})
	}
}

// Windows captures: a process path keeps its spaces (it was cut at the
// first one: "C:\Program"), and WDDM's "Not available in WDDM driver
// model" is unknown memory, not 0 MiB (the capture was refused: "not a
// number").
func TestIssue26WindowsProcesses(t *testing.T) {
	n := parse(t, "cut_gpud_rtx4090_535.154.05_windows-processes_nvidia-smi-q.txt")
	got := n.NVML.GPUs[0].Processes
	want := []state.Process{
		{PID: 10588, Command: "StartMenuExperienceHost.exe", UsedMemoryUnknown: true},
		{PID: 11872, Command: "python.exe", UsedMemoryUnknown: true},
	}
	if len(got) != len(want) {
		t.Fatalf("processes %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("process %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A path with spaces in the name itself.
	frag := "GPU 00000000:01:00.0\n    Product Name : NVIDIA RTX A4000\n    Processes\n        Process ID : 7\n" +
		"            Type : C\n            Name : C:\\Program Files\\My Tools\\render job.exe\n            Used GPU Memory : N/A\n"
	m, err := nvsmi.Parse("w.txt", []byte(frag), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p := m.NVML.GPUs[0].Processes[0]; p.Command != "render job.exe" || !p.UsedMemoryUnknown || p.UsedMemoryBytes != 0 {
		t.Errorf("process %+v, want render job.exe with memory unknown", p)
	}
}

// A vGPU guest prints "0 C" where it has no temperature reading: unknown,
// kept as printed, never a temperature (gpu.temperature said "hottest GPU
// 0 °C"). No real vGPU capture is in the corpus: the block is the real
// H100's (realgpu_h100_580.159.04_nvidia-smi-q.txt) with its current
// temperature printed as a guest prints it.
func TestIssue26ZeroCelsiusIsUnknown(t *testing.T) {
	raw, err := os.ReadFile("testdata/realgpu_h100_580.159.04_nvidia-smi-q.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	at := 0
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "GPU Current Temp") {
			lines[i] = l[:strings.Index(l, ":")+1] + " 0 C"
			at = i + 1
		}
	}
	n, err := nvsmi.Parse("guest.txt", []byte(strings.Join(lines, "\n")), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	u := n.CaptureUnknownFor(0, "nvmlDeviceGetTemperature")
	if n.NVML.GPUs[0].Thermal != nil || u == nil || u.Printed != "0 C" || u.Line != at {
		t.Fatalf("thermal %+v, unknown %+v; want unknown, printed \"0 C\" at line %d", n.NVML.GPUs[0].Thermal, u, at)
	}
	checks, _ := check.Select([]string{"gpu.temperature"}, nil)
	if r := check.Run(context.Background(), n, check.DefaultConfig(), checks)[0]; r.Status != check.Skip || !strings.Contains(r.Summary, `prints "0 C"`) {
		t.Errorf("gpu.temperature: %s %q, want a skip naming what was printed", r.Status, r.Summary)
	}
}
