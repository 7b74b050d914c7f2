package nvsmi_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/nvsmi"
	"github.com/gpuprobe/gpuprobe/state"
)

// The fields the checks read, as an HGX H100 of driver 535 prints them.
func TestMapsTextFields(t *testing.T) {
	n := parse(t, "gpud_h100x8_535.161.08_nvidia-smi-q.txt")
	if n.Capture == nil || n.Capture.Format != nvsmi.FormatText || !strings.HasSuffix(n.Capture.File, "gpud_h100x8_535.161.08_nvidia-smi-q.txt") {
		t.Fatalf("capture = %+v", n.Capture)
	}
	if !n.CollectedAt.Equal(time.Date(2024, 7, 31, 11, 22, 39, 0, time.UTC)) {
		t.Errorf("collected_at = %v, want the capture's time stamp", n.CollectedAt)
	}
	if n.Kernel != nil || n.Topology != nil || n.Slurm != nil {
		t.Errorf("a capture holds no kernel log, topology or Slurm state")
	}
	nv := n.NVML
	if nv.DriverVersion != "535.161.08" || nv.CUDADriverVersion != "12.2" || nv.DeviceCount != 8 {
		t.Errorf("driver %q CUDA %q count %d", nv.DriverVersion, nv.CUDADriverVersion, nv.DeviceCount)
	}
	g := nv.GPUs[0]
	want := []struct {
		name      string
		got, want any
	}{
		{"name", g.Name, "NVIDIA H100 80GB HBM3"},
		{"uuid", g.UUID, "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"},
		{"bus", g.PCIBusID, "0000:19:00.0"},
		{"serial", g.Serial, "1650124031592"},
		{"arch", g.Architecture, "hopper"},
		{"minor", *g.Minor, 0},
		{"persistence", *g.PersistenceMode, true},
		{"mig", *g.MIG, state.MIG{}},
		{"memory", *g.Memory, state.Memory{TotalBytes: 81559 << 20, ReservedBytes: 551 << 20, UsedBytes: 0, FreeBytes: 81007 << 20}},
		{"ecc mode", [2]bool{g.ECC.EnabledCurrent, g.ECC.EnabledPending}, [2]bool{true, true}},
		{"ecc volatile", [2]uint64{*g.ECC.Volatile.Corrected, *g.ECC.Volatile.Uncorrected}, [2]uint64{0, 0}},
		{"ecc aggregate", [2]uint64{*g.ECC.Aggregate.Corrected, *g.ECC.Aggregate.Uncorrected}, [2]uint64{0, 0}},
		{"remapped rows", *g.RemappedRows, state.RemappedRows{}},
		{"retired pages (remapping replaces them)", g.RetiredPages == nil, true},
		{"clock events", *g.ClockEvents, state.ClockEvents{Mask: 0x88, Reasons: []string{"hw_slowdown", "hw_power_brake_slowdown"}}},
		{"pcie", [4]int{g.PCIe.CurrentGen, g.PCIe.MaxGen, g.PCIe.CurrentWidth, g.PCIe.MaxWidth}, [4]int{5, 5, 16, 16}},
		{"replays", *g.PCIe.ReplayCounter, uint64(67)},
		{"temperature", g.Thermal.TemperatureC, 29},
		// "GPU Slowdown T.Limit Temp : -2 C" is a margin, not a threshold:
		// 29 C now + 56 C of margin to T.Limit + 2 = 87 C (the derivation a
		// real H100 confirmed against NVML, realgpu_test.go).
		{"slowdown threshold", [2]int{*g.Thermal.SlowdownC, *g.Thermal.ShutdownC}, [2]int{87, 93}},
		{"power", [2]float64{g.Power.DrawWatts, *g.Power.LimitWatts}, [2]float64{67.74, 700}},
		{"utilization", *g.Utilization, state.Utilization{}},
		{"processes", [2]any{g.ProcessesKnown, len(g.Processes)}, [2]any{true, 0}},
		{"fabric", [3]string{g.Fabric.State, g.Fabric.Status, g.Fabric.API}, [3]string{"completed", "success", "nvidia-smi"}},
		{"nvlinks", len(g.NVLinks), 0},
	}
	for _, w := range want {
		if !equal(w.got, w.want) {
			t.Errorf("%s = %+v, want %+v", w.name, w.got, w.want)
		}
	}
	if got := nv.GPUs[7].PCIBusID; got != "0000:db:00.0" {
		t.Errorf("GPU 7 bus = %s", got)
	}
}

// The older layouts: the Volta "Single Bit/Double Bit" ECC tree and the
// absolute thresholds; graphics-only processes are not compute processes.
func TestMapsOlderLayouts(t *testing.T) {
	g := parse(t, "gpud_titanv_560.35.03_nvidia-smi-q.txt").NVML.GPUs[0]
	if g.ECC != nil || g.RemappedRows != nil || g.RetiredPages != nil || g.MIG != nil {
		t.Errorf("N/A values must stay unknown: ecc %+v rows %+v pages %+v mig %+v", g.ECC, g.RemappedRows, g.RetiredPages, g.MIG)
	}
	for _, call := range []string{"nvmlDeviceGetEccMode", "nvmlDeviceGetRemappedRows", "nvmlDeviceGetRetiredPages", "nvmlDeviceGetMigMode"} {
		if !slices.Contains(g.Unsupported, call) {
			t.Errorf("%s not listed as unsupported: %v", call, g.Unsupported)
		}
	}
	if g.Thermal.SlowdownC == nil || *g.Thermal.SlowdownC != 97 || *g.Thermal.ShutdownC != 100 {
		t.Errorf("thresholds %+v", g.Thermal)
	}
	if !g.ProcessesKnown || len(g.Processes) != 0 {
		t.Errorf("three G (graphics) processes are no compute processes: %+v", g.Processes)
	}
	if g.PCIe.CurrentGen != 1 || g.PCIe.MaxGen != 3 {
		t.Errorf("pcie %+v", g.PCIe)
	}
	if !slices.Equal(g.ClockEvents.Reasons, []string{"gpu_idle"}) {
		t.Errorf("reasons %v", g.ClockEvents.Reasons)
	}

	// Text of R535 with a pending remap.
	a10 := parse(t, "gpud_a10_535.129.03_nvidia-smi-q.txt").NVML.GPUs[0]
	if *a10.RemappedRows != (state.RemappedRows{Uncorrectable: 4, Pending: true}) {
		t.Errorf("A10 rows %+v", a10.RemappedRows)
	}
	// The excerpt: SRAM + DRAM summed as NVML's total count does.
	n := parse(t, "mleng_a100_xid63_nvidia-smi-q_ecc_remapped.txt")
	if n.Capture.Partial == "" || n.NVML.DeviceCount != 1 {
		t.Errorf("the [...] excerpt must be recorded as partial: %+v", n.Capture)
	}
	busy := parse(t, "gpud_rtx4090x8_535.154.05_nvidia-smi-q.txt").NVML.GPUs[0]
	if len(busy.Processes) != 1 || busy.Processes[0] != (state.Process{PID: 2010222, UsedMemoryBytes: 6724 << 20, Command: "python"}) {
		t.Errorf("4090 processes %+v", busy.Processes)
	}
}

// The XML of -q -x: v11 (clocks_throttle_reasons, power_readings with
// enforced_power_limit) and v13 (average_power_draw, deprecated fields).
func TestMapsXML(t *testing.T) {
	n := parse(t, "telegraf_a10g_515.105.01_nvidia-smi-q-x.xml")
	if n.Capture.Format != nvsmi.FormatXML {
		t.Errorf("format %q", n.Capture.Format)
	}
	g := n.NVML.GPUs[0]
	if g.PCIBusID != "0000:00:1e.0" || g.Name != "NVIDIA A10G" || !g.ECC.EnabledPending || *g.ECC.Volatile.Uncorrected != 0 {
		t.Errorf("A10G %+v", g)
	}
	if g.PCIe.CurrentWidth != 8 || g.PCIe.MaxWidth != 16 || g.PCIe.CurrentGen != 1 || g.PCIe.MaxGen != 4 {
		t.Errorf("pcie %+v", g.PCIe)
	}
	if g.Power.DrawWatts != 25.58 || *g.Power.LimitWatts != 300 || *g.Thermal.SlowdownC != 95 {
		t.Errorf("power %+v thermal %+v", g.Power, g.Thermal)
	}
	if !slices.Equal(g.ClockEvents.Reasons, []string{"gpu_idle"}) || *g.PersistenceMode {
		t.Errorf("reasons %v persistence %v", g.ClockEvents.Reasons, *g.PersistenceMode)
	}
	v13 := parse(t, "telegraf_2xa5000_590.44.01_nvidia-smi-q-x.xml").NVML
	a, b := v13.GPUs[0], v13.GPUs[1]
	if a.Power.DrawWatts != 6.41 || b.Power.DrawWatts != 13.6 || *a.Power.LimitWatts != 230 {
		t.Errorf("average power draw: %+v %+v", a.Power, b.Power)
	}
	if a.ECC.EnabledCurrent || a.ECC.Volatile.Uncorrected != nil || a.Fabric != nil {
		t.Errorf("ECC off leaves the counters unread; fabric N/A is none: %+v %+v", a.ECC, a.Fabric)
	}
	if len(b.Processes) != 1 || b.Processes[0].Command != "llama-server" || b.Processes[0].UsedMemoryBytes != 17246<<20 {
		t.Errorf("processes %+v", b.Processes)
	}
}

// Every spelling of "could not read" stays unknown and is never zero; the
// checks then skip those values instead of passing them.
func TestUnknownStaysUnknown(t *testing.T) {
	n := parse(t, "synthetic_unknowns.txt")
	g := n.NVML.GPUs[0]
	if g.PersistenceMode != nil || g.MIG != nil || g.PCIe != nil || g.ClockEvents != nil || g.Memory != nil ||
		g.Utilization != nil || g.Thermal != nil || g.Power != nil || g.RemappedRows != nil || g.RetiredPages != nil || g.Fabric != nil || g.ProcessesKnown {
		t.Fatalf("an unknown value was read as a value: %+v", g)
	}
	if g.ECC == nil || g.ECC.Volatile.Uncorrected != nil || g.ECC.Aggregate.Corrected != nil || g.ECC.Volatile.Corrected == nil {
		t.Errorf("ECC counters: a sum with an unknown part is unknown, a known one is kept: %+v", g.ECC)
	}
	for _, call := range []string{"nvmlDeviceGetPersistenceMode", "nvmlDeviceGetMigMode", "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetCurrentClocksEventReasons",
		"nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetRemappedRows",
		"nvmlDeviceGetRetiredPages", "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetTotalEccErrors"} {
		if !slices.Contains(g.Unsupported, call) {
			t.Errorf("%s not marked unavailable: %v", call, g.Unsupported)
		}
	}
	checks, _ := check.Select([]string{"gpu"}, nil)
	for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), checks) {
		switch r.ID {
		case "gpu.driver", "gpu.count", "gpu.xid":
			continue
		}
		if r.Status != check.Skip {
			t.Errorf("%s: %s (%s), want skip: every value it reads is unknown", r.ID, r.Status, r.Summary)
		}
		if !strings.Contains(r.Summary, "unknown: the capture prints ") {
			t.Errorf("%s: %q does not say what the capture printed", r.ID, r.Summary)
		}
	}
}

// Bad input is an error naming the file and the line; nothing panics.
func TestBadInput(t *testing.T) {
	const head = "Attached GPUs : 1\nGPU 00000000:19:00.0\n"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "f.txt: empty"},
		{"only a header", "# source: x\n\n", "f.txt: empty"},
		{"not nvidia-smi", "hello world\nfoo bar\n", "f.txt: no \"Attached GPUs\" line and no GPU block"},
		{"binary", head + "    Product Name : \x00\x01\n", "f.txt:3: binary data"},
		{"tab indent", head + "\tProduct Name : x\n", "f.txt:3: indented with a tab"},
		{"long line", head + "    Product Name : " + strings.Repeat("x", 5000) + "\n", "f.txt:3: line longer than"},
		{"bad count", "Attached GPUs : many\n", "f.txt:1: Attached GPUs: \"many\" is not a count"},
		{"more blocks than attached", "Attached GPUs : 1\n" + "GPU 00000000:19:00.0\n    Product Name : H100\n" + "GPU 00000000:1a:00.0\n    Product Name : H100\n", "f.txt:1: Attached GPUs is 1 but the capture holds 2 GPU blocks"},
		{"bad memory", head + "    FB Memory Usage\n        Total : lots MiB\n        Used : 0 MiB\n", "f.txt:4: Total: \"lots MiB\" is not a number (in MiB)"},
		{"exponent", head + "    FB Memory Usage\n        Total : 1e30 MiB\n        Used : 0 MiB\n", "f.txt:4: Total: \"1e30 MiB\" is not a number"},
		{"negative power", head + "    GPU Power Readings\n        Power Draw : -5.00 W\n", "f.txt:4: Power Draw: \"-5.00 W\" is not a number"},
		{"bad flag", head + "    Persistence Mode : Maybe\n", "f.txt:3: Persistence Mode: \"Maybe\" is neither"},
		{"bad bus", "Attached GPUs : 1\nGPU zz:qq\n    Product Name : x\n", "f.txt:2: GPU block: PCI address"},
		{"duplicate GPU", "Attached GPUs : 2\nGPU 00000000:19:00.0\n    Product Name : a\nGPU 0000:19:00.0\n    Product Name : b\n", "f.txt:4: GPU 0000:19:00.0 is listed twice"},
		{"empty block", head + "    Display Mode : Enabled\n", "f.txt:2: GPU block GPU 00000000:19:00.0 holds nothing gpuprobe reads"},
		{"bad fabric", head + "    Product Name : x\n    Fabric\n        State : Weird\n", "f.txt:5: Fabric State: \"Weird\""},
		{"bad pid", head + "    Product Name : x\n    Processes\n        Process ID : abc\n", "f.txt:5: Process ID: \"abc\" is not a count"},
		{"xml syntax", "<nvidia_smi_log><gpu>\n<product_name>x</gpu>", "f.txt:2: not well-formed XML"},
		{"xml truncated", "<nvidia_smi_log>\n<attached_gpus>1</attached_gpus>\n<gpu id=\"00000000:19:00.0\">\n<product_name>x</product_name>\n", "the XML ends inside <gpu>: truncated"},
		{"xml other document", "<?xml version=\"1.0\"?>\n<html></html>\n", "f.txt:1: XML without <nvidia_smi_log>"},
		{"xml too deep", "<nvidia_smi_log>" + strings.Repeat("<a>", 40) + strings.Repeat("</a>", 40) + "</nvidia_smi_log>", "nested deeper than 32 levels"},
		{"text too deep", head + deepText(40), "nested deeper than 32 levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := nvsmi.Parse("f.txt", []byte(tc.in), time.Now())
			var pe *nvsmi.ParseError
			if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, %v; want a ParseError containing %q", n, err, tc.want)
			}
		})
	}
}

func deepText(levels int) string {
	var b strings.Builder
	for i := 1; i <= levels; i++ {
		b.WriteString(strings.Repeat(" ", 4*i) + "Section\n")
	}
	return b.String()
}

// The size bound is the command's (readlimit); the parser's own bounds
// hold for any input: a fuzzed capture never panics, and what parses is a
// valid node state the checks can judge.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil && len(data) < 32<<10 {
			f.Add(data)
		}
	}
	f.Add([]byte("Attached GPUs : 1\nGPU 00000000:19:00.0\n    FB Memory Usage\n        Total : 10 MiB\n        Used : 1 MiB\n"))
	f.Add([]byte("<nvidia_smi_log><attached_gpus>1</attached_gpus><gpu id=\"0000:01:00.0\"><uuid>GPU-x</uuid></gpu></nvidia_smi_log>"))
	checks, _ := check.Select([]string{"gpu", "fabric.state", "nvlink"}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := nvsmi.Parse("fuzz", data, time.Unix(0, 0))
		if err != nil {
			var pe *nvsmi.ParseError
			if !errors.As(err, &pe) || pe.File != "fuzz" {
				t.Fatalf("error %v is not a ParseError naming the file", err)
			}
			return
		}
		if err := n.Validate(); err != nil {
			t.Fatalf("parsed state does not validate: %v", err)
		}
		for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), checks) {
			if r.Status == check.Error && strings.HasPrefix(r.Summary, "internal error") {
				t.Fatalf("%s panicked on a parsed capture: %s", r.ID, r.Summary)
			}
		}
	})
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case state.ClockEvents:
		y := b.(state.ClockEvents)
		return x.Mask == y.Mask && slices.Equal(x.Reasons, y.Reasons)
	}
	return a == b
}

// The fabric health rows of newer drivers become nvml.h's mask and summary,
// which fabric.state decodes as it decodes NVML's own.
func TestFabricHealthRows(t *testing.T) {
	n := parse(t, "synthetic_fabric_health.txt")
	ok, bad := n.NVML.GPUs[0].Fabric, n.NVML.GPUs[1].Fabric
	if ok.HealthMask != 0x1aa || ok.HealthSummary != 1 || ok.CliqueID != 32766 || ok.ClusterUUID == "" {
		t.Errorf("healthy fabric: %+v (want mask 0x1aa, summary 1)", ok)
	}
	// bandwidth degraded TRUE (1), route unhealthy TRUE (1<<4), the rest FALSE/NONE.
	if want := uint32(1 | 2<<2 | 1<<4 | 2<<6 | 1<<8); bad.HealthMask != want || bad.HealthSummary != 2 {
		t.Errorf("unhealthy fabric: mask %#x summary %d, want %#x and 2", bad.HealthMask, bad.HealthSummary, want)
	}
	checks, _ := check.Select([]string{"fabric.state"}, nil)
	r := check.Run(context.Background(), n, check.DefaultConfig(), checks)[0]
	if r.Status != check.Fail || len(r.Devices) != 1 || r.Devices[0].Index != 1 || !strings.Contains(r.Summary, "route unhealthy") {
		t.Errorf("fabric.state: %s on %v: %s", r.Status, r.Devices, r.Summary)
	}
}

// The memory (HBM) temperature and its limit, which gpu.temperature
// judges, are read from a capture where it prints them (issue 26): the
// TITAN V capture prints both; the H100 captures print the temperature
// and only a T.Limit margin for the limit, so the limit is unknown, named.
func TestMemoryTemperature(t *testing.T) {
	for _, tc := range []struct {
		file       string
		temp, max  int // 0: absent
		maxUnknown bool
	}{
		{"gpud_titanv_560.35.03_nvidia-smi-q.txt", 41, 95, false},
		{"realgpu_h100-busy_580.159.04_nvidia-smi-q.txt", 0, 0, true},
		{"realgpu_h100-busy_580.159.04_nvidia-smi-q-x.xml", 55, 0, true},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		n, err := nvsmi.Parse(tc.file, data, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		th := n.NVML.GPUs[0].Thermal
		if th == nil || th.MemoryTemperatureC == nil {
			t.Fatalf("%s: memory temperature not read: %+v", tc.file, th)
		}
		if tc.temp != 0 && *th.MemoryTemperatureC != tc.temp {
			t.Errorf("%s: memory %d °C, want %d", tc.file, *th.MemoryTemperatureC, tc.temp)
		}
		switch {
		case tc.max != 0 && (th.MemoryMaxC == nil || *th.MemoryMaxC != tc.max):
			t.Errorf("%s: memory max %v, want %d", tc.file, th.MemoryMaxC, tc.max)
		case tc.maxUnknown && (th.MemoryMaxC != nil || !slices.Contains(n.NVML.GPUs[0].Unsupported, state.MemoryMaxThresholdCall)):
			t.Errorf("%s: memory max %v, unsupported %v: want it unknown and named", tc.file, th.MemoryMaxC, n.NVML.GPUs[0].Unsupported)
		}
	}
}

// The SRAM error-threshold flag gpu.ecc judges is read where the capture
// prints it (issue 26), and a "Yes" fails gpu.ecc.
func TestSRAMThresholdFlag(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gpud_h100x8_535.183.01_nvidia-smi-q.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := nvsmi.Parse("h100", data, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range n.NVML.GPUs {
		if g.SRAMECC == nil || g.SRAMECC.ThresholdExceeded {
			t.Fatalf("GPU %d: SRAM status %+v, want read and clear", g.Index, g.SRAMECC)
		}
	}
	set := strings.Replace(string(data), "SRAM Threshold Exceeded       : No", "SRAM Threshold Exceeded       : Yes", 1)
	n, err = nvsmi.Parse("h100", []byte(set), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := check.Select([]string{"gpu.ecc"}, nil)
	rs := check.Run(context.Background(), n, check.DefaultConfig(), cs)
	if len(rs) != 1 || rs[0].Status != check.Fail || !strings.Contains(rs[0].Summary, "SRAM error threshold") {
		t.Fatalf("gpu.ecc with the flag set: %+v", rs)
	}
}
