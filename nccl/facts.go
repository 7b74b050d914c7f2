package nccl

import (
	"sort"
	"strconv"

	"github.com/gpuprobe/gpuprobe/state"
)

// Facts returns what the analyzer has read so far as plain data: the
// facts check/ncclverdict judges. It can be called at any time (a live run
// asks at the end) and does not change the analyzer.
func (a *Analyzer) Facts() *state.NCCLFacts {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := &state.NCCLFacts{
		Stats:           a.stats,
		Versions:        append([]string{}, a.versions...),
		Format:          a.format,
		CollNet:         a.collnet,
		NVLS:            a.nvls,
		Env:             a.envSummary(),
		NNodes:          max(a.nnodes, 0),
		MaxRank:         a.maxRank,
		Ranks:           a.ranks.ranges(),
		NetNames:        map[string]int64{},
		Findings:        a.find.list(),
		FindingsDropped: a.find.dropped,
		Processes:       make([]state.NCCLProcess, 0, len(a.order)),
	}
	f.Stats.Inputs = append([]string(nil), a.stats.Inputs...)
	f.Stats.Processes = len(a.procs)
	f.Stats.MaxLineBytes = a.maxLine
	f.Stats.FindingsDropped = a.find.dropped
	if a.overflow != nil {
		f.Stats.ProcessCap = maxProcesses
	}
	if a.orphanCapped {
		f.Stats.OrphanCap = maxOrphanRanks
	}
	f.NRanksListed = a.listed
	f.NetPlugin = evidenceLine(a.netPlugin)
	if a.multiNode.at.valid() {
		f.MultiNode = line(a.multiNode.at, a.multiNode.text)
	}
	for n := range a.nranks {
		f.NRanks = append(f.NRanks, n)
	}
	sort.Slice(f.NRanks, func(i, j int) bool { return f.NRanks[i] < f.NRanks[j] })
	for c, n := range a.intra {
		if n > 0 {
			if f.Connections == nil {
				f.Connections = map[string]int64{}
			}
			f.Connections[trClass(c).String()] += n
		}
	}
	for c := range a.conns.n {
		for g := range a.conns.n[c] {
			if n := a.conns.n[c][g]; n > 0 {
				first := a.conns.first[c][g]
				f.NetConnections = append(f.NetConnections, state.NCCLNetConns{
					Class: netClass(c).String(), GDR: g == 1, Lines: n, First: *line(first.at, first.text)})
			}
		}
	}
	for _, nc := range a.conns.nameList {
		f.NetNames[nc.name] = nc.n
	}
	for _, p := range a.order {
		f.Processes = append(f.Processes, a.processFacts(p))
	}
	return f
}

func line(at loc, text string) *state.NCCLLine {
	return &state.NCCLLine{NCCLLoc: at.state(), Text: text}
}

func evidenceLine(e evidence) *state.NCCLLine {
	if !e.at.valid() {
		return nil
	}
	return line(e.at, e.text)
}

func (a *Analyzer) processFacts(p *process) state.NCCLProcess {
	s := state.NCCLProcess{
		Host: p.host, PID: p.pid, First: p.first.state(), GluedOnly: p.gluedOnly && !p.pseudo,
		NetName: p.netName, NoIB: evidenceLine(p.noIB), IBDisabled: evidenceLine(p.ibOff),
		SocketDevices: evidenceLine(p.socketDevs),
		HCAs:          p.hcas, GDREnabled: p.gdrOn, GDRDisabledHCAs: p.gdrOff, GDRDisabledLines: p.gdrOffN,
		GDRDisabledWhy: p.gdrWhy, LoopbackIf: p.loIf, OtherIf: p.nonLoIf, Versions: p.versions, Env: p.env,
	}
	switch {
	case p == a.overflow:
		s.Kind = "overflow"
	case p.pseudo:
		s.Kind = "no_envelope"
	}
	for c := range p.net {
		if e := p.net[c]; e.strength > strengthNone {
			s.Net = append(s.Net, state.NCCLNetEvidence{Class: netClass(c).String(), Strength: int(e.strength), NCCLLine: *line(e.at, e.text)})
		}
	}
	if p.ring0 > 0 {
		s.RingListing, s.RingListingDev = p.ring0, p.ring0Dev
	}
	if len(p.treeDevs) > 0 {
		s.TreeRanks = make([]state.NCCLRankDev, 0, len(p.treeDevs))
		for r, d := range p.treeDevs {
			s.TreeRanks = append(s.TreeRanks, state.NCCLRankDev{Rank: r, Dev: d})
		}
		sort.Slice(s.TreeRanks, func(i, j int) bool { return s.TreeRanks[i].Rank < s.TreeRanks[j].Rank })
	}
	for _, ci := range p.commList {
		c := state.NCCLComm{
			Ptr: ci.ptr, Rank: ci.rank, NRanks: ci.nranks, NNodes: ci.nnodes, LocalRanks: ci.localRanks,
			CUDADev: ci.cudaDev, NVMLDev: ci.nvmlDev, BusID: ci.busID, API: ci.api,
			Started: ci.started, Completed: ci.completed, First: ci.first.state(),
			Conns: a.rankConns(ci.rank, &ci.stats),
		}
		if ci.hasID {
			c.CommID = "0x" + hex16(ci.commID)
		}
		s.Comms = append(s.Comms, c)
	}
	ranks := make([]int64, 0, len(p.orphan))
	for r := range p.orphan {
		ranks = append(ranks, r)
	}
	sort.Slice(ranks, func(i, j int) bool { return ranks[i] < ranks[j] })
	for _, r := range ranks {
		s.Orphans = append(s.Orphans, a.rankConns(r, p.orphan[r]))
	}
	return s
}

func (a *Analyzer) rankConns(rank int64, st *rankStats) state.NCCLRankConns {
	rc := state.NCCLRankConns{Rank: rank, Lines: int64(st.conns), Net: int64(st.net), GDR: int64(st.gdr)}
	for i := 0; i < int(st.ntr); i++ {
		n := a.trNameOf(st.tr[i].id)
		rc.Transports = append(rc.Transports, state.NCCLTransportCount{Name: n.name, Class: n.class.String(), Lines: int64(st.tr[i].n)})
	}
	for _, pl := range st.peers {
		rc.Peers = append(rc.Peers, state.NCCLPeer{Peer: int64(pl.peer), Transport: a.trNameOf(pl.tr).name, Lines: int64(pl.n), Channels: pl.channels})
	}
	return rc
}

func (c trClass) String() string {
	switch c {
	case trP2P:
		return "P2P"
	case trSHM:
		return "SHM"
	case trNET:
		return "NET"
	case trCollNet:
		return "COLLNET"
	}
	return "other"
}

// ranges renders the set bits as inclusive ranges.
func (b bitset) ranges() []state.NCCLRange {
	var out []state.NCCLRange
	n := int64(len(b)) * 64
	for i := int64(0); i < n; {
		if !b.has(i) {
			i++
			continue
		}
		j := i
		for j+1 < n && b.has(j+1) {
			j++
		}
		out = append(out, state.NCCLRange{From: i, To: j})
		i = j + 1
	}
	return out
}

func (a *Analyzer) envSummary() map[string][]string {
	if len(a.envGlobal) == 0 {
		return nil
	}
	out := make(map[string][]string, len(a.envGlobal))
	for k, vals := range a.envGlobal {
		list := make([]string, 0, len(vals))
		for v := range vals {
			list = append(list, v)
		}
		sort.Strings(list)
		out[k] = list
	}
	return out
}

func hex16(v uint64) string {
	s := strconv.FormatUint(v, 16)
	for len(s) < 16 {
		s = "0" + s
	}
	return s
}
