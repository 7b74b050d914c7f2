package nvsmi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// TestCorpusFields: what each capture added by the corpus hunt must import
// to, read off the capture by hand (nvidia-smi prints what NVML returns;
// the values are the ones the capture shows, unknown where it prints N/A).
func TestCorpusFields(t *testing.T) {
	const mib = 1 << 20
	cases := map[string]func(t *testing.T, n *state.Node){
		// hw4 (ALTERED capture, its header says how): NVML's error strings
		// where values were are unknown, the reset required is read.
		"altered_gpud_rtx4090_535.154.05_not-ready-reset-required_nvidia-smi-q.txt": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "temperature unknown", g.Thermal == nil, true)
			eq(t, "power unknown", g.Power == nil, true)
			eq(t, "recovery action", *g.RecoveryAction, 1)
			eq(t, "unsupported", strings.Join(g.Unsupported, ","), "nvmlDeviceGetMigMode,nvmlDeviceGetTemperature,nvmlDeviceGetPowerUsage")
			eq(t, "memory used", g.Memory.UsedBytes, uint64(6730*mib))
		},
		"telegraf_t4_515.105.01_nvidia-smi-q-x.xml": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "driver", n.NVML.DriverVersion, "515.105.01")
			eq(t, "name", g.Name, "Tesla T4")
			eq(t, "bus", g.PCIBusID, "0000:00:1e.0")
			eq(t, "pcie", pcie(g), "Gen3 x8 of Gen3 x16")
			eq(t, "memory total", g.Memory.TotalBytes, uint64(15360*mib))
			eq(t, "memory used", g.Memory.UsedBytes, uint64(1032*mib))
			eq(t, "ecc on", g.ECC.EnabledCurrent, true)
			eq(t, "retired pages", *g.RetiredPages, state.RetiredPages{})
			eq(t, "remapped rows", g.RemappedRows == nil, true) // N/A on Turing
			eq(t, "persistence", *g.PersistenceMode, false)
			eq(t, "temperature", g.Thermal.TemperatureC, 40)
			eq(t, "power", g.Power.DrawWatts, 26.78)
			eq(t, "limit", *g.Power.LimitWatts, 70.0)
			eq(t, "clock events", strings.Join(g.ClockEvents.Reasons, ","), "")
			eq(t, "processes", len(g.Processes), 1) // python (C); Xorg (G) is not a compute process
			eq(t, "process", g.Processes[0].Command, "python")
			eq(t, "graphics", len(g.GraphicsProcesses), 1)
		},
		"telegraf_rtx3080-wddm_536.40_nvidia-smi-q-x.xml": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "persistence unknown", g.PersistenceMode == nil, true) // N/A under WDDM
			eq(t, "ecc unknown", g.ECC == nil, true)
			eq(t, "memory used", g.Memory.UsedBytes, uint64(1128*mib))
			eq(t, "compute processes", len(g.Processes), 0)
			eq(t, "graphics processes", len(g.GraphicsProcesses), 5)
			eq(t, "first graphics", g.GraphicsProcesses[0].Command, "Xorg")
			eq(t, "xorg memory", g.GraphicsProcesses[0].UsedMemoryBytes, uint64(550*mib))
			eq(t, "clock events", strings.Join(g.ClockEvents.Reasons, ","), "gpu_idle")
		},
		"telegraf_rtx3080_595.58.03_nvidia-smi-q-x.xml": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "memory used", g.Memory.UsedBytes, uint64(9184*mib))
			eq(t, "processes known, none listed", g.ProcessesKnown && len(g.Processes) == 0 && len(g.GraphicsProcesses) == 0, true)
			eq(t, "utilisation", g.Utilization.GPUPercent, uint32(65))
			eq(t, "pstate", *g.PerformanceState, 2)
			eq(t, "remapped rows unknown", g.RemappedRows == nil && g.RetiredPages == nil, true)
		},
		"telegraf_quadrop400_418.43_nvidia-smi-q-x.xml": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "driver", n.NVML.DriverVersion, "418.43")
			eq(t, "name", g.Name, "Quadro P400")
			eq(t, "ecc unknown", g.ECC == nil, true)
			eq(t, "pages unknown", g.RetiredPages == nil, true)
			eq(t, "power unknown", g.Power == nil, true)
			eq(t, "pcie", pcie(g), "Gen1 x16 of Gen3 x16")
			eq(t, "memory total", g.Memory.TotalBytes, uint64(1998*mib))
		},
		"telegraf_gtx1660ti_418.43_nvidia-smi-q-x.xml": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "name", g.Name, "Graphics Device")
			eq(t, "ecc unknown", g.ECC == nil, true)
			eq(t, "power", g.Power.DrawWatts, 8.93)
			eq(t, "limit", *g.Power.LimitWatts, 130.0)
			eq(t, "temperature", g.Thermal.TemperatureC, 40)
		},
		"telegraf_rtx4000sffada_595.84_nvidia-smi-q-x.xml": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "ecc off", g.ECC.EnabledCurrent, false)
			eq(t, "remapped rows", *g.RemappedRows, state.RemappedRows{})
			eq(t, "persistence", *g.PersistenceMode, true)
			eq(t, "compute", len(g.Processes), 2) // python (C) and chromium (C+G: NVML lists it among compute processes)
			eq(t, "graphics", len(g.GraphicsProcesses), 2)
			eq(t, "limit", *g.Power.LimitWatts, 70.0)
		},
		"azhpc_a100x8_460.32.03_nvidia-smi-q.txt": func(t *testing.T, n *state.Node) {
			eq(t, "driver", n.NVML.DriverVersion, "460.32.03")
			for _, g := range n.NVML.GPUs {
				eq(t, "name", g.Name, "A100-SXM4-40GB")
				eq(t, "pcie", pcie(g), "Gen4 x16 of Gen4 x16")
				eq(t, "remapped rows", *g.RemappedRows, state.RemappedRows{})
				eq(t, "ecc volatile", *g.ECC.Volatile.Uncorrected, uint64(0))
				eq(t, "mig off", g.MIG != nil && !g.MIG.Current && !g.MIG.Pending, true)
				eq(t, "persistence", *g.PersistenceMode, false)
				eq(t, "limit", *g.Power.LimitWatts, 400.0)
				eq(t, "shutdown", *g.Thermal.ShutdownC, 92)
				eq(t, "slowdown", *g.Thermal.SlowdownC, 89)
			}
			eq(t, "last bus", n.NVML.GPUs[7].PCIBusID, "000e:00:00.0")
		},
		"azurehpc_8gpu_535.86.10_nvidia-smi-q-d-page-retirement.txt": func(t *testing.T, n *state.Node) {
			for i, g := range n.NVML.GPUs {
				eq(t, "retired pages", *g.RetiredPages, state.RetiredPages{})
				eq(t, "not in the capture", g.Name == "" && g.Memory == nil && g.ECC == nil && g.PersistenceMode == nil && g.PCIe == nil, true)
				eq(t, "bus", g.PCIBusID, []string{"0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008"}[i]+":00:00.0")
			}
		},
		"mangohud_geforce_495.44_nvidia-smi-q-d-performance.txt": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "driver", n.NVML.DriverVersion, "495.44")
			eq(t, "clock events", strings.Join(g.ClockEvents.Reasons, ","), "gpu_idle")
			eq(t, "pstate", *g.PerformanceState, 0)
			eq(t, "bus", g.PCIBusID, "0000:0e:00.0")
		},
		"gls_a100x4_555.42.02_nvidia-smi-q.txt": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs
			eq(t, "gpu 1", g[1].PCIBusID, "0000:9e:00.0")
			eq(t, "gpu 1 rows", *g[1].RemappedRows, state.RemappedRows{Correctable: 1, Pending: true})
			eq(t, "gpu 1 dram corrected", *g[1].ECC.Aggregate.Corrected, uint64(353))
			eq(t, "gpu 1 uncorrected", *g[1].ECC.Volatile.Uncorrected, uint64(0))
			eq(t, "gpu 2 rows", *g[2].RemappedRows, state.RemappedRows{Correctable: 1})
			eq(t, "gpu 0 rows", *g[0].RemappedRows, state.RemappedRows{})
			eq(t, "sram threshold", g[1].SRAMECC != nil && !g[1].SRAMECC.ThresholdExceeded, true)
			eq(t, "reserved", g[0].Memory.ReservedBytes, uint64(763*mib))
			eq(t, "memory temp", *g[0].Thermal.MemoryTemperatureC, 43)
			eq(t, "memory max", *g[0].Thermal.MemoryMaxC, 95)
			eq(t, "limit", *g[3].Power.LimitWatts, 500.0)
		},
		"gls_v100x8_550.127.05_nvidia-smi-q.txt": func(t *testing.T, n *state.Node) {
			for i, g := range n.NVML.GPUs {
				eq(t, "name", g.Name, "Tesla V100-SXM2-16GB")
				want := state.RetiredPages{}
				if i == 4 {
					want.SingleBitECC = 1 // 00:08.0: one page retired for repeated single-bit errors, already blacklisted
				}
				eq(t, "pages", *g.RetiredPages, want)
				eq(t, "no remapper", g.RemappedRows == nil, true)
				eq(t, "persistence", *g.PersistenceMode, true)
			}
			eq(t, "last bus", n.NVML.GPUs[7].PCIBusID, "0000:00:0b.0")
		},
		"gls_gtx680_470.256.02_nvidia-smi-q.txt": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "name", g.Name, "NVIDIA GeForce GTX 680")
			eq(t, "pcie unknown", g.PCIe == nil, true)
			eq(t, "clock events unknown", g.ClockEvents == nil, true)
			eq(t, "thresholds unknown", g.Thermal.SlowdownC == nil && g.Thermal.ShutdownC == nil, true)
			eq(t, "temperature", g.Thermal.TemperatureC, 35)
			eq(t, "power unknown", g.Power == nil, true)
			for _, c := range []struct {
				call    string
				printed string
				line    int
			}{{"nvmlDeviceGetCurrentClocksEventReasons", "N/A", 69}, {"nvmlDeviceGetTemperatureThreshold", "N/A", 142}} {
				u := n.CaptureUnknownFor(0, c.call)
				if u == nil {
					t.Errorf("%s: not recorded as unknown", c.call)
					continue
				}
				eq(t, c.call+" printed", u.Printed, c.printed)
				eq(t, c.call+" line", u.Line, c.line)
			}
		},
		"gls_gh200_550.127.05_nvidia-smi-q.txt": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "name", g.Name, "NVIDIA GH200 480GB")
			eq(t, "power", g.Power.DrawWatts, 87.88) // the GPU's, not the module's 169.77 W
			eq(t, "limit", *g.Power.LimitWatts, 700.0)
			eq(t, "rows", *g.RemappedRows, state.RemappedRows{Uncorrectable: 1}) // remapped at the last reset: Pending No
			eq(t, "lifetime uncorrected", *g.ECC.Aggregate.Uncorrected, uint64(1))
			eq(t, "since reset uncorrected", *g.ECC.Volatile.Uncorrected, uint64(0))
			eq(t, "architecture", g.Architecture, "hopper")
		},
		"gls_rtx5090_570.124.06_nvidia-smi-q.txt": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "pcie", pcie(g), "Gen1 x8 of Gen5 x16")
			eq(t, "power", g.Power.DrawWatts, 24.05) // Average Power Draw (R570)
			eq(t, "limit", *g.Power.LimitWatts, 575.0)
			eq(t, "ecc unknown", g.ECC == nil, true)
			eq(t, "reasons", strings.Join(g.ClockEvents.Reasons, ","), "sw_power_cap") // at P8, 0 %: idle by gpuIdle's utilisation rule
			eq(t, "pstate", *g.PerformanceState, 8)
		},
		"netdata_a100-mig-vm_510.47.03_nvidia-smi-q-x.xml": func(t *testing.T, n *state.Node) {
			g := n.NVML.GPUs[0]
			eq(t, "mig", *g.MIG, state.MIG{Current: true, Pending: true})
			eq(t, "ecc on", g.ECC == nil || g.ECC.EnabledCurrent, true)
			eq(t, "remapped rows unknown", g.RemappedRows == nil, true)
			eq(t, "pcie", pcie(g), "Gen4 x16 of Gen4 x16")
			eq(t, "persistence", *g.PersistenceMode, false)
			eq(t, "limit", *g.Power.LimitWatts, 400.0)
			eq(t, "slowdown", *g.Thermal.SlowdownC, 89)
			eq(t, "clock events", strings.Join(g.ClockEvents.Reasons, ","), "")
		},
	}
	for file, check := range cases {
		t.Run(file, func(t *testing.T) { check(t, parse(t, file)) })
	}
}

func pcie(g state.GPU) string {
	if g.PCIe == nil {
		return "unknown"
	}
	p := g.PCIe
	return fmt.Sprintf("Gen%d x%d of Gen%d x%d", p.CurrentGen, p.CurrentWidth, p.MaxGen, p.MaxWidth)
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
