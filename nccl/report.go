package nccl

import (
	"sort"
	"strconv"
)

// The per-communicator, per-rank and per-process parts of the verdict.

// communicators groups communicator instances: by commId where NCCL
// printed one, else by size, plus one group for connection lines that no
// communicator line claimed. Everything is visited in input order so that
// the same log always gives the same report. The report is bounded: the
// first maxReportComms communicators are listed, and per-rank detail stops
// after maxReportRankEntries ranks in all; it returns how many
// communicators it left out.
func (a *Analyzer) communicators() ([]CommSummary, int) {
	// NCCL >= 2.18 names communicators by commId; an instance without one
	// (an excerpt that lost the line with it, or older NCCL) joins the one
	// commId group of its size if there is exactly one.
	idBySize := map[int64]string{}
	for _, p := range a.order {
		for _, ci := range p.commList {
			if !ci.hasID {
				continue
			}
			id := "0x" + hex16(ci.commID)
			if prev, ok := idBySize[ci.nranks]; ok && prev != id {
				id = ""
			}
			idBySize[ci.nranks] = id
		}
	}
	idOf := func(ci *commInst) string {
		switch {
		case ci.hasID:
			return "0x" + hex16(ci.commID)
		case idBySize[ci.nranks] != "":
			return idBySize[ci.nranks]
		case ci.nranks < 0:
			return "(unknown size)"
		}
		return "nranks=" + itoa(ci.nranks) + " (no commId)"
	}
	const orphanID = "(no communicator line)"

	// First pass: where each communicator first appears, to choose the
	// ones the report lists.
	first := map[string]loc{}
	see := func(id string, at loc) {
		if f, ok := first[id]; !ok || before(at, f) {
			first[id] = at
		}
	}
	for _, p := range a.order {
		for _, ci := range p.commList {
			see(idOf(ci), ci.first)
		}
		if len(p.orphan) > 0 {
			see(orphanID, p.first)
		}
	}
	ids := make([]string, 0, len(first))
	for id := range first {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if first[ids[i]] != first[ids[j]] {
			return before(first[ids[i]], first[ids[j]])
		}
		return ids[i] < ids[j]
	})
	omitted := 0
	if len(ids) > maxReportComms {
		omitted = len(ids) - maxReportComms
		ids = ids[:maxReportComms]
	}

	// Second pass: the listed communicators, rank by rank.
	type group struct {
		sum      CommSummary
		ranks    map[int64]*RankSummary
		seen     map[int64]bool
		hosts    map[string]bool
		net, gdr uint32
	}
	groups := make(map[string]*group, len(ids))
	for _, id := range ids {
		groups[id] = &group{sum: CommSummary{ID: id}, ranks: map[int64]*RankSummary{}, seen: map[int64]bool{}, hosts: map[string]bool{}}
	}
	budget := maxReportRankEntries
	addRank := func(g *group, p *process, rank int64, st *rankStats, ci *commInst) {
		g.hosts[p.host] = true
		g.net += st.net
		g.gdr += st.gdr
		for i := 0; i < int(st.ntr); i++ {
			n := a.trNameOf(st.tr[i].id)
			m := &g.sum.Intra
			if n.class == trNET || n.class == trCollNet {
				m = &g.sum.Inter
			}
			if *m == nil {
				*m = map[string]int64{}
			}
			(*m)[n.name] += int64(st.tr[i].n)
		}
		if rank < 0 {
			return
		}
		g.seen[rank] = true
		rs := g.ranks[rank]
		if rs == nil {
			if budget == 0 {
				return
			}
			budget--
			rs = &RankSummary{Rank: rank, CUDADev: -1, NVMLDev: -1}
			if !p.pseudo {
				rs.Host, rs.PID = p.host, p.pid
			}
			g.ranks[rank] = rs
		}
		if ci != nil {
			if ci.ptr != 0 {
				rs.Comm = "0x" + strconv.FormatUint(ci.ptr, 16)
			}
			if ci.cudaDev >= 0 {
				rs.CUDADev = ci.cudaDev
			}
			if ci.nvmlDev >= 0 {
				rs.NVMLDev = ci.nvmlDev
			}
			if ci.busID != "" {
				rs.BusID = ci.busID
			}
		}
		a.addTransports(rs, st)
	}
	for _, p := range a.order {
		for _, ci := range p.commList {
			g := groups[idOf(ci)]
			if g == nil {
				continue
			}
			g.sum.Instances++
			if ci.started {
				g.sum.Started++
			}
			if ci.completed {
				g.sum.Complete++
			}
			if g.sum.API == "" {
				g.sum.API = ci.api
			}
			g.sum.NRanks = max(g.sum.NRanks, ci.nranks)
			g.sum.NNodes = max(g.sum.NNodes, ci.nnodes)
			addRank(g, p, ci.rank, &ci.stats, ci)
		}
		if g := groups[orphanID]; g != nil {
			orphans := make([]int64, 0, len(p.orphan))
			for rank := range p.orphan {
				orphans = append(orphans, rank)
			}
			sort.Slice(orphans, func(i, j int) bool { return orphans[i] < orphans[j] })
			for _, rank := range orphans {
				addRank(g, p, rank, p.orphan[rank], nil)
			}
		}
	}
	out := make([]CommSummary, 0, len(ids))
	for _, id := range ids {
		g := groups[id]
		s := g.sum
		s.RanksSeen, s.Hosts = len(g.seen), len(g.hosts)
		if g.net > 0 {
			s.GDR = ptr(g.gdr == g.net)
		}
		keys := make([]int64, 0, len(g.ranks))
		for r := range g.ranks {
			keys = append(keys, r)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		for i, r := range keys {
			if i >= maxReportRanks {
				break
			}
			s.Ranks = append(s.Ranks, *g.ranks[r])
		}
		s.RanksOmitted = s.RanksSeen - len(s.Ranks)
		out = append(out, s)
	}
	return out, omitted
}

func before(x, y loc) bool {
	return x.src < y.src || x.src == y.src && x.line < y.line
}

func (a *Analyzer) addTransports(rs *RankSummary, st *rankStats) {
	for i := 0; i < int(st.ntr); i++ {
		if rs.Transports == nil {
			rs.Transports = map[string]int64{}
		}
		rs.Transports[a.trNameOf(st.tr[i].id).name] += int64(st.tr[i].n)
	}
	for _, pl := range st.peers {
		if len(rs.Peers) >= maxReportPeers {
			break
		}
		rs.Peers = append(rs.Peers, PeerSummary{Peer: int64(pl.peer), Transport: a.trNameOf(pl.tr).name, Connections: int64(pl.n), Channels: bitRanges(pl.channels)})
	}
}

func (d *decider) processes() ([]ProcessSummary, int) {
	a := d.a
	var out []ProcessSummary
	omitted := 0
	for _, p := range a.order {
		if p.pseudo && p != a.overflow && len(p.versions) == 0 && d.sel[p].class == netUnknown {
			continue
		}
		if len(out) >= maxReportProcesses {
			omitted++
			continue
		}
		s := ProcessSummary{Host: p.host, PID: p.pid, FirstLine: location(p.first, a.sources), NCCLVersions: p.versions, Env: p.env}
		if sel := d.sel[p]; sel.class != netUnknown {
			s.Net = sel.display()
			s.NetEvidence = a.evidenceOf(sel.ev.at, sel.ev.text, 0)
		}
		s.GDRReasons = p.gdrWhy
		switch {
		case p.gdrOn && p.gdrOffN > 0:
			s.GDR = "partly disabled"
		case p.gdrOn:
			s.GDR = "enabled"
		case p.gdrOffN > 0:
			s.GDR = "disabled"
		}
		for _, ci := range p.commList {
			if ci.rank >= 0 && len(s.Ranks) < maxReportPeers {
				s.Ranks = append(s.Ranks, ci.rank)
			}
		}
		sort.Slice(s.Ranks, func(i, j int) bool { return s.Ranks[i] < s.Ranks[j] })
		out = append(out, s)
	}
	return out, omitted
}

// bitRanges renders the set bits of m as "0-7,16".
func bitRanges(m uint64) string {
	var b []byte
	for i := 0; i < 64; {
		if m&(1<<uint(i)) == 0 {
			i++
			continue
		}
		j := i
		for j+1 < 64 && m&(1<<uint(j+1)) != 0 {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
		if j > i {
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(j), 10)
		}
		i = j + 1
	}
	return string(b)
}

func hex16(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[:])
}
