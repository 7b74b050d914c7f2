package ncclverdict

import (
	"sort"
	"strconv"

	"github.com/gpuprobe/gpuprobe/state"
)

// Limits on what a verdict lists (everything is still counted).
const (
	maxReportProcesses   = 1024
	maxReportComms       = 256
	maxReportRanks       = 1024 // per communicator
	maxReportRankEntries = 4096 // in all
	maxReportPeers       = 16
)

// The per-communicator, per-rank and per-process parts of the verdict.

// communicators groups communicator instances: by commId where NCCL
// printed one, else by size, plus one group for connection lines that no
// communicator line claimed. Everything is visited in input order so that
// the same log always gives the same report. The report is bounded: the
// first maxReportComms communicators are listed, and per-rank detail stops
// after maxReportRankEntries ranks in all; it returns how many
// communicators it left out.
func (d *decider) communicators() ([]CommSummary, int) {
	ps := d.f.Processes
	// NCCL >= 2.18 names communicators by commId; an instance without one
	// (an excerpt that lost the line with it, or older NCCL) joins the one
	// commId group of its size if there is exactly one.
	idBySize := map[int64]string{}
	for i := range ps {
		for _, ci := range ps[i].Comms {
			if ci.CommID == "" {
				continue
			}
			id := ci.CommID
			if prev, ok := idBySize[ci.NRanks]; ok && prev != id {
				id = ""
			}
			idBySize[ci.NRanks] = id
		}
	}
	idOf := func(ci *state.NCCLComm) string {
		switch {
		case ci.CommID != "":
			return ci.CommID
		case idBySize[ci.NRanks] != "":
			return idBySize[ci.NRanks]
		case ci.NRanks < 0:
			return "(unknown size)"
		}
		return "nranks=" + strconv.FormatInt(ci.NRanks, 10) + " (no commId)"
	}
	const orphanID = "(no communicator line)"

	// First pass: where each communicator first appears, to choose the
	// ones the report lists.
	first := map[string]state.NCCLLoc{}
	see := func(id string, at state.NCCLLoc) {
		if f, ok := first[id]; !ok || before(at, f) {
			first[id] = at
		}
	}
	for i := range ps {
		for j := range ps[i].Comms {
			see(idOf(&ps[i].Comms[j]), ps[i].Comms[j].First)
		}
		if len(ps[i].Orphans) > 0 {
			see(orphanID, ps[i].First)
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
		net, gdr int64
	}
	groups := make(map[string]*group, len(ids))
	for _, id := range ids {
		groups[id] = &group{sum: CommSummary{ID: id}, ranks: map[int64]*RankSummary{}, seen: map[int64]bool{}, hosts: map[string]bool{}}
	}
	budget := maxReportRankEntries
	addRank := func(g *group, p *state.NCCLProcess, rank int64, st *state.NCCLRankConns, ci *state.NCCLComm) {
		g.hosts[p.Host] = true
		g.net += st.Net
		g.gdr += st.GDR
		for _, t := range st.Transports {
			m := &g.sum.Intra
			if t.Class == "NET" || t.Class == "COLLNET" {
				m = &g.sum.Inter
			}
			if *m == nil {
				*m = map[string]int64{}
			}
			(*m)[t.Name] += t.Lines
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
			if p.Kind == "" || p.Kind == "overflow" {
				rs.Host, rs.PID = p.Host, p.PID
			}
			g.ranks[rank] = rs
		}
		if ci != nil {
			if ci.Ptr != 0 {
				rs.Comm = "0x" + strconv.FormatUint(ci.Ptr, 16)
			}
			if ci.CUDADev >= 0 {
				rs.CUDADev = ci.CUDADev
			}
			if ci.NVMLDev >= 0 {
				rs.NVMLDev = ci.NVMLDev
			}
			if ci.BusID != "" {
				rs.BusID = ci.BusID
			}
		}
		addTransports(rs, st)
	}
	for i := range ps {
		p := &ps[i]
		for j := range p.Comms {
			ci := &p.Comms[j]
			g := groups[idOf(ci)]
			if g == nil {
				continue
			}
			g.sum.Instances++
			if ci.Started {
				g.sum.Started++
			}
			if ci.Completed {
				g.sum.Complete++
			}
			if g.sum.API == "" {
				g.sum.API = ci.API
			}
			g.sum.NRanks = max(g.sum.NRanks, ci.NRanks)
			g.sum.NNodes = max(g.sum.NNodes, ci.NNodes)
			addRank(g, p, ci.Rank, &ci.Conns, ci)
		}
		if g := groups[orphanID]; g != nil {
			for j := range p.Orphans {
				addRank(g, p, p.Orphans[j].Rank, &p.Orphans[j], nil)
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
		if d.netInsideNode() && len(s.Inter) > 0 {
			// The verdict shows these NET lines join GPUs of one node (a
			// single-node proof, or every one inside a process): they
			// are intra-node traffic, and say nothing of inter-node GDR.
			if s.Intra == nil {
				s.Intra = map[string]int64{}
			}
			for k, n := range s.Inter {
				s.Intra[k] += n
			}
			s.Inter, s.GDR = nil, nil
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

func before(x, y state.NCCLLoc) bool {
	return x.Input < y.Input || x.Input == y.Input && x.Line < y.Line
}

func addTransports(rs *RankSummary, st *state.NCCLRankConns) {
	for _, t := range st.Transports {
		if rs.Transports == nil {
			rs.Transports = map[string]int64{}
		}
		rs.Transports[t.Name] += t.Lines
	}
	for _, pl := range st.Peers {
		if len(rs.Peers) >= maxReportPeers {
			break
		}
		rs.Peers = append(rs.Peers, PeerSummary{Peer: pl.Peer, Transport: pl.Transport, Connections: pl.Lines, Channels: bitRanges(pl.Channels)})
	}
}

func (d *decider) processes() ([]ProcessSummary, int) {
	var out []ProcessSummary
	omitted := 0
	for i := range d.f.Processes {
		p := &d.f.Processes[i]
		if p.Kind == "no_envelope" && len(p.Versions) == 0 && d.sel[i].class == netUnknown {
			continue
		}
		if len(out) >= maxReportProcesses {
			omitted++
			continue
		}
		s := ProcessSummary{Host: p.Host, PID: p.PID, FirstLine: d.location(p.First), NCCLVersions: p.Versions, Env: p.Env}
		if sel := d.sel[i]; sel.class != netUnknown {
			s.Net = sel.display()
			s.NetEvidence = d.evidence(sel.ev.NCCLLoc, sel.ev.Text, 0)
		}
		for _, code := range p.GDRDisabledWhy {
			s.GDRReasons = append(s.GDRReasons, gdrWhy[code])
		}
		switch {
		case p.GDREnabled && p.GDRDisabledLines > 0:
			s.GDR = "partly disabled"
		case p.GDREnabled:
			s.GDR = "enabled"
		case p.GDRDisabledLines > 0:
			s.GDR = "disabled"
		}
		for _, ci := range p.Comms {
			if ci.Rank >= 0 && len(s.Ranks) < maxReportPeers {
				s.Ranks = append(s.Ranks, ci.Rank)
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

// netInsideNode reports whether the verdict places every NET connection
// line inside one node: a single-node proof, or every line joining ranks
// of one process (net_within_process).
func (d *decider) netInsideNode() bool {
	return d.netIntra > 0 || d.oneNode
}
