package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// hangGPUTicks is one job GPU over a 5-tick window: utilisation and power
// as a percent of a 700 W limit.
type hangGPUTicks struct{ util, powerPct uint32 }

func hangNode(gpus []hangGPUTicks, ranks []state.HangRank) *state.Node {
	p := &state.JobPerf{JobID: "4242", WindowSeconds: 4, IntervalSeconds: 1, Hang: &state.JobHang{Ticks: 5, Ranks: ranks}}
	for i, g := range gpus {
		jg := state.JobGPU{Index: i, UUID: "GPU-" + itoa(i)}
		for t := 0; t < 5; t++ {
			u, mu := g.util, g.util/10
			w, lim := 700*float64(g.powerPct)/100, 700.0
			sm := uint32(1980)
			jg.Samples = append(jg.Samples, state.GPUSample{At: time.Unix(int64(t), 0), UtilGPUPercent: &u, UtilMemoryPercent: &mu,
				PowerWatts: &w, PowerLimitWatts: &lim, SMClockMHz: &sm})
		}
		p.GPUs = append(p.GPUs, jg)
	}
	return &state.Node{JobPerf: p}
}

// rank is a rank on GPU i that ran cpu CPU-seconds over 4 s in states.
func rank(i int, states string, cpu float64) state.HangRank {
	return state.HangRank{PID: int32(70100 + i), Rank: itoa(8 + i), Comm: "python", GPUs: []int{i}, States: states,
		CPUSeconds: cpu, SeenSeconds: 4, Threads: 12}
}

func TestCheckHang(t *testing.T) {
	spin := hangGPUTicks{99, 25}
	dstate := rank(3, "DDDDD", 0)
	dstate.DTicks, dstate.DThreads, dstate.Wchan = 5, 2, "rpc_wait_bit_killable"
	dstate.DWchans = []string{"rpc_wait_bit_killable", "nfs_wait_bit_killable"}
	dstate.Mounts = []state.HangMount{{Type: "nfs4", Point: "/data"}, {Type: "ext4", Point: "/"}}
	dead := rank(3, "SS", 0)
	dead.Exited, dead.GPUs, dead.SeenSeconds = true, nil, 1
	stopped := rank(1, "TTTTT", 0)
	hostile := rank(2, "DDDDD", 0)
	hostile.DTicks, hostile.GPUs, hostile.Wchan, hostile.Comm = 5, []int{0}, "x\x1b[31m", "evil\x1b]0;pwn\a"
	noRank := rank(0, "SSSSS", 0)
	noRank.Rank = ""

	cases := []struct {
		name    string
		gpus    []hangGPUTicks
		ranks   []state.HangRank
		status  Status
		want    []string
		devices []int
	}{
		{"all wait in NCCL", []hangGPUTicks{spin, spin, spin, spin},
			[]state.HangRank{rank(0, "SSSSS", 0.01), rank(1, "SSSSS", 0), rank(2, "SSSSS", 0), rank(3, "SSSSS", 0)},
			Warn, []string{"all 4 local ranks wait in NCCL for a peer", "not on this node"}, nil},
		{"wait with host spinning", []hangGPUTicks{spin},
			[]state.HangRank{rank(0, "RRRRR", 4)}, Warn, []string{"all 1 local rank wait in NCCL"}, nil},
		{"one rank in D on NFS", []hangGPUTicks{spin, spin, spin, {0, 10}},
			[]state.HangRank{rank(0, "SSSSS", 0), rank(1, "SSSSS", 0), rank(2, "SSSSS", 0), dstate},
			Fail, []string{"rank 11 (pid 70103, GPU 3) stuck on a network filesystem (NFS/Lustre): uninterruptible sleep in rpc_wait_bit_killable (wchan rpc_wait_bit_killable, nfs_wait_bit_killable; files open on nfs4 /data)", "3 local ranks wait in NCCL"}, []int{3}},
		{"one rank exited", []hangGPUTicks{spin, spin, spin, {0, 10}},
			[]state.HangRank{rank(0, "SSSSS", 0), rank(1, "SSSSS", 0), rank(2, "SSSSS", 0), dead},
			Fail, []string{"rank 11 (pid 70103, GPU 3) rank exited", "3 local ranks wait in NCCL"}, []int{3}},
		{"computing", []hangGPUTicks{{97, 85}, {98, 90}},
			[]state.HangRank{rank(0, "RRRRR", 4), rank(1, "RRRRR", 4)},
			Pass, []string{"all 2 local ranks are computing (slow, not hung)"}, nil},
		{"stopped", []hangGPUTicks{spin, {0, 10}},
			[]state.HangRank{rank(0, "SSSSS", 0), stopped},
			Fail, []string{"rank 9 (pid 70101, GPU 1) stopped (state T", "1 local rank waits in NCCL"}, []int{1}},
		// NVML's utilisation is the time a kernel ran: a job of tiny
		// kernels reads 0% too (run7-h100's one-rank NCCL job, ~100 tiny
		// all-reduces a second). The wording says what was seen.
		{"idle GPU, process sleeps", []hangGPUTicks{spin, {0, 10}},
			[]state.HangRank{rank(0, "SSSSS", 0), rank(1, "SSSSS", 0)},
			Fail, []string{"rank 9 (pid 70101, GPU 1) no GPU work seen: the GPU is idle (0% busy) and the process sleeps"}, []int{1}},
		{"idle GPU, CPU busy", []hangGPUTicks{{0, 10}},
			[]state.HangRank{rank(0, "RRRRR", 4)},
			Fail, []string{"no GPU work seen: the GPU is idle (0% busy) while the process uses 1.00 CPU-s/s"}, []int{0}},
		{"a few percent busy is said", []hangGPUTicks{{3, 17}},
			[]state.HangRank{rank(0, "SSSSS", 0)},
			Fail, []string{"no GPU work seen: the GPU is idle (3% busy)"}, []int{0}},
		{"mixed", []hangGPUTicks{spin, {97, 85}},
			[]state.HangRank{rank(0, "SSSSS", 0), rank(1, "RRRRR", 4)},
			Warn, []string{"ranks disagree: 1 waiting, 1 computing"}, nil},
		{"between thresholds", []hangGPUTicks{{70, 50}},
			[]state.HangRank{rank(0, "RRRRR", 4)},
			Warn, []string{"1 unknown"}, nil},
		{"hostile names escaped", []hangGPUTicks{{0, 10}},
			[]state.HangRank{hostile},
			Fail, []string{`wchan x\x1b[31m`}, []int{0}},
		{"rank from PID", []hangGPUTicks{{0, 10}},
			[]state.HangRank{noRank},
			Fail, []string{"pid 70100 (rank unknown, GPU 0)"}, []int{0}},
		{"no ranks", []hangGPUTicks{spin}, nil, Skip, []string{"no rank process"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := checkHang(hangNode(c.gpus, c.ranks), nil)
			all := r.Summary + "\n" + strings.Join(r.Details, "\n")
			if r.Status != c.status {
				t.Errorf("status %s, want %s: %s", r.Status, c.status, all)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Summary, w) {
					t.Errorf("summary %q lacks %q", r.Summary, w)
				}
			}
			if strings.ContainsAny(all, "\x1b\a") {
				t.Errorf("control bytes printed: %q", all)
			}
			var got []int
			for _, d := range r.Devices {
				got = append(got, d.Index)
			}
			if itoaList(got) != itoaList(c.devices) {
				t.Errorf("devices %v, want %v", got, c.devices)
			}
		})
	}
}

func TestCheckHangNotAsked(t *testing.T) {
	n := hangNode([]hangGPUTicks{{99, 25}}, nil)
	n.JobPerf.Hang = nil
	if r := checkHang(n, nil); r.Status != Skip || !strings.Contains(r.Summary, "--hang") {
		t.Errorf("%+v", r)
	}
	if r := checkHang(&state.Node{}, nil); r.Status != Skip {
		t.Errorf("%+v", r)
	}
}

func itoaList(l []int) string {
	var s []string
	for _, i := range l {
		s = append(s, itoa(i))
	}
	return strings.Join(s, ",")
}

// A node with no GPU reading for its ranks (the Slurm e2e's: the GPUs are
// simulated and run nothing): the process side alone.
func TestCheckHangProcessSideOnly(t *testing.T) {
	spinner := func(i int) state.HangRank { r := rank(i, "RRRRR", 4); r.GPUs = nil; return r }
	sleeper := rank(1, "SSSSS", 0)
	sleeper.GPUs, sleeper.Wchan = nil, "pipe_read"
	stopped := rank(1, "TTTTT", 0)
	stopped.GPUs = nil
	for _, c := range []struct {
		name   string
		ranks  []state.HangRank
		status Status
		want   string
	}{
		{"stopped beside a spinner", []state.HangRank{spinner(0), stopped}, Fail, "rank 9 (pid 70101) stopped (state T at every tick"},
		{"asleep beside a spinner", []state.HangRank{spinner(0), sleeper}, Fail, "rank 9 (pid 70101) asleep in pipe_read at every tick, its CPU time still (no GPU reading"},
		// Alone, a sleeping rank cannot be told from one blocked in a CUDA
		// sync: not blamed.
		{"asleep alone", []state.HangRank{sleeper}, Warn, "ranks disagree: 1 asleep"},
		{"spinners only", []state.HangRank{spinner(0), spinner(1)}, Warn, "ranks disagree: 2 cpu-busy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := checkHang(hangNode(nil, c.ranks), nil)
			if r.Status != c.status || !strings.Contains(r.Summary, c.want) {
				t.Errorf("%s %q, want %s %q", r.Status, r.Summary, c.status, c.want)
			}
		})
	}
}

func TestCheckHangRAS(t *testing.T) {
	spin := hangGPUTicks{99, 25}
	waiting := []state.HangRank{rank(0, "SSSSS", 0), rank(1, "SSSSS", 0)}
	remote := &state.HangRAS{Addr: "127.0.0.1:28028", AddrFrom: "default", Answered: true, NCCLVersion: "2.27.3",
		Comms: []state.RASComm{{ID: "0-0", Hash: "9e17", Kind: "INCOMPLETE", MissingRanks: 1,
			Missing: []state.RASRank{{Rank: 512, GPU: "5", PID: 4121, Node: "gpu064\x1b[2J"}}}},
		Unresponsive: []state.RASProcess{{PID: 4121, Node: "gpu064\x1b[2J", GPUs: "5"}}, MissingProcesses: 1}
	lagging := &state.HangRAS{Answered: true, Comms: []state.RASComm{{ID: "0-0", Kind: "MISMATCH", Splits: []state.RASSplit{{
		What: "AllReduce operation counts", Groups: []state.RASRankGroup{{Ranks: 30, Op: 640}, {Ranks: 1, Op: 639,
			Listed: []state.RASRank{{Rank: 77, GPU: "3", PID: 9, Node: "10.0.0.9"}}}}}}}}}
	ahead := &state.HangRAS{Answered: true, Comms: []state.RASComm{{ID: "0-0", Kind: "MISMATCH", Splits: []state.RASSplit{{
		What: "AllGather operation counts", Groups: []state.RASRankGroup{{Ranks: 30, Op: 640}, {Ranks: 2, Op: 641,
			Listed: []state.RASRank{{Rank: 12, PID: 1, Node: "10.0.0.1"}, {Rank: 13, PID: 2, Node: "10.0.0.1"}}}}}}}}}
	dead := &state.HangRAS{Answered: true, Dead: []state.RASProcess{{PID: 3487984, Node: "172.16.64.213", GPUs: "5"}}, DeadProcesses: 1}
	local := &state.HangRAS{Answered: true, Unresponsive: []state.RASProcess{{PID: 70101, Node: "10.0.0.5", GPUs: "1", Local: true}}}
	refused := &state.HangRAS{Addr: "127.0.0.1:28028", Error: "RAS not available (NCCL < 2.24, or NCCL_RAS_ENABLE=0): nothing listens on 127.0.0.1:28028"}
	healthy := &state.HangRAS{Answered: true, Addr: "127.0.0.1:28028", AddrFrom: "default", Groups: []state.RASGroup{{Status: "RUNNING", Errors: "OK"}}}
	stopped := rank(1, "TTTTT", 0)
	foreign := *remote
	foreign.ListenerUID, foreign.JobUID = "4242", "1000"
	own := *remote
	own.ListenerUID, own.JobUID = "1000", "1000"
	for _, c := range []struct {
		name   string
		gpus   []hangGPUTicks
		ranks  []state.HangRank
		ras    *state.HangRAS
		status Status
		want   string
	}{
		{"RAS names a remote rank", []hangGPUTicks{spin, spin}, waiting, remote, Warn,
			`all 2 local ranks wait in NCCL for a peer: the rank they wait on is not on this node (RAS says: rank 512 (GPU 5, pid 4121) on gpu064\x1b[2J unresponsive (missing from communicator #0-0))`},
		{"RAS names a lagging rank", []hangGPUTicks{spin, spin}, waiting, lagging, Warn,
			"(RAS says: rank 77 (GPU 3, pid 9) on 10.0.0.9 behind: launched up to operation 639 of 640 (AllReduce operation counts) (RAS asked once: stuck or slow not known))"},
		// nccl#1911's listing: the two ranks RAS lists are ahead; the 30
		// behind are not listed, and are what is reported.
		{"ranks ahead are not blamed", []hangGPUTicks{spin, spin}, waiting, ahead, Warn,
			"(RAS says: 30 ranks of communicator #0-0 behind: launched up to operation 640 of 641 (AllGather operation counts) (RAS asked once: stuck or slow not known) (RAS did not list them))"},
		{"RAS says dead", []hangGPUTicks{spin, spin}, waiting, dead, Warn,
			"(RAS says: process 3487984 (GPU 5) on 172.16.64.213 dead (unreachable via the RAS network))"},
		{"RAS names this node", []hangGPUTicks{spin, spin}, waiting, local, Warn,
			"yet RAS names a rank on this node's own address: process 70101 (GPU 1) on 10.0.0.5 unresponsive"},
		{"RAS refused", []hangGPUTicks{spin, spin}, waiting, refused, Warn,
			"not on this node (NCCL RAS: RAS not available (NCCL < 2.24, or NCCL_RAS_ENABLE=0): nothing listens on 127.0.0.1:28028)"},
		{"RAS healthy", []hangGPUTicks{spin, spin}, waiting, healthy, Warn, "1 communicator group: no missing, dead or lagging rank"},
		// Another user's process on the port: not the job's RAS.
		{"port held by another user", []hangGPUTicks{spin, spin}, waiting, &foreign, Warn,
			"not on this node (NCCL RAS: the port 127.0.0.1:28028 is held by uid 4242, not the job's user (uid 1000): its answer is not believed)"},
		{"port held by the job's user", []hangGPUTicks{spin, spin}, waiting, &own, Warn, "(RAS says: rank 512 (GPU 5, pid 4121)"},
		{"local culprit and RAS agree", []hangGPUTicks{spin, {0, 10}}, []state.HangRank{rank(0, "SSSSS", 0), stopped}, local, Fail,
			"rank 9 (pid 70101, GPU 1) stopped (state T at every tick: SIGSTOP or a debugger); 1 local rank waits in NCCL; RAS says: process 70101 (GPU 1) on 10.0.0.5 unresponsive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := hangNode(c.gpus, c.ranks)
			n.JobPerf.Hang.RAS = c.ras
			r := checkHang(n, nil)
			all := r.Summary + strings.Join(r.Details, "\n")
			if r.Status != c.status || !strings.Contains(r.Summary, c.want) {
				t.Errorf("%s %q\nwant %s %q", r.Status, r.Summary, c.status, c.want)
			}
			if strings.ContainsAny(all, "\x1b") {
				t.Errorf("RAS text printed unescaped: %q", all)
			}
			if strings.Contains(r.Summary, "rank 12") || strings.Contains(r.Summary, "rank 13") {
				t.Errorf("a rank ahead of the others was blamed: %q", r.Summary)
			}
			if !strings.Contains(strings.Join(r.Details, "\n"), "NCCL RAS: ") {
				t.Errorf("no RAS detail: %q", r.Details)
			}
		})
	}
}

// On a loaded machine a spinning rank gets less than half a CPU: running at
// every tick with CPU time moving still counts as running.
func TestCheckHangProcessSideSharedCPU(t *testing.T) {
	spinner := rank(0, "RRRRR", 0.8) // 0.2 CPU-s/s
	spinner.GPUs = nil
	sleeper := rank(1, "SSSSS", 0)
	sleeper.GPUs, sleeper.Wchan = nil, "wait_for_partner"
	r := checkHang(hangNode(nil, []state.HangRank{spinner, sleeper}), nil)
	if r.Status != Fail || !strings.Contains(r.Summary, "rank 9 (pid 70101) asleep in wait_for_partner") {
		t.Errorf("%s %q", r.Status, r.Summary)
	}
	// A rank that sleeps most of the time and used a little CPU is not
	// running: the sleeper is not blamed beside it.
	dozer := rank(0, "SSSRS", 0.8)
	dozer.GPUs = nil
	if r := checkHang(hangNode(nil, []state.HangRank{dozer, sleeper}), nil); r.Status == Fail {
		t.Errorf("blamed beside a dozing rank: %q", r.Summary)
	}
}

// RAS asked at the start and the end of the window: a count behind that did
// not move is not progressing; one that moved is a slow rank, not blamed.
func TestCheckHangRASTwice(t *testing.T) {
	spin := hangGPUTicks{99, 25}
	waiting := []state.HangRank{rank(0, "SSSSS", 0), rank(1, "SSSSS", 0)}
	lag := func(behind, ahead int64) *state.HangRAS {
		return &state.HangRAS{Answered: true, Comms: []state.RASComm{{ID: "0-0", Hash: "9e17", Kind: "MISMATCH", Splits: []state.RASSplit{{
			What: "AllReduce operation counts", Groups: []state.RASRankGroup{{Ranks: 30, Op: ahead}, {Ranks: 1, Op: behind,
				Listed: []state.RASRank{{Rank: 77, GPU: "3", PID: 9, Node: "10.0.0.9"}}}}}}}}}
	}
	unlisted := func(behind int64) *state.HangRAS {
		return &state.HangRAS{Answered: true, Comms: []state.RASComm{{ID: "0-0", Kind: "MISMATCH", Splits: []state.RASSplit{{
			What: "AllGather operation counts", Groups: []state.RASRankGroup{{Ranks: 30, Op: behind}, {Ranks: 2, Op: behind + 1,
				Listed: []state.RASRank{{Rank: 12}, {Rank: 13}}}}}}}}}
	}
	agreed := &state.HangRAS{Answered: true}
	for _, c := range []struct {
		name        string
		start, end  *state.HangRAS
		want, notIn string
	}{
		{"stuck: the count did not move", lag(639, 640), lag(639, 640),
			"(RAS says: rank 77 (GPU 3, pid 9) on 10.0.0.9 not progressing: at operation 639 at both RAS queries while others reached 640 (AllReduce operation counts))", "slow rank"},
		{"slow: the count moved", lag(630, 640), lag(639, 645),
			"rank 77 (GPU 3, pid 9) on 10.0.0.9 behind but progressing (operation 630, then 639, of 645; AllReduce operation counts): a slow rank, not a stuck one", "not progressing"},
		{"unlisted ranks stuck", unlisted(640), unlisted(640),
			"30 ranks of communicator #0-0 not progressing: at operation 640 at both RAS queries while others reached 641", "slow rank"},
		{"unlisted ranks moved", unlisted(600), unlisted(640),
			"30 ranks of communicator #0-0 behind but progressing (operation 600, then 640, of 641", "not progressing"},
		{"not behind at the first query", agreed, lag(639, 640),
			"behind: launched up to operation 639 of 640 (AllReduce operation counts) (not behind at the first query: stuck or slow not known)", "not progressing"},
		{"first query unanswered", &state.HangRAS{Error: "refused"}, lag(639, 640), "(RAS asked once: stuck or slow not known)", "not progressing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := hangNode([]hangGPUTicks{spin, spin}, waiting)
			n.JobPerf.Hang.RASStart, n.JobPerf.Hang.RAS = c.start, c.end
			r := checkHang(n, nil)
			all := r.Summary + "\n" + strings.Join(r.Details, "\n")
			if r.Status != Warn || !strings.Contains(all, c.want) || strings.Contains(all, c.notIn) {
				t.Errorf("%s %s\nwant %q, not %q", r.Status, all, c.want, c.notIn)
			}
		})
	}
	// A slow rank is not what the job waits on: the summary blames no one.
	n := hangNode([]hangGPUTicks{spin, spin}, waiting)
	n.JobPerf.Hang.RASStart, n.JobPerf.Hang.RAS = lag(630, 640), lag(639, 645)
	if r := checkHang(n, nil); strings.Contains(r.Summary, "RAS says") || !strings.Contains(r.Summary, "no missing, dead or stuck rank; rank 77") {
		t.Errorf("slow rank blamed: %q", r.Summary)
	}
}

// The kernel stacks of a rank in D say what it waits on: a network
// filesystem before the driver. Frames as /proc/PID/stack prints them
// (fixtures and their sources: jobperf/kstack_test.go).
func TestCheckHangKernelStack(t *testing.T) {
	spin, idle := hangGPUTicks{99, 25}, hangGPUTicks{0, 10}
	d := func(wchan string, main []string, threads ...[]string) state.HangRank {
		r := rank(1, "DDDDD", 0)
		r.DTicks, r.DThreads, r.Wchan, r.KernelStack, r.DStacks = 5, 1+len(threads), wchan, main, threads
		return r
	}
	for _, c := range []struct {
		name string
		r    state.HangRank
		want string
	}{
		// microsoft/pai#2117
		{"RPC wait", d("rpc_wait_bit_killable", []string{"rpc_wait_bit_killable [sunrpc]", "__rpc_execute [sunrpc]"}),
			"rank 9 (pid 70101, GPU 1) stuck on a network filesystem (NFS/Lustre): uninterruptible sleep in rpc_wait_bit_killable"},
		// nfs-ganesha#1327: the wchan is generic, the stack says NFS.
		{"NFSv4 open, wchan generic", d("folio_wait_bit_common", []string{"nfs_set_open_stateid_locked [nfsv4]", "update_open_stateid [nfsv4]"}),
			"stuck on a network filesystem (NFS/Lustre): uninterruptible sleep in nfs_set_open_stateid_locked [nfsv4]"},
		{"Lustre client", d("", []string{"ptlrpc_set_wait [ptlrpc]", "ll_file_read [lustre]"}),
			"stuck on a network filesystem (NFS/Lustre): uninterruptible sleep in ptlrpc_set_wait [ptlrpc]"},
		// rwth-i6/returnn#1480: a thread in D under uvm_ioctl.
		{"UVM ioctl in a thread", d("futex_wait_queue", nil, []string{"__mutex_lock.constprop.0", "uvm_page_tree_get_ptes_async [nvidia_uvm]", "uvm_ioctl [nvidia_uvm]"}),
			"stuck in the NVIDIA driver (a GPU ioctl): uninterruptible sleep in uvm_page_tree_get_ptes_async [nvidia_uvm]"},
		{"driver OS layer by wchan", d("os_acquire_mutex", nil), "stuck in the NVIDIA driver (a GPU ioctl): uninterruptible sleep in os_acquire_mutex"},
		// Both: the mount is named, not the GPU.
		{"NFS before the driver", d("uvm_spin_loop", []string{"nvidia_ioctl [nvidia]"}, []string{"nfs_file_read [nfs]"}),
			"stuck on a network filesystem (NFS/Lustre): uninterruptible sleep in nfs_file_read [nfs]"},
		{"neither", d("io_schedule", []string{"io_schedule", "ll_rw_block"}), "stuck in uninterruptible sleep (wchan io_schedule)"},
		{"no stack readable", d("", nil), "stuck in uninterruptible sleep (wchan unreadable)"},
		{"hostile frame", d("", []string{"nfs_\x1b[2Jx"}), `stuck on a network filesystem (NFS/Lustre): uninterruptible sleep in nfs_\x1b[2Jx`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := checkHang(hangNode([]hangGPUTicks{spin, idle}, []state.HangRank{rank(0, "SSSSS", 0), c.r}), nil)
			all := r.Summary + "\n" + strings.Join(r.Details, "\n")
			if r.Status != Fail || !strings.Contains(r.Summary, c.want) {
				t.Errorf("%s %q\nwant %q", r.Status, r.Summary, c.want)
			}
			if strings.Contains(all, "\x1b") {
				t.Errorf("unescaped: %q", all)
			}
			if len(c.r.KernelStack) > 0 && !strings.Contains(all, "kernel stack "+c.r.KernelStack[0]) && c.name != "hostile frame" {
				t.Errorf("kernel stack not in the facts: %q", r.Details)
			}
		})
	}
	// A main thread asleep (S) in the driver is not a rank stuck in it.
	s := rank(1, "SSSSS", 0)
	s.Wchan, s.KernelStack = "futex_wait_queue", []string{"os_wait_interruptible [nvidia]"}
	if what, _ := stuckOn(s); what != "" {
		t.Errorf("a sleeping main thread classified: %q", what)
	}
}

// py-spy's stack is in the facts; its absence is said.
func TestCheckHangPython(t *testing.T) {
	spin := hangGPUTicks{99, 25}
	a, b := rank(0, "SSSSS", 0), rank(1, "SSSSS", 0)
	a.Python = &state.HangPython{Thread: "70100 MainThread", Status: "active", Frames: []string{"all_reduce (torch/distributed/distributed_c10d.py:2501)", "step (train.py:240)"}}
	b.Python = &state.HangPython{Error: "py-spy gave no dump within 5s"}
	n := hangNode([]hangGPUTicks{spin, spin}, []state.HangRank{a, b})
	n.JobPerf.Hang.PySpyError = ""
	all := strings.Join(checkHang(n, nil).Details, "\n")
	for _, w := range []string{"Python (py-spy, thread 70100 MainThread, active): all_reduce (torch/distributed/distributed_c10d.py:2501) < step (train.py:240)",
		"Python stack not read: py-spy gave no dump within 5s"} {
		if !strings.Contains(all, w) {
			t.Errorf("want %q in\n%s", w, all)
		}
	}
	n.JobPerf.Hang.PySpyError = "py-spy not installed (searched /usr/local/bin, /usr/bin, /opt/conda/bin)"
	if all := strings.Join(checkHang(n, nil).Details, "\n"); !strings.Contains(all, "Python stacks: py-spy not installed (searched") {
		t.Errorf("absence not said:\n%s", all)
	}
}

// A kernel spinning at low power is NCCL waiting for a peer only in a
// process that can run NCCL: run7-h100's spin rank (torch.cuda._sleep, a
// busy-wait kernel: 100% busy at 17% of 700 W, the host spinning in
// cudaDeviceSynchronize at 1.00 CPU-s/s; hang/gp-hang-spin.json) was
// called "waiting in NCCL for a peer … not on this node". With NCCL known
// not mapped it is its own kind: neither a waiter nor a culprit.
func TestCheckHangNCCLLibrary(t *testing.T) {
	spin := hangGPUTicks{100, 17}
	with := func(r state.HangRank, lib string) state.HangRank { r.NCCLLibrary = lib; return r }
	for _, c := range []struct {
		name       string
		gpus       []hangGPUTicks
		ranks      []state.HangRank
		status     Status
		want, not  string
		devices    []int
		remedyWant string
	}{
		{"not loaded: a spin kernel, not NCCL", []hangGPUTicks{spin}, []state.HangRank{with(rank(0, "RRRRR", 4), state.NCCLNotLoaded)}, Warn,
			"rank 8 (pid 70100, GPU 0) a kernel spins at low power in a process that has no NCCL library mapped: a kernel polling a flag (NVSHMEM, a custom all-reduce, a spin-wait) or one that does not finish; whether it waits on a peer is not known",
			"NCCL for a peer", []int{0}, "py-spy dump --native"},
		{"not loaded, CPU still", []hangGPUTicks{spin, spin}, []state.HangRank{with(rank(0, "SSSSS", 0), state.NCCLNotLoaded), with(rank(1, "SSSSS", 0), state.NCCLNotLoaded)}, Warn,
			"rank 9 (pid 70101, GPU 1) a kernel spins at low power in a process that has no NCCL library mapped", "not on this node", []int{0, 1}, ""},
		{"loaded: waits in NCCL as before", []hangGPUTicks{spin}, []state.HangRank{with(rank(0, "RRRRR", 4), state.NCCLLoaded)}, Warn,
			"all 1 local rank wait in NCCL for a peer: the rank they wait on is not on this node", "no NCCL library", nil, ""},
		{"not known: as before", []hangGPUTicks{spin}, []state.HangRank{rank(0, "RRRRR", 4)}, Warn,
			"all 1 local rank wait in NCCL for a peer", "no NCCL library", nil, ""},
		{"a value the schema does not know is not known", []hangGPUTicks{spin}, []state.HangRank{with(rank(0, "RRRRR", 4), "no\x1b[2J")}, Warn,
			"all 1 local rank wait in NCCL for a peer", "no NCCL library", nil, ""},
		// Beside NCCL waiters the spinner is neither counted as one nor
		// blamed: the ranks disagree.
		{"beside a waiter", []hangGPUTicks{spin, spin}, []state.HangRank{with(rank(0, "SSSSS", 0), state.NCCLLoaded), with(rank(1, "RRRRR", 4), state.NCCLNotLoaded)}, Warn,
			"ranks disagree: 1 waiting, 1 spinning", "all 2", nil, ""},
		// Beside a culprit it is not one of the NCCL waiters.
		{"beside a stopped rank", []hangGPUTicks{spin, {0, 17}}, []state.HangRank{with(rank(0, "RRRRR", 4), state.NCCLNotLoaded), rank(1, "TTTTT", 0)}, Fail,
			"rank 9 (pid 70101, GPU 1) stopped (state T", "waits in NCCL", []int{1}, ""},
		// A computing GPU is computing, NCCL or not.
		{"not loaded, computing", []hangGPUTicks{{99, 100}}, []state.HangRank{with(rank(0, "RRRRR", 4), state.NCCLNotLoaded)}, Pass,
			"all 1 local ranks are computing", "", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := checkHang(hangNode(c.gpus, c.ranks), nil)
			if r.Status != c.status || !strings.Contains(r.Summary, c.want) || c.not != "" && strings.Contains(r.Summary, c.not) {
				t.Errorf("%s %q\nwant %s %q, not %q", r.Status, r.Summary, c.status, c.want, c.not)
			}
			if strings.Contains(r.Summary+strings.Join(r.Details, "\n"), "\x1b") {
				t.Errorf("control bytes printed")
			}
			var got []int
			for _, d := range r.Devices {
				got = append(got, d.Index)
			}
			if itoaList(got) != itoaList(c.devices) {
				t.Errorf("devices %v, want %v", got, c.devices)
			}
			if !strings.Contains(r.Remedy, c.remedyWant) {
				t.Errorf("remedy %q lacks %q", r.Remedy, c.remedyWant)
			}
		})
	}
}

// perf.hang replayed on what job --hang recorded on a real H100
// (testdata/realgpu-run7-hang, from tools/realgpu/captures/run7-h100/hang):
// each capture's job_perf judged again by this build.
func TestCheckHangRealGPURun7(t *testing.T) {
	load := func(t *testing.T, name string) *state.JobPerf {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "realgpu-run7-hang", name))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			JobPerf *state.JobPerf `json:"job_perf"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc.JobPerf == nil || doc.JobPerf.Hang == nil {
			t.Fatalf("%s: %v", name, err)
		}
		return doc.JobPerf
	}
	for _, c := range []struct {
		file   string
		lib    string // HangRank.NCCLLibrary set before judging ("" as captured)
		status Status
		want   string
		not    string
		remedy string
	}{
		// hang.py MODE=idle: 0% busy at 119 W (17% of 700 W), asleep in
		// hrtimer_nanosleep.
		{"gp-hang-idle.json", "", Fail,
			"pid 743 (rank unknown, GPU 0) no GPU work seen: the GPU is idle (0% busy) and the process sleeps in hrtimer_nanosleep", "stopped launching", ""},
		// MODE=spin: torch.cuda._sleep, 100% busy at 120 W (17%), the host
		// in cudaDeviceSynchronize at 1.00 CPU-s/s. As captured (NCCL not
		// known) it reads as a rank waiting in NCCL; a PyTorch process maps
		// libnccl.so.2 at import (libtorch_cuda.so needs it), so maps would
		// likely have said "loaded" here too. Known not mapped, it is
		// judged apart.
		{"gp-hang-spin.json", "", Warn, "all 1 local rank wait in NCCL for a peer: the rank they wait on is not on this node", "", ""},
		{"gp-hang-spin.json", state.NCCLNotLoaded, Warn,
			"pid 812 (rank unknown, GPU 0) a kernel spins at low power in a process that has no NCCL library mapped", "not on this node", "py-spy dump --native"},
		// MODE=busy: bf16 matmuls, 99-100% busy at 697-699 W, sw_power_cap.
		{"gp-hang-busy.json", "", Pass, "all 1 local ranks are computing (slow, not hung)", "", ""},
		// MODE=nccl: one rank doing a tiny all-reduce and a 10 ms sleep in
		// a loop, progressing, reads 0% busy: a limit of NVML's
		// utilisation. The verdict stays a failure; the wording no longer
		// says the process stopped, and the remedy says what else it may be.
		{"gp-hang-nccl-running.json", "", Fail,
			"pid 944 (rank unknown, GPU 0) no GPU work seen: the GPU is idle (0% busy) and the process sleeps in hrtimer_nanosleep", "stopped launching", "may still run tiny kernels"},
		// The same process after SIGSTOP.
		{"gp-hang-nccl-stopped.json", "", Fail, "pid 944 (rank unknown, GPU 0) stopped (state T at every tick: SIGSTOP or a debugger)", "", ""},
	} {
		t.Run(c.file+"/"+c.lib, func(t *testing.T) {
			p := load(t, c.file)
			for i := range p.Hang.Ranks {
				if p.Hang.Ranks[i].NCCLLibrary != "" {
					t.Fatalf("the capture holds nccl_library %q: update this test", p.Hang.Ranks[i].NCCLLibrary)
				}
				p.Hang.Ranks[i].NCCLLibrary = c.lib
			}
			r := checkHang(&state.Node{JobPerf: p}, nil)
			if r.Status != c.status || !strings.Contains(r.Summary, c.want) || c.not != "" && strings.Contains(r.Summary, c.not) {
				t.Errorf("%s %q\nwant %s %q, not %q", r.Status, r.Summary, c.status, c.want, c.not)
			}
			if !strings.Contains(r.Remedy, c.remedy) {
				t.Errorf("remedy %q lacks %q", r.Remedy, c.remedy)
			}
		})
	}
}
