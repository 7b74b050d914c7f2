package nvsmi_test

import (
	"context"
	"testing"

	"github.com/gpuprobe/gpuprobe/collect"
	simnode "github.com/gpuprobe/gpuprobe/sim/node"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/state"
)

// The simulator's healthy dgx-h100 is compared field by field with real
// HGX H100 captures: the real capture is the reference, not the simulator.
// 535.183.01's GPUs are idle and healthy but for GPU 2 (power brake,
// a process), which is left out; 535.161.08 gives the bus IDs.
func TestSimulatorMatchesRealH100(t *testing.T) {
	spec, err := simulate.Parse("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	src, err := simnode.Sources(spec)
	if err != nil {
		t.Fatal(err)
	}
	sim := collect.Node(context.Background(), collect.Options{Sources: src}).NVML.GPUs
	real := parse(t, "gpud_h100x8_535.183.01_nvidia-smi-q.txt").NVML.GPUs
	buses := parse(t, "gpud_h100x8_535.161.08_nvidia-smi-q.txt").NVML.GPUs
	if len(sim) != len(real) {
		t.Fatalf("%d simulated GPUs, %d real", len(sim), len(real))
	}
	for i := range sim {
		s, r := sim[i], real[i]
		if s.PCIBusID != buses[i].PCIBusID {
			t.Errorf("GPU %d: bus %s, real %s", i, s.PCIBusID, buses[i].PCIBusID)
		}
		if i == 2 {
			continue
		}
		for _, f := range []struct {
			name      string
			sim, real any
		}{
			{"name", s.Name, r.Name},
			{"architecture", s.Architecture, r.Architecture},
			{"memory total", s.Memory.TotalBytes, r.Memory.TotalBytes},
			{"memory reserved", s.Memory.ReservedBytes, r.Memory.ReservedBytes},
			{"memory used", s.Memory.UsedBytes, r.Memory.UsedBytes},
			{"persistence", *s.PersistenceMode, *r.PersistenceMode},
			{"MIG", *s.MIG, *r.MIG},
			{"ECC mode", [2]bool{s.ECC.EnabledCurrent, s.ECC.EnabledPending}, [2]bool{r.ECC.EnabledCurrent, r.ECC.EnabledPending}},
			{"ECC volatile", [2]uint64{*s.ECC.Volatile.Corrected, *s.ECC.Volatile.Uncorrected}, [2]uint64{*r.ECC.Volatile.Corrected, *r.ECC.Volatile.Uncorrected}},
			{"ECC aggregate", [2]uint64{*s.ECC.Aggregate.Corrected, *s.ECC.Aggregate.Uncorrected}, [2]uint64{*r.ECC.Aggregate.Corrected, *r.ECC.Aggregate.Uncorrected}},
			{"remapped rows", *s.RemappedRows, *r.RemappedRows},
			{"retired pages", s.RetiredPages == nil, r.RetiredPages == nil},
			{"clock event mask", s.ClockEvents.Mask, r.ClockEvents.Mask},
			// An idle H100 keeps its link at Gen5 x16 (all 8 of both captures).
			{"PCIe", *pcieOf(s.PCIe), *pcieOf(r.PCIe)},
			{"PCIe replays", *s.PCIe.ReplayCounter, *r.PCIe.ReplayCounter},
			{"power limit", *s.Power.LimitWatts, *r.Power.LimitWatts},
			{"utilization", *s.Utilization, *r.Utilization},
			{"processes", len(s.Processes), len(r.Processes)},
			{"fabric", [2]string{s.Fabric.State, s.Fabric.Status}, [2]string{r.Fabric.State, r.Fabric.Status}},
		} {
			if f.sim != f.real {
				t.Errorf("GPU %d %s: simulated %+v, real %+v", i, f.name, f.sim, f.real)
			}
		}
		// Readings that vary from GPU to GPU: within the real node's spread.
		if d := s.Power.DrawWatts; d < 60 || d > 80 {
			t.Errorf("GPU %d: idle draw %.2f W, real idle H100s draw 67-75 W", i, d)
		}
		if c := s.Thermal.TemperatureC; c < 25 || c > 40 {
			t.Errorf("GPU %d: idle %d °C, real idle H100s read 29-39 °C", i, c)
		}
	}
}

// pcieOf is the link without its replay counter (compared on its own).
func pcieOf(p *state.PCIe) *state.PCIe {
	return &state.PCIe{CurrentGen: p.CurrentGen, MaxGen: p.MaxGen, CurrentWidth: p.CurrentWidth, MaxWidth: p.MaxWidth}
}
