package collect

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gpuprobe/gpuprobe/jobperf"
	"github.com/gpuprobe/gpuprobe/ncclras"
	"github.com/gpuprobe/gpuprobe/state"
)

// RASTimeout bounds one NCCL RAS query, connect to last byte. RAS itself
// is told to wait RASPeerTimeout for the job's other processes (its own
// default, RAS_COLLECTIVE_LEG_TIMEOUT_SEC), and may take that again to
// forward the answers (RAS_COLLECTIVE_EXTRA_TIMEOUT_SEC).
const (
	RASTimeout     = 12 * time.Second
	RASPeerTimeout = 5 * time.Second
)

// startRAS asks NCCL's RAS beside the sampling window, at the address the
// job's tasks were given (NCCL_RAS_ADDR, else NCCL's default), and returns
// a function that waits for the answer (bounded by RASTimeout and the
// run's deadline).
func startRAS(ctx context.Context, o JobOptions, first *jobperf.Sample) func() *state.HangRAS {
	pids := make([]int32, 0, len(first.Tasks))
	for pid := range first.Tasks {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	addr, from := ncclras.DefaultAddr, "default"
	jobUID := ""
	for _, pid := range pids {
		t := first.Tasks[pid]
		if jobUID == "" && int(pid) != os.Getpid() {
			jobUID = t.UID
		}
		if t.NCCLRASEnable == "0" {
			r := &state.HangRAS{AddrFrom: fmt.Sprintf("environment of pid %d", pid),
				Error: fmt.Sprintf("not asked: NCCL_RAS_ENABLE=0 in the environment of pid %d (RAS is off for the job)", pid)}
			return func() *state.HangRAS { return r }
		}
		if t.NCCLRASAddr != "" && from == "default" {
			addr, from = t.NCCLRASAddr, fmt.Sprintf("NCCL_RAS_ADDR of pid %d", pid)
		}
	}
	dial, err := ncclras.ValidateAddr(addr)
	if err != nil {
		r := &state.HangRAS{Addr: addr, AddrFrom: from, Error: "not asked: " + from + " is not a loopback host:port: " + err.Error()}
		return func() *state.HangRAS { return r }
	}
	timeout := RASTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	done := make(chan *state.HangRAS, 1)
	go func() {
		owner := ""
		if o.Sources.RASDial == nil { // this machine's port: who holds it
			owner = ncclras.ListenerUID(ctx, o.procfs(), dial)
		}
		r := ncclras.Query(ctx, dial, ncclras.Options{Timeout: timeout, RASTimeout: RASPeerTimeout,
			Dial: ncclras.Dialer(o.Sources.RASDial), LocalAddrs: ncclras.LocalAddrs()})
		r.AddrFrom, r.ListenerUID, r.JobUID = from, owner, jobUID
		done <- r
	}()
	return func() *state.HangRAS { return <-done }
}
