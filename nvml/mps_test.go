package nvml

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// nvmlDeviceGetMPSComputeRunningProcesses: the driver's own list of a GPU's
// MPS clients, which job.gpu_sharing judges. Each process it names is
// marked MPSClient (and added when the compute list did not name it); an
// answer that is not SUCCESS leaves the list "not read" (MPSProcessesKnown
// false), never "no MPS clients".
func TestCollectMPSClients(t *testing.T) {
	procs := func(pids ...uint32) func() ([]gonvml.ProcessInfo, gonvml.Return) {
		return func() ([]gonvml.ProcessInfo, gonvml.Return) {
			var out []gonvml.ProcessInfo
			for _, p := range pids {
				out = append(out, gonvml.ProcessInfo{Pid: p, UsedGpuMemory: 1 << 30})
			}
			return out, gonvml.SUCCESS
		}
	}
	answer := func(ret gonvml.Return) func() ([]gonvml.ProcessInfo, gonvml.Return) {
		return func() ([]gonvml.ProcessInfo, gonvml.Return) { return nil, ret }
	}
	release := make(chan struct{})
	defer close(release)
	for _, tc := range []struct {
		name    string
		spec    string
		gpu     int
		mut     func(d *server.Device, srv *server.Server, calls *atomic.Int32)
		known   bool
		clients []uint32 // PIDs marked MPSClient
		plain   []uint32 // PIDs listed, not MPS clients
		unsupp  bool     // the call filed as unsupported
		errTO   *bool    // the call filed as an error (timeout or not)
	}{
		{name: "simulated node: no MPS, read", spec: "dgx-h100", known: true},
		// sim "mps": the server in the compute list, its clients in both
		// (nvidia-smi's M+C).
		{name: "simulated mps fault", spec: "dgx-h100:mps=1", gpu: 1, known: true,
			clients: []uint32{424301, 424302}, plain: []uint32{424300}},
		{name: "client the compute list does not name is added", spec: "dgx-h100",
			mut: func(d *server.Device, _ *server.Server, _ *atomic.Int32) {
				d.GetComputeRunningProcessesFunc = procs(100)
				d.GetMPSComputeRunningProcessesFunc = procs(101, 102)
			}, known: true, clients: []uint32{101, 102}, plain: []uint32{100}},
		{name: "NOT_SUPPORTED is not read", spec: "dgx-h100",
			mut: func(d *server.Device, _ *server.Server, _ *atomic.Int32) {
				d.GetComputeRunningProcessesFunc = procs(100, 101)
				d.GetMPSComputeRunningProcessesFunc = answer(gonvml.ERROR_NOT_SUPPORTED)
			}, plain: []uint32{100, 101}, unsupp: true},
		{name: "NO_PERMISSION is an error, not read", spec: "dgx-h100",
			mut: func(d *server.Device, _ *server.Server, _ *atomic.Int32) {
				d.GetComputeRunningProcessesFunc = procs(100, 101)
				d.GetMPSComputeRunningProcessesFunc = answer(gonvml.ERROR_NO_PERMISSION)
			}, plain: []uint32{100, 101}, errTO: new(false)},
		{name: "entry point missing: not called, unsupported", spec: "dgx-h100",
			mut: func(d *server.Device, srv *server.Server, calls *atomic.Int32) {
				srv.LookupSymbolFunc = func(name string) error {
					if name == "nvmlDeviceGetMPSComputeRunningProcesses" {
						return gonvml.ERROR_FUNCTION_NOT_FOUND
					}
					return nil
				}
				d.GetMPSComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
					calls.Add(1)
					return nil, gonvml.SUCCESS
				}
			}, unsupp: true},
		{name: "hung call: a timeout, not read", spec: "dgx-h100",
			mut: func(d *server.Device, _ *server.Server, _ *atomic.Int32) {
				d.GetMPSComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
					<-release
					return nil, gonvml.SUCCESS
				}
			}, errTO: new(true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := simSystem(t, tc.spec)
			var calls atomic.Int32
			if tc.mut != nil {
				tc.mut(sys.Devices[tc.gpu], sys.Server, &calls)
			}
			g := Collect(context.Background(), sys.Lib, Options{CallTimeout: 500 * time.Millisecond}).GPUs[tc.gpu]
			if g.MPSProcessesKnown != tc.known {
				t.Errorf("MPSProcessesKnown = %v, want %v", g.MPSProcessesKnown, tc.known)
			}
			var clients, plain []uint32
			for _, p := range g.Processes {
				if p.MPSClient {
					clients = append(clients, p.PID)
				} else {
					plain = append(plain, p.PID)
				}
			}
			if !slices.Equal(clients, tc.clients) || !slices.Equal(plain, tc.plain) {
				t.Errorf("MPS clients %v, plain %v; want %v, %v", clients, plain, tc.clients, tc.plain)
			}
			if got := slices.Contains(g.Unsupported, mpsCall); got != tc.unsupp {
				t.Errorf("unsupported %v, want %s there: %v", g.Unsupported, mpsCall, tc.unsupp)
			}
			e := g.ErrorFor(mpsCall)
			switch {
			case tc.errTO == nil && e != nil:
				t.Errorf("error %+v, want none", e)
			case tc.errTO != nil && (e == nil || e.Timeout != *tc.errTO):
				t.Errorf("errors %+v, want %s (timeout %v)", g.Errors, mpsCall, *tc.errTO)
			}
			if calls.Load() != 0 {
				t.Errorf("the missing entry point was called %d times", calls.Load())
			}
		})
	}
}
