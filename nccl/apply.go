package nccl

import (
	"bytes"
	"slices"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
)

// apply folds one classified, de-duplicated record into the state. ev is
// what classify made of the record's message; apply reads only the fields
// of kind.
func (a *Analyzer) apply(kind Kind, r *rawRecord, ev *event, th *thread, p *process) {
	at := a.cur
	switch kind {
	case KindVersion:
		a.addVersion(p, ev.version, at)
	case KindNetDevices:
		c := a.netClass(ev.net)
		if c == netSocket {
			// NCCL 2.4 prints "NET/Socket : Using …" on IB runs too: the list
			// says which interfaces exist, not which module was chosen.
			a.noteIfs(p, ev.dev)
			if !p.socketDevs.at.valid() {
				p.socketDevs = evidence{at: at, text: safetext.Clip(string(r.msg), 200)}
			}
			return
		}
		if c == netIB && ev.dev.n == 0 {
			// NCCL 2.27+ prints "NET/IB : Using [RO]; OOB eth0:…" with an
			// empty list right after "No device found.": IB has no device.
			return
		}
		p.see(c, strengthInit, at, r.msg)
		p.hcas = max(p.hcas, ev.dev.n)
	case KindNoDevice:
		if a.netClass(ev.net) == netIB && !p.noIB.at.valid() {
			p.noIB = evidence{at: at, text: string(r.msg)}
		}
	case KindNetSelected:
		c := a.netClass(ev.net)
		p.see(c, strengthDecided, at, r.msg)
		if c == netOther || c == netFastSocket {
			p.netName = string(ev.net)
		}
	case KindNetPlugin:
		if !a.netPlugin.at.valid() {
			a.netPlugin = evidence{at: at, text: safetext.Clip(string(r.msg), 200)}
		}
		ev.net = trimANSI(ev.net)
		c := classifyPlugin(ev.net)
		if c != netUnknown {
			p.see(c, strengthPlugin, at, r.msg)
			if c == netOther || c == netFastSocket {
				p.netName = string(ev.net)
			}
		}
	case KindNetMention:
		if c := a.netClass(ev.net); c != netUnknown {
			p.see(c, strengthInit, at, r.msg)
			if c == netOther || c == netFastSocket {
				p.netName = string(ev.net)
			}
		}
	case KindEnv:
		a.applyEnv(p, ev, at, r.msg)
	case KindGDR:
		a.applyGDR(p, &ev.gdr, at, r.msg)
	case KindConnection:
		a.applyConn(p, th, &ev.conn, at, r.msg)
	case KindComm:
		a.applyComm(p, th, &ev.comm, at, r.msg)
	case KindBootstrap:
		a.noteIfs(p, ev.dev)
	case KindChannels:
		a.collnet = a.collnet || ev.collnet > 0
		a.nvls = a.nvls || ev.nvls > 0
	case KindIBVerbsMissing:
		if !p.noIB.at.valid() {
			p.noIB = evidence{at: at, text: string(r.msg)}
		}
		if !a.find.repeat("no_ibverbs", nil, at) {
			a.find.add("no_ibverbs", "", string(r.msg), where(p), at)
		}
	case KindDMABuf:
		if !a.find.repeat("dmabuf", nil, at) {
			a.find.add("dmabuf", "", string(r.msg), where(p), at)
		}
	case KindTrace:
		a.applyTrace(p, &ev.trace, at, r.msg)
	case KindWarn:
		a.applyWarn(p, r, at)
	case KindRingOrder:
		a.listed = max(a.listed, ev.listed)
		if d := prefixDev(r.prefix); ev.listed > p.ring0 && d >= 0 {
			p.ring0, p.ring0Dev = ev.listed, d
		}
	case KindTrees:
		if me, ok := treesSelf(r.msg); ok {
			p.noteTreeRank(me, prefixDev(r.prefix))
		}
		if n := nRanksAfter(r.msg); n > 0 {
			a.addNRanks(n)
		}
		if !a.multiNode.at.valid() && treeBranches(r.msg) {
			a.multiNode = evidence{at: at, text: safetext.Clip(string(r.msg), 200)}
		}
	}
}

// netClass is classifyNet(name), from a memo of recent names: the
// network lines of a job's ranks name the same few modules again and
// again. Invariant: classifyNet depends on the name's bytes alone and an
// entry answers only for the same bytes (8 entries of at most
// netMemoText bytes, in place); TestNetClassMemo holds it.
func (a *Analyzer) netClass(name []byte) netClass {
	var m *netMemoEntry
	if len(name) > 0 {
		m = &a.netMemo[(uint(len(name))^uint(name[len(name)-1]))&uint(len(a.netMemo)-1)]
	} else {
		m = &a.netMemo[0]
	}
	if m.n > 0 && string(m.text[:m.n-1]) == string(name) {
		return m.c
	}
	c := classifyNet(name)
	if len(name) < netMemoText {
		m.n = uint8(copy(m.text[:], name) + 1)
		m.c = c
	}
	return c
}

const netMemoText = 48

// netMemoEntry: text[:n-1] is classified c; n 0: empty.
type netMemoEntry struct {
	n    uint8
	c    netClass
	text [netMemoText]byte
}

// see records evidence that process p uses network class c.
func (p *process) see(c netClass, s uint8, at loc, msg []byte) {
	if c == netUnknown {
		return
	}
	e := &p.net[c]
	if s > e.strength {
		*e = netEvidence{strength: s, at: at, text: safetext.Clip(string(msg), 200)}
	}
}

// classifyPlugin classifies what "NET/Plugin: Loaded net plugin X",
// "P2P plugin X" and "Plugin Path : X" name.
func classifyPlugin(name []byte) netClass {
	switch {
	case bytes.Contains(name, []byte("rdma_sharp")), bytes.Contains(name, []byte("hpcx")):
		return netIB
	case bytes.Contains(name, []byte("ofi")):
		return netOFI
	case bytes.HasSuffix(name, []byte(".so")):
		return netUnknown // a path that says nothing about the module
	}
	return classifyNet(name)
}

func (a *Analyzer) noteIfs(p *process, d devList) {
	if d.n == 0 {
		return
	}
	if d.loopback {
		p.loIf = true
	} else {
		p.nonLoIf = true
	}
}

func (a *Analyzer) addVersion(p *process, v []byte, at loc) {
	if !containsBytes(p.versions, v) && len(p.versions) < maxVersions {
		p.versions = append(p.versions, string(v))
	}
	if !containsBytes(a.versions, v) && len(a.versions) < maxVersions {
		a.versions = append(a.versions, string(v))
	}
}

func containsBytes(list []string, b []byte) bool {
	for _, s := range list {
		if s == string(b) {
			return true
		}
	}
	return false
}

func (a *Analyzer) applyEnv(p *process, ev *event, at loc, msg []byte) {
	name, val := ev.env.name, ev.env.value
	// A variable the process already printed with this value changes
	// nothing: its value was offered to envGlobal then (and a set that
	// was full, or missing, then still is), ibOff was set then, and see
	// keeps the strongest evidence. Every replica of the real shape past
	// maxProcesses prints the job's variables again into the overflow
	// process: the look-up spares two strings built and two map writes a
	// line, −1.0% of all instructions (docs/nccl.md). TestEnvRepeat
	// holds it.
	if v, ok := p.env[string(name)]; ok && v == string(val) {
		return
	}
	if p.env == nil {
		p.env = make(map[string]string)
	}
	if len(p.env) < maxEnvPerProc {
		p.env[string(name)] = string(val)
	}
	g := a.envGlobal[string(name)]
	if g == nil && len(a.envGlobal) < 4*maxEnvPerProc {
		g = make(map[string]bool)
		a.envGlobal[string(name)] = g
	}
	if g != nil && len(g) < 8 && !g[string(val)] {
		g[string(val)] = true
	}
	switch string(name) {
	case "NCCL_IB_DISABLE":
		if string(val) == "1" && !p.ibOff.at.valid() {
			p.ibOff = evidence{at: at, text: string(msg)}
		}
	case "NCCL_NET":
		p.see(classifyNet(val), strengthInit, at, msg)
	}
}

func (a *Analyzer) applyGDR(p *process, g *gdrLine, at loc, msg []byte) {
	c := a.netClass(g.net)
	if c == netSocket || c == netIB {
		// NCCL prints the decision for the module it selected.
		p.see(c, strengthInit, at, msg)
	}
	if g.enabled {
		p.gdrOn = true
		return
	}
	if c == netSocket {
		return // TCP never does GDR; the line only names the module
	}
	p.gdrOffN++
	if g.hca >= 0 && g.hca < 64 {
		p.gdrOff |= 1 << uint(g.hca)
	}
	code := "gdr_disabled"
	switch {
	case g.noModule:
		code = "gdr_no_module"
	case g.distance:
		code = "gdr_distance"
	}
	if !slices.Contains(p.gdrWhy, code) {
		p.gdrWhy = append(p.gdrWhy, code)
	}
	if !a.find.repeat(code, nil, at) {
		a.find.add(code, "", string(msg), where(p), at)
	}
}

// applyConn counts a connection line for its rank and for the log.
func (a *Analyzer) applyConn(p *process, th *thread, c *connInfo, at loc, msg []byte) {
	// The printing rank owns the line: the sender, except for NET [receive].
	me, peer := c.from, c.to
	if c.dir == dirRecv {
		me, peer = c.to, c.from
	}
	a.ranks.set(me)
	a.maxRank = max(a.maxRank, c.from, c.to)
	if n := nRanksSuffix(msg); n > 0 {
		a.addNRanks(n) // RCCL: "… via P2P/IPC comm 0x… nRanks 08"
	}
	if int(c.tr.class) < len(a.intra) {
		a.intra[c.tr.class]++
	}
	if c.tr.class == trNET {
		cl := c.tr.ncls
		if cl == netUnknown {
			cl = netOther
		}
		g := 0
		if c.tr.gdr {
			g = 1
		}
		a.conns.n[cl][g]++
		if !a.conns.first[cl][g].at.valid() {
			a.conns.first[cl][g] = evidence{at: at, text: safetext.Clip(string(msg), 200)}
		}
		a.conns.countName(c.tr.net)
		// The process's evidence for cl is decided after its first such
		// line and never weakens: the thread remembers that, so that the
		// common line does not load the process (a cache miss per line).
		if th == nil || th.decided&(1<<cl) == 0 {
			p.see(cl, strengthDecided, at, msg)
			if th != nil {
				th.decided |= 1 << cl
			}
		}
		if (cl == netOther || cl == netFastSocket) && p.netName != string(c.tr.net) {
			p.netName = string(c.tr.net)
		}
	} else if c.tr.class == trP2P || c.tr.class == trSHM {
		a.ranks.set(peer) // P2P and SHM peers share the node
	}
	id := a.transportID(&c.tr)
	if st := a.statsFor(p, th, me); st != nil {
		st.add(peer, id, c)
	}
}

// statsFor finds the communicator rank a connection line belongs to:
// the communicator the printing thread announced, else the process's
// communicator with that rank, else a per-process holding place that a
// later communicator line (2.4 prints "Init COMPLETE" last) claims.
// The thread remembers its last answer (thread.st, and the invariant
// there): on the real shape 62% of the connection lines found it there
// instead of in byRank's map.
func (a *Analyzer) statsFor(p *process, th *thread, rank int64) *rankStats {
	if th != nil && th.st != nil && th.stRank == rank && th.stGen == p.gen {
		return th.st
	}
	st := a.statsForSlow(p, th, rank)
	if th != nil && st != nil {
		th.st, th.stRank, th.stGen = st, rank, p.gen
	}
	return st
}

// statsForSlow is statsFor without the thread's cache of its last answer.
func (a *Analyzer) statsForSlow(p *process, th *thread, rank int64) *rankStats {
	if th != nil && th.comm != nil && th.comm.rank == rank {
		return &th.comm.stats
	}
	if ci := p.byRank[rank]; ci != nil {
		return &ci.stats
	}
	if p.orphan == nil {
		p.orphan = make(map[int64]*rankStats)
	}
	st := p.orphan[rank]
	if st == nil {
		// Per process and over all processes: a log with one pid per
		// line (millions of processes) would otherwise keep a rankStats
		// for every rank of every process (539 MB for 1.3M lines).
		if len(p.orphan) >= maxCommsPerProc || a.orphans >= maxOrphanRanks {
			if a.orphans >= maxOrphanRanks {
				a.orphanCapped = true
			}
			a.stats.Untracked++
			return nil
		}
		st = &rankStats{}
		p.orphan[rank] = st
		a.orphans++
	}
	return st
}

// addNRanks notes a communicator size NCCL printed.
func (a *Analyzer) addNRanks(n int64) {
	if _, ok := a.nranks[n]; ok || len(a.nranks) < 64 {
		a.nranks[n]++
	}
}

func (a *Analyzer) applyComm(p *process, th *thread, c *commInfo, at loc, msg []byte) {
	if c.nranks > 0 {
		a.addNRanks(c.nranks)
	}
	if c.nnodes > 0 {
		a.nnodes = max(a.nnodes, c.nnodes)
	}
	if c.localRanks > 0 && c.nranks > c.localRanks && !a.multiNode.at.valid() {
		// NCCL counted fewer ranks on this node than in the communicator.
		a.multiNode = evidence{at: at, text: safetext.Clip(string(msg), 200)}
	}
	if c.rank >= 0 {
		a.ranks.set(c.rank)
	}
	if c.timings || !c.hasPtr && c.rank < 0 {
		return // "Init timings: rank N nranks M" belongs to a communicator announced elsewhere
	}
	key := c.ptr
	if !c.hasPtr {
		key = 1<<63 | uint64(c.rank)
	}
	ci := p.comms[key]
	if ci == nil {
		if len(p.comms) >= maxCommsPerProc || a.comms >= maxCommInstances {
			a.stats.Untracked++
			return
		}
		if p.comms == nil {
			p.comms = make(map[uint64]*commInst)
			p.byRank = make(map[int64]*commInst)
		}
		ci = &commInst{proc: p, ptr: c.ptr, rank: -1, nranks: -1, nnodes: -1, localRanks: -1, cudaDev: -1, nvmlDev: -1, first: at}
		p.comms[key] = ci
		p.commList = append(p.commList, ci)
		a.comms++
	}
	if c.rank >= 0 {
		if ci.rank != c.rank {
			p.gen++ // a thread's cached statsFor may have used ci's rank
		}
		ci.rank = c.rank
	}
	if c.nranks >= 0 {
		ci.nranks = c.nranks
	}
	if c.nnodes >= 0 {
		ci.nnodes = c.nnodes
	}
	if c.localRanks >= 0 {
		ci.localRanks = c.localRanks
	}
	if c.cudaDev >= 0 {
		ci.cudaDev = c.cudaDev
	}
	if c.nvmlDev >= 0 {
		ci.nvmlDev = c.nvmlDev
	}
	if c.hasCommID {
		ci.commID, ci.hasID = c.commID, true
	}
	if len(c.busID) > 0 && ci.busID == "" {
		ci.busID = string(c.busID)
	}
	if len(c.api) > 0 && ci.api == "" && !bytes.HasPrefix(c.api, []byte("bootstrap")) {
		ci.api = string(c.api)
	}
	switch c.state {
	case commStart:
		ci.started = true
	case commComplete:
		ci.completed = true
	}
	if th != nil && !bytes.HasPrefix(c.api, []byte("bootstrap")) && th.comm != ci {
		th.comm, th.st = ci, nil
	}
	if ci.rank >= 0 {
		if p.byRank[ci.rank] != ci {
			p.byRank[ci.rank] = ci
			p.gen++
		}
		if st := p.orphan[ci.rank]; st != nil {
			ci.stats.merge(st)
			delete(p.orphan, ci.rank)
			a.orphans--
			p.gen++
		}
	}
}

// rcNames are NCCL's ncclResult_t values.
var rcNames = []string{
	"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
}

func rcName(rc int64) string {
	if rc >= 0 && int(rc) < len(rcNames) {
		return rcNames[rc]
	}
	return "ncclResult " + itoa(rc)
}

func (a *Analyzer) applyTrace(p *process, t *traceInfo, at loc, msg []byte) {
	if isNetSocketFrame(t.loc) {
		// A frame in NCCL's own Socket module ("transport/net_socket.cc:336
		// -> 2", NCCLCHECK's INFO in src/transport/net_socket.cc) is that
		// module connecting, accepting or moving data: NCCL reaches
		// ncclSocketConnect/Accept/Test only through the ncclNet it selected
		// (ncclNetSocket), and the module's init fails with a WARN, not a
		// trace. So the process uses TCP, like its "Using network Socket".
		p.see(netSocket, strengthInit, at, msg)
	}
	if len(t.thread) > 0 {
		// The trace reached the top of an NCCL thread or of the API call's
		// async job: the operation failed.
		if rc := rcName(t.rc); !a.find.repeat("nccl_call_failed", []byte(rc), at) {
			a.find.add("nccl_call_failed", rc,
				"NCCL operation failed with "+rc+" ("+string(t.thread)+", "+string(t.loc)+")", where(p), at)
		}
		return
	}
	// Each failing call prints one line per frame; one finding per result
	// code is enough, and 052 shows such chains can be harmless.
	if rc := rcName(t.rc); !a.find.repeat("nccl_error_path", []byte(rc), at) {
		a.find.add("nccl_error_path", rc, "NCCL error path returned "+rc+" (first frame "+string(t.loc)+")", where(p), at)
	}
}

func itoa(v int64) string {
	var b [20]byte
	i := len(b)
	neg := v < 0
	if neg {
		v = -v
	}
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// isNetSocketFrame reports whether a trace's location is NCCL core's Socket
// module, "transport/net_socket.cc:N" (under any build prefix, such as
// TensorFlow's "external/nccl_archive/src/"). Plugins name their own files.
func isNetSocketFrame(loc []byte) bool {
	i := bytes.LastIndexByte(loc, ':')
	if i < 0 {
		return false
	}
	f := loc[:i]
	return bytes.HasSuffix(f, []byte("transport/net_socket.cc")) &&
		(len(f) == len("transport/net_socket.cc") || f[len(f)-len("transport/net_socket.cc")-1] == '/')
}

// maxTreeRanks bounds the ranks a process's Trees lines are remembered for.
const maxTreeRanks = 256

// noteTreeRank remembers that a thread printing with [dev] named rank me
// as the printer of a Trees line.
func (p *process) noteTreeRank(me, dev int64) {
	if dev < 0 || me < 0 {
		return
	}
	if p.treeDevs == nil {
		p.treeDevs = make(map[int64]int64)
	}
	if _, ok := p.treeDevs[me]; ok || len(p.treeDevs) >= maxTreeRanks {
		return
	}
	p.treeDevs[me] = dev
}

// prefixDev reads the [dev] of a "host:pid:tid [dev]" envelope; -1 when
// there is none.
func prefixDev(prefix []byte) int64 {
	i := bytes.LastIndexByte(prefix, '[')
	if i < 0 {
		return -1
	}
	v, n := leadingInt(prefix[i+1:])
	if n == 0 || i+1+n >= len(prefix) || prefix[i+1+n] != ']' {
		return -1
	}
	return v
}

// treesSelf reads the printing rank of a Trees line: the rank between the
// first two arrows of its first tree, in every form NCCL printed
// ("26->25->-1/-1/-1" in 2.4, "1/-1/-1->0->7|…" in 2.5-2.7,
// "1/8/-1->0->-1" from 2.8; the middle number is comm->rank).
func treesSelf(m []byte) (int64, bool) {
	i := bytes.Index(m, arrow)
	if i < 0 {
		return 0, false
	}
	rest := m[i+len(arrow):]
	v, n := leadingInt(rest)
	if n == 0 || !bytes.HasPrefix(rest[n:], arrow) {
		return 0, false
	}
	return v, true
}

var arrow = []byte("->")
