package main

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// The simulated node answers NVML's MPS client list: empty by default
// (read, no clients), and with the "mps" fault an MPS server and its two
// clients on the GPU, the clients marked in the snapshot as NVML lists
// them and described from the process table like any GPU process.
func TestSnapshotSimulatedMPS(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		gpu     int
		clients []uint32
		plain   []uint32
	}{
		{"dgx-h100", 1, nil, nil},
		{"dgx-h100:mps=1", 1, []uint32{424301, 424302}, []uint32{424300}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			code, out, errs := runCLI(t, "snapshot", "--simulate", tc.spec)
			if code != 0 {
				t.Fatalf("snapshot exit %d: %s", code, errs)
			}
			var n state.Node
			if err := json.Unmarshal([]byte(out), &n); err != nil {
				t.Fatal(err)
			}
			for _, g := range n.NVML.GPUs {
				if !g.MPSProcessesKnown || slices.Contains(g.Unsupported, "nvmlDeviceGetMPSComputeRunningProcesses") {
					t.Errorf("GPU %d: MPS list not read (unsupported %v, errors %+v)", g.Index, g.Unsupported, g.Errors)
				}
			}
			var clients, plain []uint32
			for _, p := range n.NVML.GPUs[tc.gpu].Processes {
				if p.MPSClient {
					clients = append(clients, p.PID)
					if p.User != "alice" || p.Command != "python" {
						t.Errorf("client %d not described: %+v", p.PID, p)
					}
				} else {
					plain = append(plain, p.PID)
				}
			}
			if !slices.Equal(clients, tc.clients) || !slices.Equal(plain, tc.plain) {
				t.Errorf("GPU %d: MPS clients %v, plain %v; want %v, %v", tc.gpu, clients, plain, tc.clients, tc.plain)
			}
		})
	}
}
