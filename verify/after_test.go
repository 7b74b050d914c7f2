package verify

import (
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

func u64(v uint64) *uint64 { return &v }

// AfterRun fills ECC growth, new Xids of the GPU and loss from the two
// collections around the run.
func TestVerifyAfterRun(t *testing.T) {
	gpu := func(unc uint64, lost bool) state.GPU {
		return state.GPU{Index: 1, PCIBusID: "0000:3b:00.0", Lost: lost, ECC: &state.ECC{Volatile: state.ECCCounts{Uncorrected: u64(unc)}}}
	}
	old := state.XIDEvent{Code: 13, BusID: "0000:3b:00", Seq: 5}
	before := &state.Node{NVML: &state.NVML{GPUs: []state.GPU{gpu(1, false)}}, Kernel: &state.Kernel{XIDs: []state.XIDEvent{old}}}
	after := &state.Node{NVML: &state.NVML{GPUs: []state.GPU{gpu(3, true)}}, Kernel: &state.Kernel{XIDs: []state.XIDEvent{
		old, {Code: 79, BusID: "0000:3b:00", Seq: 9, Time: time.Now()}, {Code: 48, BusID: "0000:5d:00", Seq: 10}}}}
	v := &state.Verify{Measurements: []state.Measurement{{Kind: state.MeasureCompute, GPU: 1, Peer: -1}, {Kind: state.MeasureH2D, GPU: 1, Peer: -1}}}
	AfterRun(v, before, after)
	w := v.Measurements[0].Load
	if w == nil || w.ECCDelta != 2 || len(w.XIDs) != 1 || w.XIDs[0] != 79 || !w.Lost {
		t.Fatalf("load watch %+v: want ECC +2, Xid 79 only, lost", w)
	}
	if v.Measurements[1].Load != nil {
		t.Error("a copy got a load watch")
	}
}
