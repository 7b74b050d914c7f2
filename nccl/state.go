package nccl

import "github.com/gpuprobe/gpuprobe/state"

// What the analyzer remembers while it reads. Everything here is bounded:
// a log of any size, or a hostile one, cannot make these structures grow
// past the caps below (see docs/nccl.md, "Limits").
const (
	maxProcesses      = 1 << 12 // host:pid pairs tracked individually; the rest share one entry (64 MB RSS bound)
	maxThreads        = 1 << 13 // envelope cache entries; cleared, not grown, past this
	maxCommInstances  = 1 << 14 // (process, communicator) pairs
	maxCommsPerProc   = 256
	maxOrphanRanks    = 1 << 14 // ranks with connections but no communicator line yet, over all processes
	maxPeersPerRank   = 64
	maxTrPerRank      = 8
	maxTransportNames = 255
	maxRankTracked    = 1 << 20 // ranks beyond this are counted but not tracked one by one
	maxVersions       = 16
	maxEnvPerProc     = 32
	maxNetNames       = 16
)

// loc is where a record came from: an input and a physical line number.
type loc struct {
	src  int32
	line int64
}

func (l loc) valid() bool { return l.line > 0 }

func (l loc) state() state.NCCLLoc { return state.NCCLLoc{Input: l.src, Line: l.line} }

// evidence is the first line that showed something, kept as text for the
// report.
type evidence struct {
	at   loc
	text string
}

// strength ranks how directly a line shows the network module NCCL uses.
const (
	strengthNone    uint8 = iota
	strengthPlugin        // a plugin was loaded (it may still find no device)
	strengthInit          // init lines that only the selected module prints
	strengthDecided       // "Using network X" or a connection line via NET/X
)

type netEvidence struct {
	strength uint8
	at       loc
	text     string
}

type process struct {
	host   string
	pid    int64
	pseudo bool // records without an envelope
	// gluedOnly: every record so far had its host glued to a torn
	// record's text, so the host name may carry that text.
	gluedOnly  bool
	socketDevs evidence // "NET/Socket : Using [0]…"
	first      loc
	net        [numNetClasses]netEvidence
	netName    string // the "Using network"/plugin name behind netOther
	noIB       evidence
	ibOff      evidence // NCCL_IB_DISABLE=1
	hcas       int      // HCAs NCCL listed for the IB module
	gdrOn      bool
	gdrOff     uint64 // HCA indexes (< 64) with a "Disabled" decision
	gdrOffN    int
	gdrWhy     []string // finding codes of the reasons NCCL gave for GDR being off, once each
	loIf       bool     // an interface list that is all loopback
	nonLoIf    bool     // an interface list with a real interface
	versions   []string
	env        map[string]string
	comms      map[uint64]*commInst
	commList   []*commInst // comms in order of appearance, for stable reports
	byRank     map[int64]*commInst
	orphan     map[int64]*rankStats // connections seen before (or without) a communicator line
	// ring0 is the longest ring order listing this process printed (NCCL
	// prints it from rank 0 only), ring0Dev the [dev] of the printing
	// thread; treeDevs maps the rank each Trees line names as its printer
	// to that thread's [dev] (at most maxTreeRanks).
	ring0    int64
	ring0Dev int64
	treeDevs map[int64]int64
	// gen counts the changes to what statsFor answers for this process's
	// threads (thread.st): a communicator's rank, byRank, an orphan
	// claimed. Only applyComm makes them.
	gen uint32
}

// thread is the envelope cache entry for one "host:pid:tid [dev]".
type thread struct {
	key  []byte // the envelope prefix, in the analyzer's arena (keep)
	proc *process
	comm *commInst // the communicator this thread last announced
	// gluedOnly is false once proc.gluedOnly is: the merger reads it here,
	// in the entry it has just compared, instead of in the process.
	gluedOnly bool
	// decided: bit c is set once proc.net[c] has strengthDecided.
	decided uint8
	// st is statsFor's last answer for this thread, the counters of rank
	// stRank, while proc.gen is stGen. Invariant: statsFor's answer for a
	// thread and a rank changes only when applyComm changes comm (which
	// clears st), a communicator's rank, byRank or the orphans of proc
	// (which bump proc.gen); an orphan's counters stay where they are
	// until claimed; a thread handed out again is zeroed (thread).
	// TestStatsForCache holds it.
	st     *rankStats
	stRank int64
	stGen  uint32
}

type commInst struct {
	proc       *process
	ptr        uint64
	commID     uint64
	hasID      bool
	rank       int64
	nranks     int64
	nnodes     int64
	localRanks int64
	cudaDev    int64
	nvmlDev    int64
	busID      string
	api        string
	started    bool
	completed  bool
	first      loc
	stats      rankStats
}

type trCount struct {
	id uint16
	n  uint32
}

type peerLink struct {
	peer     int32
	tr       uint16
	n        uint32
	channels uint64 // bit c: channel c (< 64) used this link
}

// rankStats is what one rank's connection lines said.
type rankStats struct {
	conns uint32
	net   uint32 // NET connections
	gdr   uint32 // NET connections with /GDRDMA
	ntr   uint8
	tr    [maxTrPerRank]trCount
	peers []peerLink
	// idx is an open-addressing index of peers by (peer, transport): the
	// value is the link's position + 1, 0 an empty slot. A full list of 64
	// links was scanned for almost every line of an all-to-all log (the
	// 256-bit filter that came before it let a quarter of the misses and
	// every hit through to the scan).
	idx [2 * maxPeersPerRank]uint8
	// The link of the last connection line added (add): peers[lastLink-1]
	// is (lastPeer, lastTr), tr[lastTrN] counts lastTr; lastLink 0: none.
	// Invariant: peers and tr are only appended to (add, addLink, merge),
	// never reordered or cut, so the positions stay right.
	// TestStatsForCache holds it.
	lastLink uint8
	lastTrN  uint8
	lastTr   uint16
	lastPeer int32
}

func peerSlot(peer int32, id uint16) int {
	h := uint64(uint32(peer))*0x9e3779b97f4a7c15 ^ uint64(id)*0xc2b2ae3d27d4eb4f
	return int(h >> 57) // 7 bits: len(rankStats.idx) slots
}

// link returns the position of (peer, id) in s.peers, or -1 and the
// empty slot of s.idx where it would go.
func (s *rankStats) link(peer int32, id uint16) (int, int) {
	h := peerSlot(peer, id)
	for {
		v := s.idx[h]
		if v == 0 {
			return -1, h
		}
		if l := &s.peers[v-1]; l.peer == peer && l.tr == id {
			return int(v - 1), h
		}
		h = (h + 1) & (len(s.idx) - 1)
	}
}

func (s *rankStats) addLink(l peerLink) {
	if len(s.peers) >= maxPeersPerRank {
		return
	}
	i, h := s.link(l.peer, l.tr)
	s.peers = append(s.peers, l)
	if i < 0 {
		s.idx[h] = uint8(len(s.peers))
	}
}

func (s *rankStats) add(peer int64, id uint16, c *connInfo) {
	s.conns++
	if c.tr.class == trNET {
		s.net++
		if c.tr.gdr {
			s.gdr++
		}
	}
	var ch uint64
	if c.channel >= 0 && c.channel < 64 {
		ch = 1 << uint(c.channel)
	}
	if s.lastLink != 0 && s.lastTr == id && int64(s.lastPeer) == peer {
		// The link of the last line (NCCL prints a pair's channels one
		// after the other): its transport's count and the link, found
		// without the searches below.
		s.tr[s.lastTrN].n++
		l := &s.peers[s.lastLink-1]
		l.n++
		l.channels |= ch
		return
	}
	t := -1
	for i := 0; i < int(s.ntr); i++ {
		if s.tr[i].id == id {
			s.tr[i].n++
			t = i
			break
		}
	}
	if t < 0 && int(s.ntr) < maxTrPerRank {
		s.tr[s.ntr] = trCount{id: id, n: 1}
		t = int(s.ntr)
		s.ntr++
	}
	if peer < 0 || peer > 1<<31-1 {
		return
	}
	i, h := s.link(int32(peer), id)
	if i < 0 {
		if len(s.peers) >= maxPeersPerRank {
			return
		}
		s.peers = append(s.peers, peerLink{peer: int32(peer), tr: id})
		s.idx[h] = uint8(len(s.peers))
		i = len(s.peers) - 1
	}
	s.peers[i].n++
	s.peers[i].channels |= ch
	if t >= 0 {
		s.lastLink, s.lastTrN, s.lastPeer, s.lastTr = uint8(i+1), uint8(t), int32(peer), id
	}
}

func (s *rankStats) merge(o *rankStats) {
	s.conns += o.conns
	s.net += o.net
	s.gdr += o.gdr
	for i := 0; i < int(o.ntr); i++ {
		t := o.tr[i]
		found := false
		for j := 0; j < int(s.ntr); j++ {
			if s.tr[j].id == t.id {
				s.tr[j].n += t.n
				found = true
			}
		}
		if !found && int(s.ntr) < maxTrPerRank {
			s.tr[s.ntr] = t
			s.ntr++
		}
	}
	for _, p := range o.peers {
		s.addLink(p)
	}
}

// bitset tracks small non-negative integers (ranks, HCA indexes).
type bitset []uint64

func (b *bitset) set(i int64) {
	if i < 0 || i >= maxRankTracked {
		return
	}
	w := int(i >> 6)
	if w >= len(*b) {
		n := make(bitset, w+1, max(w+1, 2*len(*b)))
		copy(n, *b)
		*b = n
	}
	(*b)[w] |= 1 << (uint(i) & 63)
}

func (b bitset) has(i int64) bool {
	if i < 0 || int(i>>6) >= len(b) {
		return false
	}
	return b[i>>6]&(1<<(uint(i)&63)) != 0
}

// netConnStats counts NET connection lines over the whole log, by module
// class and GDR.
type netConnStats struct {
	n        [numNetClasses][2]int64
	first    [numNetClasses][2]evidence
	nameList []nameCount // NET module names as printed ("IB", "IBext_v8", "AWS Libfabric")
}

// countName counts a NET connection line for its module name. The names
// are few (maxNetNames): a slice beats a map, and a map[string(b)]++ would
// allocate for every line.
func (s *netConnStats) countName(b []byte) {
	for i := range s.nameList {
		if string(b) == s.nameList[i].name {
			s.nameList[i].n++
			return
		}
	}
	if len(s.nameList) < maxNetNames {
		s.nameList = append(s.nameList, nameCount{name: string(b), n: 1})
	}
}

type nameCount struct {
	name string
	n    int64
}
