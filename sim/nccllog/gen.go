// Package gen writes synthetic NCCL_DEBUG=INFO logs of a multi-node job,
// for benchmarking the analyzer on inputs far larger than real excerpts.
//
// Two shapes (Options.Mix). "train", the default, imitates one job: every rank initialises a world communicator
// (version, network and GDR lines, ring listings, connection lines, init
// timings), then trains, printing NCCL_DEBUG_SUBSYS=COLL lines for its
// collectives interleaved with the framework's own output, and every so
// often splits tensor-parallel communicators, which prints another round of
// init and connection lines. Records carry a launcher prefix (srun
// --label by default) and ranks' output is interleaved the way a shared
// stream interleaves it. Most of its bytes are per-operation opCount lines.
//
// "init" is connection-heavy, the shape of a job that sets up many
// communicators and peer-to-peer connections (all-to-all, pipeline
// stages): every rank prints from one fixed host:pid:tid, and almost every
// line is a distinct connection line ("Channel NN/0 : a[d] -> b[e] [send]
// via NET/IB/d/GDRDMA" across nodes, "… via P2P/IPC/read" within one),
// interleaved across ranks, with a round of NET/IB, Trees, channel-count
// and Init COMPLETE lines for every new communicator. Real init logs are
// made of such lines.
package nccllog

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
)

// Options describe the job the log comes from.
type Options struct {
	Size      int64  // stop after about this many bytes
	Ranks     int    // total ranks (default 512)
	Hosts     int    // nodes; Ranks must divide evenly (default 64)
	Seed      uint64 // same seed, same log
	Prefix    string // launcher prefix: "srun" (default), "mpi", "none"
	Transport string // inter-node transport: "gdrdma" (default), "ib", "socket", "ofi"
	Mix       string // "train" (default) or "init"
}

func (o *Options) defaults() error {
	if o.Ranks == 0 {
		o.Ranks = 512
	}
	if o.Hosts == 0 {
		o.Hosts = 64
	}
	if o.Prefix == "" {
		o.Prefix = "srun"
	}
	if o.Transport == "" {
		o.Transport = "gdrdma"
	}
	if o.Mix == "" {
		o.Mix = "train"
	}
	switch o.Mix {
	case "train", "init":
	default:
		return fmt.Errorf("gen: unknown mix %q (train or init)", o.Mix)
	}
	if o.Ranks <= 0 || o.Hosts <= 0 || o.Ranks%o.Hosts != 0 {
		return fmt.Errorf("gen: %d ranks do not divide over %d hosts", o.Ranks, o.Hosts)
	}
	switch o.Transport {
	case "gdrdma", "ib", "socket", "ofi":
	default:
		return fmt.Errorf("gen: unknown transport %q", o.Transport)
	}
	switch o.Prefix {
	case "srun", "mpi", "none":
	default:
		return fmt.Errorf("gen: unknown prefix %q", o.Prefix)
	}
	return nil
}

type rank struct {
	id      int
	host    string
	hostIdx int
	local   int
	pid     int
	mainTid int
	initTid int
	comm    uint64
}

type writer struct {
	o     Options
	w     *bufio.Writer
	n     int64
	rnd   *rand.Rand
	ranks []rank
	line  []byte
	ppn   int
	step  int
	op    uint64
}

// Write writes a log of about o.Size bytes to w.
func Write(w io.Writer, o Options) (int64, error) {
	if err := o.defaults(); err != nil {
		return 0, err
	}
	g := &writer{o: o, w: bufio.NewWriterSize(w, 1<<20), rnd: rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15)), ppn: o.Ranks / o.Hosts}
	g.ranks = make([]rank, o.Ranks)
	for i := range g.ranks {
		h := i / g.ppn
		pid := 100000 + g.rnd.IntN(800000)
		g.ranks[i] = rank{
			id: i, host: fmt.Sprintf("gpu-a%03d-node%02d", h/8, h%8), hostIdx: h, local: i % g.ppn,
			pid: pid, mainTid: pid, initTid: pid + 40 + g.rnd.IntN(200), comm: 0x55d000000000 + uint64(g.rnd.IntN(1<<30))<<4,
		}
	}
	if o.Mix == "init" {
		g.initMix()
		if err := g.w.Flush(); err != nil {
			return g.n, fmt.Errorf("gen: %w", err)
		}
		return g.n, nil
	}
	g.initWorld()
	for g.n < o.Size {
		g.trainSteps(20)
		if g.step%400 == 0 {
			g.splitTP()
		}
	}
	if err := g.w.Flush(); err != nil {
		return g.n, fmt.Errorf("gen: %w", err)
	}
	return g.n, nil
}

// begin starts a record of rank r: launcher prefix and NCCL envelope.
func (g *writer) begin(r *rank, tid int) {
	b := g.line[:0]
	switch g.o.Prefix {
	case "srun":
		b = strconv.AppendInt(b, int64(r.id), 10)
		b = append(b, ": "...)
	case "mpi":
		b = append(b, "[1,"...)
		b = strconv.AppendInt(b, int64(r.id), 10)
		b = append(b, "]<stdout>:"...)
	}
	b = append(b, r.host...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(r.pid), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(r.local), 10)
	b = append(b, "] NCCL INFO "...)
	g.line = b
}

func (g *writer) s(s string) { g.line = append(g.line, s...) }
func (g *writer) d(v int)    { g.line = strconv.AppendInt(g.line, int64(v), 10) }
func (g *writer) x(v uint64) { g.line = strconv.AppendUint(g.line, v, 16) }

func (g *writer) end() {
	g.line = append(g.line, '\n')
	n, _ := g.w.Write(g.line)
	g.n += int64(n)
}

func (g *writer) info(r *rank, tid int, msg string) {
	g.begin(r, tid)
	g.s(msg)
	g.end()
}

// foreign writes a line that is not NCCL's.
func (g *writer) foreign(r *rank, text string) {
	b := g.line[:0]
	if g.o.Prefix == "srun" {
		b = strconv.AppendInt(b, int64(r.id), 10)
		b = append(b, ": "...)
	}
	g.line = append(b, text...)
	g.end()
}

func (g *writer) netName() string {
	switch g.o.Transport {
	case "socket":
		return "Socket"
	case "ofi":
		return "AWS Libfabric"
	}
	return "IB"
}

// shuffled calls f for every rank in a random order, as a shared stream
// interleaves their output.
func (g *writer) shuffled(f func(r *rank)) {
	for _, i := range g.rnd.Perm(len(g.ranks)) {
		f(&g.ranks[i])
	}
}

func (g *writer) initWorld() {
	nranks := len(g.ranks)
	g.shuffled(func(r *rank) {
		g.info(r, r.mainTid, "cudaDriverVersion 12040")
		g.info(r, r.mainTid, "NCCL version 2.23.4+cuda12.4")
		g.begin(r, r.mainTid)
		g.s("Bootstrap: Using ib0:10.")
		g.d(r.hostIdx / 200)
		g.s(".")
		g.d(r.hostIdx % 200)
		g.s(".1<0>")
		g.end()
		g.info(r, r.initTid, "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.")
		switch g.o.Transport {
		case "socket":
			g.info(r, r.initTid, "NET/IB : No device found.")
			g.info(r, r.initTid, "NET/Socket : Using [0]eth0:10.1.0.1<0>")
		case "ofi":
			g.info(r, r.initTid, "NET/OFI Selected Provider is efa (found 4 nics)")
		default:
			g.info(r, r.initTid, "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB [RO]; OOB ib0:10.1.0.1<0>")
		}
		g.info(r, r.initTid, "Using non-device net plugin version 0")
		g.info(r, r.initTid, "Using network "+g.netName())
		g.initLine(r, nranks, "START")
		g.info(r, r.initTid, "ncclTopoGetCpuAffinity: Affinity for GPU 1 is 24-46,72-93. (GPU affinity = 24-47,72-95 ; CPU affinity = 24-46,72-93).")
		if g.o.Transport == "gdrdma" || g.o.Transport == "ib" {
			state := "Enabled"
			if g.o.Transport == "ib" {
				state = "Disabled"
			}
			for h := 0; h < 8; h++ {
				g.begin(r, r.initTid)
				g.s("NET/IB : GPU Direct RDMA " + state + " for HCA ")
				g.d(h)
				g.s(" 'mlx5_")
				g.d(h)
				g.s("'")
				g.end()
			}
		}
		g.begin(r, r.initTid)
		g.s("comm 0x")
		g.x(r.comm)
		g.s(" rank ")
		g.d(r.id)
		g.s(" nRanks ")
		g.d(nranks)
		g.s(" nNodes ")
		g.d(g.o.Hosts)
		g.s(" localRanks ")
		g.d(g.ppn)
		g.s(" localRank ")
		g.d(r.local)
		g.s(" MNNVL 0")
		g.end()
		g.begin(r, r.initTid)
		g.s("Trees [0] ")
		g.d((r.id + 1) % nranks)
		g.s("/-1/-1->")
		g.d(r.id)
		g.s("->")
		g.d((r.id + nranks - 1) % nranks)
		g.s(" [1] -1/-1/-1->")
		g.d(r.id)
		g.s("->")
		g.d((r.id + 1) % nranks)
		g.end()
		if r.id == 0 {
			for c := 0; c < 32; c++ {
				g.begin(r, r.initTid)
				g.s("Channel ")
				g.pad2(c)
				g.s("/32 :")
				for i := 0; i < nranks; i++ {
					g.s("    ")
					g.d(i)
				}
				g.end()
			}
		}
		g.info(r, r.initTid, "P2P Chunksize set to 524288")
	})
	g.connections(len(g.ranks), func(i int) *rank { return &g.ranks[i] })
	g.shuffled(func(r *rank) {
		g.info(r, r.initTid, "Connected all rings, use ring PXN 0 GDR 1")
		g.info(r, r.initTid, "Connected all trees")
		g.info(r, r.initTid, "threadThresholds 8/8/64 | 4096/8/64 | 512 | 512")
		g.info(r, r.initTid, "32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer")
		g.info(r, r.initTid, "CC Off, workFifoBytes 1048576")
		g.begin(r, r.initTid)
		g.s("Init timings - ncclCommInitRank: rank ")
		g.d(r.id)
		g.s(" nranks ")
		g.d(nranks)
		g.s(" total 2.31 (kernels 0.41, alloc 0.12, bootstrap 0.83, allgathers 0.05, topo 0.52, graphs 0.04, connections 0.31, rest 0.03)")
		g.end()
		g.initLine(r, nranks, "COMPLETE")
	})
}

// channel starts the connection line "Channel CC/0 : from[dev] -> to[dev]"
// as logged by owner.
func (g *writer) channel(owner *rank, c int, from, to *rank) {
	g.begin(owner, owner.initTid)
	g.s("Channel ")
	g.pad2(c)
	g.s("/0 : ")
	g.d(from.id)
	g.s("[")
	g.d(from.local)
	g.s("] -> ")
	g.d(to.id)
	g.s("[")
	g.d(to.local)
	g.s("]")
}

// initLine writes ncclCommInitRank's "Init START"/"Init COMPLETE" line.
func (g *writer) initLine(r *rank, nranks int, phase string) {
	g.begin(r, r.initTid)
	g.s("ncclCommInitRank comm 0x")
	g.x(r.comm)
	g.s(" rank ")
	g.d(r.id)
	g.s(" nranks ")
	g.d(nranks)
	g.s(" cudaDev ")
	g.d(r.local)
	g.s(" nvmlDev ")
	g.d(r.local)
	g.s(" busId ")
	g.x(uint64(0x18000 + r.local*0x10000))
	g.s(" commId 0x5ae77eb5ea4ec1ee - Init " + phase)
	g.end()
}

func (g *writer) pad2(v int) {
	if v < 10 {
		g.s("0")
	}
	g.d(v)
}

// connections prints the connection lines of a ring over n ranks: P2P to
// the next rank on the node, NET send/receive across node boundaries.
func (g *writer) connections(n int, at func(i int) *rank) {
	suffix := ""
	switch g.o.Transport {
	case "gdrdma", "ofi":
		suffix = "/GDRDMA"
	}
	for c := 0; c < 16; c++ {
		for _, i := range g.rnd.Perm(n) {
			r, next := at(i), at((i+1)%n)
			g.channel(r, c, r, next)
			if next.hostIdx == r.hostIdx {
				g.s(" via P2P/CUMEM/read")
				g.end()
				continue
			}
			g.s(" [send] via NET/" + g.netName() + "/")
			g.d(r.local)
			g.s(suffix)
			g.end()
			g.channel(next, c, r, next)
			g.s(" [receive] via NET/" + g.netName() + "/")
			g.d(next.local)
			g.s(suffix)
			g.end()
		}
	}
}

var collectives = []string{"AllReduce", "AllGather", "ReduceScatter", "Broadcast"}

// trainSteps prints the COLL lines of a few training steps, the
// framework's progress lines and the occasional tuning or warning line.
func (g *writer) trainSteps(steps int) {
	for s := 0; s < steps; s++ {
		g.step++
		ops := 1 + g.rnd.IntN(3)
		for o := 0; o < ops; o++ {
			g.op++
			coll := collectives[g.rnd.IntN(len(collectives))]
			count := 1 << (10 + g.rnd.IntN(16))
			g.shuffled(func(r *rank) {
				g.begin(r, r.mainTid)
				g.s(coll)
				g.s(": opCount ")
				g.x(g.op)
				g.s(" sendbuff 0x7f")
				g.x(uint64(0x3a000000 + r.local*0x1000000))
				g.s(" recvbuff 0x7f")
				g.x(uint64(0x4b000000 + r.local*0x1000000))
				g.s(" count ")
				g.d(count)
				g.s(" datatype 7 op 0 root 0 comm 0x")
				g.x(r.comm)
				g.s(" [nranks=")
				g.d(len(g.ranks))
				g.s("] stream 0x55d0")
				g.x(uint64(0x4e000 + r.local))
				g.end()
				if g.rnd.IntN(8) == 0 {
					g.begin(r, r.mainTid)
					g.d(count * 2)
					g.s(" Bytes -> Algo 1 proto 2 time 412.733643")
					g.end()
				}
			})
		}
		r := &g.ranks[0]
		g.foreign(r, fmt.Sprintf("[2025-03-14 10:%02d:%02d,%03d] [INFO] [train.py:412] step %d | loss %.4f | lr 3.0e-04 | grad_norm 1.%03d | tokens/s 2,481,%03d | mem 61.2 GiB",
			g.step/60%60, g.step%60, g.rnd.IntN(1000), g.step, 2.0+g.rnd.Float64(), g.rnd.IntN(1000), g.rnd.IntN(1000)))
		if g.rnd.IntN(50) == 0 {
			w := &g.ranks[g.rnd.IntN(len(g.ranks))]
			g.foreign(w, "")
			g.begin(w, w.mainTid+7)
			g.line = g.line[:len(g.line)-len("NCCL INFO ")]
			g.s("transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration")
			g.end()
		}
		if g.rnd.IntN(10) == 0 {
			w := &g.ranks[g.rnd.IntN(len(g.ranks))]
			g.foreign(w, "W0314 10:22:31.508000 139871 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 171042 closing signal SIGTERM")
		}
	}
}

// splitTP splits tensor-parallel communicators of one node each: another
// round of init lines and intra-node connections.
func (g *writer) splitTP() {
	for h := 0; h < g.o.Hosts; h++ {
		base := h * g.ppn
		at := func(i int) *rank { return &g.ranks[base+i] }
		for i := 0; i < g.ppn; i++ {
			r := at(i)
			g.begin(r, r.initTid)
			g.s("ncclCommSplit comm 0x")
			g.x(r.comm + uint64(g.step)<<8)
			g.s(" rank ")
			g.d(i)
			g.s(" nranks ")
			g.d(g.ppn)
			g.s(" cudaDev ")
			g.d(r.local)
			g.s(" nvmlDev ")
			g.d(r.local)
			g.s(" busId ")
			g.x(uint64(0x18000 + r.local*0x10000))
			g.s(" commId 0x")
			g.x(0x7a00000000000000 + uint64(g.step)<<16 + uint64(h))
			g.s(" parent 0x")
			g.x(r.comm)
			g.s(" splitCount 1 color 1094795585 key ")
			g.d(i)
			g.s(" - Init COMPLETE")
			g.end()
		}
		for c := 0; c < 8; c++ {
			for i := 0; i < g.ppn; i++ {
				r, next := at(i), at((i+1)%g.ppn)
				g.begin(r, r.initTid)
				g.s("Channel ")
				g.pad2(c)
				g.s("/0 : ")
				g.d(i)
				g.s("[")
				g.d(r.local)
				g.s("] -> ")
				g.d((i + 1) % g.ppn)
				g.s("[")
				g.d(next.local)
				g.s("] via P2P/CUMEM/read")
				g.end()
			}
		}
	}
}

// initMix writes the connection-heavy shape: rounds of peer connections,
// rank r to rank r+k on channels 0..31, for k = 1, 2, …; a new
// communicator's init lines every 64 peer offsets. Every rank prints from
// its one thread (initTid), so the envelope of a rank never changes.
func (g *writer) initMix() {
	n := len(g.ranks)
	g.shuffled(func(r *rank) { g.commInit(r, 0) })
	suffix := "/GDRDMA"
	if g.o.Transport == "ib" || g.o.Transport == "socket" {
		suffix = ""
	}
	for round := 0; g.n < g.o.Size; round++ {
		k := 1 + round%(n-1)
		if round > 0 && round%64 == 0 {
			g.shuffled(func(r *rank) { g.commInit(r, round/64) })
		}
		for c := 0; c < 32 && g.n < g.o.Size; c++ {
			g.shuffled(func(r *rank) {
				to := &g.ranks[(r.id+k)%n]
				g.channel(r, c, r, to)
				if to.hostIdx == r.hostIdx {
					g.s(" via P2P/IPC/read")
					g.end()
					return
				}
				g.s(" [send] via NET/" + g.netName() + "/")
				g.d(r.local)
				g.s(suffix)
				g.end()
				g.channel(to, c, r, to)
				g.s(" [receive] via NET/" + g.netName() + "/")
				g.d(to.local)
				g.s(suffix)
				g.end()
			})
		}
	}
}

// commInit prints the init lines of communicator number i of rank r.
func (g *writer) commInit(r *rank, i int) {
	n := len(g.ranks)
	g.info(r, r.initTid, "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB [RO]; OOB ib0:10.1.0.1<0>")
	g.info(r, r.initTid, "Using network "+g.netName())
	comm := r.comm + uint64(i)<<8
	g.begin(r, r.initTid)
	g.s("comm 0x")
	g.x(comm)
	g.s(" rank ")
	g.d(r.id)
	g.s(" nRanks ")
	g.d(n)
	g.s(" nNodes ")
	g.d(g.o.Hosts)
	g.s(" localRanks ")
	g.d(g.ppn)
	g.s(" localRank ")
	g.d(r.local)
	g.s(" MNNVL 0")
	g.end()
	g.begin(r, r.initTid)
	g.s("Trees [0] ")
	g.d((r.id + 1) % n)
	g.s("/-1/-1->")
	g.d(r.id)
	g.s("->")
	g.d((r.id + n - 1) % n)
	g.s(" [1] -1/-1/-1->")
	g.d(r.id)
	g.s("->")
	g.d((r.id + 1) % n)
	g.end()
	g.info(r, r.initTid, "32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer")
	g.begin(r, r.initTid)
	g.s("ncclCommInitRank comm 0x")
	g.x(comm)
	g.s(" rank ")
	g.d(r.id)
	g.s(" nranks ")
	g.d(n)
	g.s(" cudaDev ")
	g.d(r.local)
	g.s(" nvmlDev ")
	g.d(r.local)
	g.s(" busId ")
	g.x(uint64(0x18000 + r.local*0x10000))
	g.s(" commId 0x")
	g.x(0x5ae77eb5ea4e0000 + uint64(i))
	g.s(" - Init COMPLETE")
	g.end()
}
