package exporter

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// gpu_fabric_registered is check.FabricRegistered, the reading fabric.state
// passes before it looks at the health mask; the exporter does not re-derive it.
func TestFabricRegisteredGauge(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *state.Fabric
		want string // "" : no series
	}{
		{"no fabric info", nil, ""},
		{"not supported", &state.Fabric{State: "not_supported"}, ""},
		{"completed with success", &state.Fabric{State: "completed", Status: "success"}, "1"},
		{"completed with a failure", &state.Fabric{State: "completed", Status: "failure"}, "0"},
		{"in progress", &state.Fabric{State: "in_progress"}, "0"},
		{"not started", &state.Fabric{State: "not_started"}, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := state.GPU{Index: 0, UUID: "GPU-a", PCIBusID: "00000000:10:00.0", Fabric: tc.f}
			n := &state.Node{NVML: &state.NVML{Available: true, DeviceCount: 1, GPUs: []state.GPU{g}}}
			e := New(false)
			e.Update(&Snapshot{Node: n, Success: true, Config: check.DefaultConfig()})
			out, err := testutil.CollectAndFormat(e, expfmt.TypeTextPlain, "gpuprobe_gpu_fabric_registered")
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "gpuprobe_gpu_fabric_registered{") {
					got = line[strings.LastIndexByte(line, ' ')+1:]
				}
			}
			if got != tc.want {
				t.Errorf("gauge %q, want %q (check.FabricRegistered says %v)\n%s", got, tc.want, check.FabricRegistered(tc.f), out)
			}
		})
	}
}
