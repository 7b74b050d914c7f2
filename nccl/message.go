package nccl

import "bytes"

// Kind says what an NCCL record is about, as far as gpuprobe cares.
type Kind uint8

// Record kinds. Everything gpuprobe does not interpret is KindOther.
const (
	KindOther          Kind = iota
	KindVersion             // NCCL version 2.x.y+cudaA.B
	KindNetDevices          // NET/IB : Using [0]mlx5_0:1/IB …; NET/Socket : Using [0]eth0:…; NET/IB: [0] mlx5_1:1/IB
	KindNoDevice            // NET/IB : No device found.
	KindNetSelected         // Using network IB; Using internal Network IB
	KindNetPlugin           // NET/Plugin: Loaded net plugin …; P2P plugin IBext; Plugin Path : …
	KindNetMention          // other lines that show a network module at work (NET/OFI …, NIC distance, sideband)
	KindEnv                 // NCCL_IB_DISABLE set by environment to 1.
	KindGDR                 // GPU Direct RDMA Enabled|Disabled for …
	KindConnection          // Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
	KindComm                // comm 0x… rank 0 nranks 16 … - Init COMPLETE
	KindBootstrap           // Bootstrap : Using eth0:10.0.0.1<0>
	KindChannels            // 16 coll channels, 16 collnet channels, 16 nvls channels, …
	KindRingsConnected      // Connected all rings[, use ring PXN 0 GDR 1]
	KindIBVerbsMissing      // Failed to open libibverbs.so[.1] (INFO form)
	KindDMABuf              // DMA-BUF is available on GPU device 2
	KindTrace               // proxy.cc:878 -> 6 [Progress Thread]
	KindWarn                // any NCCL WARN record
	KindTrees               // Trees [0] 1/8/-1->0->-1 [1] …
	KindRingOrder           // Channel 00/08 :    0   5   4 … (every rank of the ring)
	numKinds
)

var kindNames = [numKinds]string{
	"other", "version", "net_devices", "no_device", "net_selected", "net_plugin", "net_mention",
	"env", "gdr", "connection", "comm", "bootstrap", "channels", "rings_connected",
	"ibverbs_missing", "dmabuf", "trace", "warn", "trees", "ring_order",
}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "invalid"
}

// event is a classified message. Only the part that belongs to its kind is
// valid; the analyzer reuses one event for every record to stay
// allocation-free.
type event struct {
	kind    Kind
	conn    connInfo
	comm    commInfo
	gdr     gdrLine
	env     envLine
	net     []byte // network or plugin name
	dev     devList
	version []byte
	trace   traceInfo
	collnet int64 // KindChannels
	nvls    int64
	listed  int64   // KindRingOrder: ranks in the listing
	trMemo  *trMemo // recent transports; nil parses every one
}

type traceInfo struct {
	loc    []byte // "proxy.cc:878"
	rc     int64  // ncclResult_t
	thread []byte // "Progress Thread", "Async thread"; empty when absent
}

var (
	msgVersion     = []byte("NCCL version ")
	msgUsingNet    = []byte("Using network ")
	msgUsingIntNet = []byte("Using internal Network ")
	msgUsing       = []byte("Using ")
	msgLoadedNet   = []byte("Loaded net plugin ")
	msgPluginPath  = []byte("Plugin Path : ")
	msgP2PPlugin   = []byte("P2P plugin ")
	msgNICDistance = []byte(" NIC distance")
	msgIBPorts     = []byte("IB Ports")
	msgCollChans   = []byte(" coll channels")
	msgSideband    = []byte("for sideband")
	msgArrowTrace  = []byte(" -> ")
)

// hasPrefix is bytes.HasPrefix for a prefix written as a constant: the
// compiler then compares a prefix of up to 16 bytes inline, where
// bytes.HasPrefix with a []byte variable calls memequal (about 25
// instructions a call, a million calls per 40 MB of the real shape;
// docs/nccl.md). TestHasPrefix holds it to bytes.HasPrefix.
func hasPrefix(b []byte, s string) bool { return len(b) >= len(s) && string(b[:len(s)]) == s }

// classify decides the kind of an INFO or version message and fills the
// matching part of ev. It looks at the first byte before anything else:
// most records are of kinds gpuprobe ignores, and they should cost little.
func classify(m []byte, ev *event) Kind {
	ev.kind = KindOther
	if len(m) == 0 {
		return KindOther
	}
	switch m[0] {
	case 'C':
		switch {
		case len(m) >= 8 && string(m[:8]) == "Channel ", hasPrefix(m, "CollNet "):
			if parseConnMemo(m, &ev.conn, ev.trMemo) {
				ev.kind = KindConnection
			} else if n := ringOrder(m); n > 0 {
				ev.listed, ev.kind = n, KindRingOrder
			}
		case hasPrefix(m, "Connected all rings"):
			// "…, use ring PXN 0 GDR 1" appears on single-node runs too: it
			// is not evidence of inter-node GDR, so only the kind is kept.
			ev.kind = KindRingsConnected
		case hasPrefix(m, "CUDA Dev "):
			// 2.4: "CUDA Dev 0[0], Socket NIC distance :  PHB" names the selected
			// module; 2.3: "CUDA Dev 2, IB Ports : …".
			if i := bytes.Index(m, msgNICDistance); i > 0 {
				if c := bytes.LastIndex(m[:i], []byte(", ")); c >= 0 {
					ev.net = m[c+2 : i]
					ev.kind = KindNetMention
				}
			} else if bytes.Contains(m, msgIBPorts) {
				ev.net = m[bytes.Index(m, msgIBPorts) : bytes.Index(m, msgIBPorts)+2]
				ev.kind = KindNetMention
			}
		}
	case 'R':
		if hasPrefix(m, "Ring ") && parseConnMemo(m, &ev.conn, ev.trMemo) {
			ev.kind = KindConnection
		} else if hasPrefix(m, "Ring ") && bytes.Contains(m, wordNRanks) {
			// RCCL's ring neighbours: "Ring 0 : 7 -> 0 -> 1 comm 0x… nRanks 08 busId 3000".
			ev.kind = KindTrees
		}
	case 'c', 'n', 'b', 'r', 'I':
		if isCommLine(m) && parseComm(m, &ev.comm) {
			ev.kind = KindComm
		}
	case '[':
		// NCCL >= 2.29 tags its Init START line with the rank: "[Rank 5]
		// ncclCommInitRankConfig comm 0x… rank 5 nranks 8 … - Init START"
		// (src/init.cc); the rest is the usual communicator line.
		if rest, ok := cutRankTag(m); ok && isCommLine(rest) && parseComm(rest, &ev.comm) {
			ev.kind = KindComm
		}
	case 'N':
		classifyN(m, ev)
	case 'U':
		switch {
		case hasPrefix(m, "Using network "):
			ev.net, ev.kind = netName(m[len(msgUsingNet):]), KindNetSelected
		case hasPrefix(m, "Using internal Network "):
			ev.net, ev.kind = netName(m[len(msgUsingIntNet):]), KindNetSelected
		}
	case 'B':
		if hasPrefix(m, "Bootstrap") {
			if i := bytes.Index(m, msgUsing); i > 0 && i < 14 {
				ev.dev = parseDevList(m[i+len(msgUsing):])
				ev.kind = KindBootstrap
			}
		}
	case 'P':
		switch {
		case hasPrefix(m, "Plugin Path : "):
			ev.net, ev.kind = m[len(msgPluginPath):], KindNetPlugin
		case hasPrefix(m, "P2P plugin "):
			// HPC-X plugin: "P2P plugin IBext", "P2P plugin v8 IBext_v8".
			name := m[len(msgP2PPlugin):]
			if sp := bytes.LastIndexByte(name, ' '); sp >= 0 {
				name = name[sp+1:]
			}
			ev.net, ev.kind = name, KindNetPlugin
		}
	case 'G':
		if parseGDR(m, &ev.gdr) {
			ev.kind = KindGDR
		}
	case 'F':
		if hasPrefix(m, "Failed to open libibverbs") {
			ev.kind = KindIBVerbsMissing
		}
	case 'D':
		if hasPrefix(m, "DMA-BUF is available") {
			ev.kind = KindDMABuf
		}
	case 'T':
		if hasPrefix(m, "Trees ") {
			ev.kind = KindTrees
		}
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if bytes.Contains(m, msgCollChans) {
			parseChannels(m, ev)
			ev.kind = KindChannels
		}
	}
	// Return-code traces start with a source path, and NCCL's are lower case.
	if ev.kind == KindOther && m[0] >= 'a' && m[0] <= 'z' && parseTrace(m, &ev.trace) {
		ev.kind = KindTrace
	}
	return ev.kind
}

// classifyN handles the messages that start with 'N': versions, env
// echoes and the NET/* family.
func classifyN(m []byte, ev *event) {
	switch {
	case hasPrefix(m, "NCCL version "):
		v := m[len(msgVersion):]
		if sp := bytes.IndexByte(v, ' '); sp >= 0 {
			v = v[:sp]
		}
		if len(v) > 0 && isDigit(v[0]) {
			ev.version, ev.kind = v, KindVersion
		}
	case hasPrefix(m, "NCCL_"):
		if parseEnv(m, &ev.env) {
			ev.kind = KindEnv
		}
	case hasPrefix(m, "NET/"):
		classifyNET(m, ev)
	}
}

func classifyNET(m []byte, ev *event) {
	name := netNameOf(m)
	if topoNodeID(name) {
		// "NET/5 :GPU/0-4000 (6/10.0/SYS) …" is a topology path dump
		// (NCCL_DEBUG_SUBSYS=GRAPH): printNodePaths in src/graph/paths.cc
		// names each node "%s/%lX :" (2.19-era) or "%s/%lx-%lx :" (type,
		// then its numeric id), so "NET/5" is the NIC with id 5, not a
		// network module called "5" (posted/157.log, nccl#1519, read
		// net_selected "7" before 2026-11-28).
		return
	}
	rest := afterNetName(m, name)
	ev.net = name
	switch {
	case string(name) == "Plugin":
		switch {
		case hasPrefix(rest, "Loaded net plugin "):
			p := rest[len(msgLoadedNet):]
			if i := bytes.Index(p, []byte(" (v")); i >= 0 {
				p = p[:i]
			}
			ev.net, ev.kind = p, KindNetPlugin
		case hasPrefix(rest, "Failed to find ncc") && bytes.HasSuffix(bytes.TrimRight(rest, " ."), []byte("symbol")):
			// "NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.":
			// NCCL looks symbols up in a plugin library it has loaded
			// (src/plugin/net.cc); it names no module.
			ev.net, ev.kind = nil, KindNetPlugin
		}
	case bytes.Contains(rest, gdrMark):
		if parseGDR(m, &ev.gdr) {
			ev.kind = KindGDR
		}
	case hasPrefix(rest, "No device found"):
		ev.kind = KindNoDevice
	case hasPrefix(rest, "Using ") && len(rest) > len(msgUsing) && rest[len(msgUsing)] == '[':
		ev.dev = parseDevList(rest[len(msgUsing):])
		ev.kind = KindNetDevices
	case len(rest) > 1 && rest[0] == '[' && isDigit(rest[1]):
		// 2.3: one line per HCA, "NET/IB: [0] mlx5_1:1/IB".
		ev.dev = devList{n: 1}
		ev.kind = KindNetDevices
	case string(name) == "Socket":
		// Other NET/Socket lines ("1 interfaces found", the 2.4 "Using"
		// with an interface list handled above) are printed on IB runs too.
	case bytes.Contains(rest, msgSideband), string(name) != "IB":
		// "NET/OFI Selected Provider is efa", "NET/FastSocket : Flow placement
		// enabled.", 2.3's IB sideband line: the module is loaded and talking.
		ev.kind = KindNetMention
	}
}

// topoNodeID reports whether name is a topology node id as NCCL prints it
// after "NET/" in its graph dumps ("5", "0-5", "1-1a"): a decimal digit
// first, then hex digits and '-'. No network module's name starts with a
// digit (IB, Socket, IBext_v8, AWS Libfabric, FastSocket …).
func topoNodeID(name []byte) bool {
	if len(name) == 0 || !isDigit(name[0]) {
		return false
	}
	for _, c := range name {
		if !isDigit(c) && c != '-' && (c|0x20 < 'a' || c|0x20 > 'f') {
			return false
		}
	}
	return true
}

// netName cuts a network name out of the rest of a message: names may
// contain a space ("AWS Libfabric") but not the noise pastes append.
func netName(b []byte) []byte {
	b = trimANSI(cutTransportNoise(b))
	if len(b) > 64 {
		b = b[:64]
	}
	return b
}

// parseChannels reads "16 coll channels, 16 collnet channels, 16 nvls
// channels, …" for the CollNet and NVLS counts.
func parseChannels(m []byte, ev *event) {
	ev.collnet, ev.nvls = -1, -1
	for part := range bytes.SplitSeq(m, []byte(", ")) {
		v, n := leadingInt(part)
		if n == 0 {
			continue
		}
		switch {
		case hasPrefix(part[n:], " collnet "):
			ev.collnet = v
		case hasPrefix(part[n:], " nvls "):
			ev.nvls = v
		}
	}
}

// parseTrace reads NCCL's return-code trace "file:line -> rc", which marks
// an error path even though it is printed at INFO level.
func parseTrace(m []byte, t *traceInfo) bool {
	k, dot := 0, false
	for k < len(m) && k < 128 && fileByte[m[k]] {
		dot = dot || m[k] == '.'
		k++
	}
	if !dot || k >= len(m) || m[k] != ':' {
		return false // source files have an extension: "proxy.cc:878"
	}
	_, n := leadingInt(m[k+1:])
	if n == 0 {
		return false
	}
	locEnd := k + 1 + n
	if !hasPrefix(m[locEnd:], " -> ") {
		return false
	}
	rc, n := leadingInt(m[locEnd+len(msgArrowTrace):])
	if n == 0 {
		return false
	}
	*t = traceInfo{loc: m[:locEnd], rc: rc}
	rest := bytes.TrimSpace(m[locEnd+len(msgArrowTrace)+n:])
	if len(rest) > 2 && rest[0] == '[' {
		if e := bytes.IndexByte(rest, ']'); e > 0 {
			t.thread = rest[1:e]
		}
	}
	return true
}

var fileByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = isWordByte(byte(c)) || c == '.' || c == '/' || c == '-' || c == '+'
	}
	return t
}()

var wordNRanks = []byte(" nRanks ")

// ringOrder counts the ranks of a ring order listing, "Channel 00 :    0
// 1   3   2" (2.4) or "Channel 00/08 :    0   5   4 …" (2.5+; NCCL's
// src/graph/connect.cc prints the ring of every channel), and returns 0
// for any other "Channel" line that is not a connection. Each rank of the
// communicator appears once, so the count is its size. A single rank is
// not counted: a line cut after the first rank looks the same.
func ringOrder(m []byte) int64 {
	i := bytes.Index(m, sepColon)
	if i < 0 || i > 20 {
		return 0
	}
	var n int64
	for p := i + len(sepColon); p < len(m); {
		switch {
		case m[p] == ' ':
			p++
		case isDigit(m[p]):
			for p < len(m) && isDigit(m[p]) {
				p++
			}
			n++
		default:
			return 0
		}
	}
	if n < 2 {
		return 0
	}
	return n
}

// nRanksAfter reads N from " nRanks N" in m (RCCL appends "comm %p nRanks
// %02d" to its Trees, ring and connection lines); -1 when absent.
func nRanksAfter(m []byte) int64 {
	i := bytes.Index(m, wordNRanks)
	if i < 0 {
		return -1
	}
	v, n := leadingInt(m[i+len(wordNRanks):])
	if n == 0 {
		return -1
	}
	return v
}

// nRanksSuffix is nRanksAfter for a line that ends with the number, as
// RCCL's connection lines do; it costs a byte compare on lines that do not
// end with a digit, and an 8-byte one on those that do.
func nRanksSuffix(m []byte) int64 {
	e := len(m)
	k := e
	for k > 0 && e-k < 7 && isDigit(m[k-1]) {
		k--
	}
	if k == e || k < len(wordNRanks) || string(m[k-len(wordNRanks):k]) != " nRanks " {
		return -1
	}
	v, _ := leadingInt(m[k:e])
	return v
}

// treeBranches reports whether a Trees line shows a rank with two or more
// children in one tree. Inside a node NCCL's trees are chains (one child
// per rank: ncclTopoPreset in NCCL's src/graph/connect.cc sets tree.up and
// tree.down[0] from the intra-node chain, and only connectTrees adds the
// children of the tree over nodes): a second child is a rank on another
// node, so the job spans more than one node whatever the host names say.
// The forms:
//
//	Trees [0] 26->25->-1/-1/-1                      2.4: up->me->down/down/down
//	Trees [0] 1/-1/-1->0->7|7->0->1/-1/-1           2.5-2.7: down->me->up|up->me->down
//	Trees [0] 1/8/-1->0->-1 [1] 1/-1/-1->0->8       2.8+: down->me->up
func treeBranches(m []byte) bool {
	for tok := range bytes.FieldsSeq(m) {
		for part := range bytes.SplitSeq(tok, []byte("|")) {
			for f := range bytes.SplitSeq(part, []byte("->")) {
				if bytes.IndexByte(f, '/') < 0 {
					continue
				}
				n := 0
				for x := range bytes.SplitSeq(f, []byte("/")) {
					if v, ok := atoi(x); ok && v >= 0 {
						n++
					}
				}
				if n >= 2 {
					return true
				}
			}
		}
	}
	return false
}

// cutRankTag returns m without a leading "[Rank N] ".
func cutRankTag(m []byte) ([]byte, bool) {
	const tag = "[Rank "
	if len(m) < len(tag)+3 || string(m[:len(tag)]) != tag {
		return nil, false
	}
	_, n := leadingInt(m[len(tag):])
	i := len(tag) + n
	if n == 0 || i+2 > len(m) || m[i] != ']' || m[i+1] != ' ' || i+2 == len(m) {
		return nil, false
	}
	return m[i+2:], true
}

// fields is the part of an event that apply reads for a kind other than a
// connection or a communicator (needsFields), copied out of the event by
// packFields for the merger: an event is 536 bytes, and handing whole ones
// to the merger cost more in memory traffic between the cores than the
// second classify it spared (docs/nccl.md). The slices point into the
// record's message. TestPackedFieldsApplyAlike holds unpack(packFields) to
// the event it came from, kind by kind, through apply.
type fields struct {
	s0, s1 []byte
	n0, n1 int64
	dev    devList
	flags  uint8 // KindGDR: gdrEnabled, gdrNoModule, gdrDistance
}

const (
	gdrEnabled = 1 << iota
	gdrNoModule
	gdrDistance
)

// needsFields reports whether apply reads fields of kind k from the event
// (beyond the record itself); connections and communicators travel whole.
func needsFields(k Kind) bool {
	switch k {
	case KindVersion, KindNetDevices, KindNoDevice, KindNetSelected, KindNetPlugin, KindNetMention,
		KindEnv, KindGDR, KindBootstrap, KindChannels, KindTrace, KindRingOrder:
		return true
	}
	return false
}

// packFields copies what apply reads of kind k out of ev.
func packFields(k Kind, ev *event) fields {
	var f fields
	switch k {
	case KindVersion:
		f.s0 = ev.version
	case KindNetDevices, KindBootstrap:
		f.s0, f.dev = ev.net, ev.dev
	case KindNoDevice, KindNetSelected, KindNetPlugin, KindNetMention:
		f.s0 = ev.net
	case KindEnv:
		f.s0, f.s1 = ev.env.name, ev.env.value
	case KindGDR:
		g := &ev.gdr
		f.s0, f.n0 = g.net, g.hca
		if g.enabled {
			f.flags |= gdrEnabled
		}
		if g.noModule {
			f.flags |= gdrNoModule
		}
		if g.distance {
			f.flags |= gdrDistance
		}
	case KindChannels:
		f.n0, f.n1 = ev.collnet, ev.nvls
	case KindTrace:
		f.s0, f.s1, f.n0 = ev.trace.loc, ev.trace.thread, ev.trace.rc
	case KindRingOrder:
		f.n0 = ev.listed
	}
	return f
}

// unpack writes f back into ev's fields of kind k.
func (f *fields) unpack(k Kind, ev *event) {
	switch k {
	case KindVersion:
		ev.version = f.s0
	case KindNetDevices, KindBootstrap:
		ev.net, ev.dev = f.s0, f.dev
	case KindNoDevice, KindNetSelected, KindNetPlugin, KindNetMention:
		ev.net = f.s0
	case KindEnv:
		ev.env.name, ev.env.value = f.s0, f.s1
	case KindGDR:
		ev.gdr = gdrLine{net: f.s0, hca: f.n0,
			enabled: f.flags&gdrEnabled != 0, noModule: f.flags&gdrNoModule != 0, distance: f.flags&gdrDistance != 0}
	case KindChannels:
		ev.collnet, ev.nvls = f.n0, f.n1
	case KindTrace:
		ev.trace = traceInfo{loc: f.s0, thread: f.s1, rc: f.n0}
	case KindRingOrder:
		ev.listed = f.n0
	}
}
