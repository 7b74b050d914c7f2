package ncclverdict

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// Network classes as the parser names them (state.NCCLNetEvidence.Class).
const (
	netIB         = "IB"
	netSocket     = "Socket"
	netOFI        = "OFI"
	netFastSocket = "FastSocket"
	netOther      = "other"
	netUnknown    = "unknown"
)

// Judge turns the facts of an NCCL log into a verdict. It reads nothing
// but its argument and does not change it.
func Judge(f *state.NCCLFacts) *Verdict {
	if f == nil {
		f = &state.NCCLFacts{MaxRank: -1}
	}
	d := decider{f: f, v: &Verdict{NCCLVersions: []string{}}}
	return d.run()
}

type decider struct {
	f *state.NCCLFacts
	v *Verdict

	sel      []selection // per process, as f.Processes
	hosts    []string
	oneNode  bool
	oneWhy   string
	maxNR    int64
	socketBy int             // index of a process that selected Socket; -1 none
	byPID    map[int64][]int // process indexes by pid, for alias
	torn     map[string]bool // host names with a torn record's start glued in front
	// netIntra counts the NET connection lines between ranks of one
	// process (netIntraWhere, host:pid) when every NET line is one.
	netIntra      int64
	netIntraWhere string

	extraWarnings []Finding
}

type selection struct {
	class string
	ev    state.NCCLNetEvidence
	name  string
}

func (d *decider) run() *Verdict {
	f, v := d.f, d.v
	v.Stats = f.Stats
	v.Stats.Inputs = append([]string(nil), f.Stats.Inputs...)
	v.NCCLVersions = append(v.NCCLVersions, f.Versions...)
	v.CollNet, v.NVLS = f.CollNet, f.NVLS
	v.Env = f.Env
	v.Format = f.Format

	d.selectNets()
	d.countHosts()
	d.sizes()
	d.proveOneNode()
	d.decideInterNode()
	d.versionCheck()
	d.runChecks()
	d.limits()
	d.summary()

	v.Errors, v.Warnings, v.Notes = d.findings()
	v.Warnings = append(v.Warnings, d.extraWarnings...)
	v.Communicators, v.CommunicatorsOmitted = d.communicators()
	v.Processes, v.ProcessesOmitted = d.processes()
	return v
}

// findings sorts the parser's findings by severity.
func (d *decider) findings() (errs, warns, notes []Finding) {
	errs, warns = []Finding{}, []Finding{}
	for _, x := range d.f.Findings {
		r := ruleFor(x.Code, x.Key)
		y := Finding{Severity: r.sev, Code: x.Code, Message: x.Message, Hint: r.hint, Where: x.Where, Count: x.Count, Lines: make([]Location, len(x.Lines))}
		for i, l := range x.Lines {
			y.Lines[i] = d.location(l)
		}
		switch r.sev {
		case SevError:
			errs = append(errs, y)
		case SevWarning:
			warns = append(warns, y)
		default:
			notes = append(notes, y)
		}
	}
	return errs, warns, notes
}

func (d *decider) hasErrors() bool {
	for _, x := range d.f.Findings {
		if ruleFor(x.Code, x.Key).sev == SevError {
			return true
		}
	}
	return false
}

// hasFinding reports whether the log has a finding with this code.
func (d *decider) hasFinding(code string) bool {
	for _, x := range d.f.Findings {
		if x.Code == code {
			return true
		}
	}
	return false
}

// net returns a process's evidence for a network class.
func net(p *state.NCCLProcess, class string) state.NCCLNetEvidence {
	for _, e := range p.Net {
		if e.Class == class {
			return e
		}
	}
	return state.NCCLNetEvidence{Class: class}
}

// selectNets decides, per process, which network module NCCL selected,
// then for the log.
func (d *decider) selectNets() {
	f, v := d.f, d.v
	d.sel = make([]selection, len(f.Processes))
	d.socketBy = -1
	best := 0
	for i := range f.Processes {
		s := selected(&f.Processes[i])
		d.sel[i] = s
		best = max(best, s.ev.Strength)
	}
	var names []string
	for i := range f.Processes {
		s := d.sel[i]
		if s.class == netUnknown {
			continue
		}
		if s.class == netSocket && s.ev.Strength >= state.NCCLStrengthInit &&
			(d.socketBy < 0 || socketFrame(d.sel[d.socketBy].ev.Text) && !socketFrame(s.ev.Text)) {
			// The first process's line is the reason quoted, unless all
			// it has is a frame of the Socket module in an error trace
			// ("transport/net_socket.cc:336 -> 2"): another process's
			// selection or connection line says it better (055).
			d.socketBy = i
		}
		if s.ev.Strength == best {
			n := s.display()
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	v.NetSelected = netUnknown
	if len(names) > 0 {
		v.NetSelected = strings.Join(names, ",")
	}
	if len(names) > 1 {
		d.warn("net_mismatch", "processes selected different network modules: "+v.NetSelected,
			"every rank must use the same network module; compare NCCL_* settings and the installed plugins across nodes")
	}
	if d.socketBy >= 0 {
		v.TCPFallback = true
		e := d.sel[d.socketBy].ev
		v.TCPFallbackReason = d.evidence(e.NCCLLoc, e.Text, 0)
	}
}

// socketFrame reports whether an evidence line is a return-code trace
// through NCCL's Socket module (nccl/apply.go isNetSocketFrame).
func socketFrame(text string) bool {
	return strings.Contains(text, "net_socket.cc:") && strings.Contains(text, " -> ")
}

// selected returns the module the process's lines point to. Lines that
// show the module at work beat init lines, which beat a loaded plugin;
// at equal strength a plugin beats IB beats Socket, the order in which
// NCCL tries them.
func selected(p *state.NCCLProcess) selection {
	ev := map[string]state.NCCLNetEvidence{}
	for _, e := range p.Net {
		ev[e.Class] = e
	}
	if e := impliedSocket(p); e.Strength > ev[netSocket].Strength {
		ev[netSocket] = e
	}
	var s selection
	s.class = netUnknown
	for _, c := range [...]string{netOFI, netFastSocket, netOther, netIB, netSocket} {
		if ev[c].Strength > s.ev.Strength {
			s = selection{class: c, ev: ev[c]}
		}
	}
	if s.class == netOther || s.class == netFastSocket {
		s.name = p.NetName
	}
	return s
}

// impliedSocket: NCCL falls back to its Socket module when IB has no device
// (no HCA, or libibverbs could not be opened) or is disabled, and no plugin
// took over. NCCL <= 2.5 does not print "Using network Socket", so this is
// the only sign there; NCCL 2.4's "NET/Socket : Using [0]…" line, printed
// on IB runs too, is then the Socket module's own init line and the
// evidence quoted.
func impliedSocket(p *state.NCCLProcess) state.NCCLNetEvidence {
	why := p.IBDisabled
	if why == nil {
		why = p.NoIB
	}
	if why == nil || net(p, netIB).Strength >= state.NCCLStrengthInit {
		return state.NCCLNetEvidence{}
	}
	for _, c := range [...]string{netOFI, netFastSocket, netOther} {
		if net(p, c).Strength > 0 {
			return state.NCCLNetEvidence{}
		}
	}
	return state.NCCLNetEvidence{Class: netSocket, Strength: state.NCCLStrengthInit, NCCLLine: *why}
}

func (s selection) display() string {
	switch s.class {
	case netOther, netFastSocket:
		if s.name != "" {
			return s.name
		}
	}
	return s.class
}

// countHosts lists the host names records came from. Two host strings
// with the same pid, one ending the other, are one process whose name a
// torn write damaged: a torn record's tail glued in front of it
// ("->3837134f4773" for "3837134f4773"), or its first letters cut off
// ("eepseek-v2-5-0" for "deepseek-v2-5-0"); it is counted once.
func (d *decider) countHosts() {
	seen := map[string]bool{}
	ps := d.f.Processes
	d.byPID = make(map[int64][]int, len(ps))
	for i := range ps {
		if ps[i].Kind == "" {
			d.byPID[ps[i].PID] = append(d.byPID[ps[i].PID], i)
		}
	}
	d.torn = tornHosts(ps)
	for i := range ps {
		p := &ps[i]
		if p.Kind != "" || seen[p.Host] || d.alias(i) {
			continue
		}
		seen[p.Host] = true
		d.hosts = append(d.hosts, p.Host)
	}
	d.v.Hosts = len(d.hosts)
}

// alias reports whether process i is another process of the log under a
// damaged host name (see countHosts). Of the two, the one not seen only
// glued to torn text wins, else the first.
func (d *decider) alias(i int) bool {
	ps := d.f.Processes
	p := &ps[i]
	if d.torn[p.Host] {
		return true
	}
	group := d.byPID[p.PID]
	if len(group) > 64 {
		// Containers give every pod the same small pids: many processes
		// sharing a pid are different nodes, not one damaged name.
		return false
	}
	for _, j := range group {
		q := &ps[j]
		if j == i || q.Kind != "" || q.PID != p.PID || q.Host == p.Host || q.Host == "" || p.Host == "" {
			continue
		}
		if !strings.HasSuffix(p.Host, q.Host) && !strings.HasSuffix(q.Host, p.Host) {
			continue
		}
		if p.GluedOnly != q.GluedOnly {
			if p.GluedOnly {
				return true
			}
			continue
		}
		// A name with a character no host name has ("6[g183" from
		// "… -> 6[g183:161258:…", a connection line torn after its
		// peer's bracket) is the damaged one, whichever came first.
		if pj, qj := strings.ContainsAny(p.Host, notInHostName), strings.ContainsAny(q.Host, notInHostName); pj != qj {
			if pj {
				return true
			}
			continue
		}
		if j < i {
			return true
		}
	}
	return false
}

// notInHostName holds characters that no host name has (RFC 1123 allows
// letters, digits, '-' and '.'; '_' occurs in container names) but that
// the text of a torn record glued in front of one does.
const notInHostName = "[]()<>{}`'\"\\ |,;=*"

// tornHosts finds the host names that are another host's name with the
// start of a record glued in front: a process's write cut off after a few
// bytes ("adp-u") and the next record's envelope written right after it
// ("adp-uadp-us-llm-7:235:235 [1] NCCL INFO …"). Such a name is X+K where
// K is a host name of the log and X the start of one; unlike alias it
// needs no common pid, as the glued record is often another GPU's
// process. Only names with such a split are looked at twice.
func tornHosts(ps []state.NCCLProcess) map[string]bool {
	hosts := make(map[string]bool, len(ps))
	for i := range ps {
		if ps[i].Kind == "" && ps[i].Host != "" {
			hosts[ps[i].Host] = true
		}
	}
	if len(hosts) < 2 {
		return nil
	}
	var torn map[string]bool
	for h := range hosts {
		for k := 1; k+3 <= len(h) && k < 256; k++ {
			if !hosts[h[k:]] {
				continue
			}
			x := h[:k]
			for o := range hosts {
				if o != h && strings.HasPrefix(o, x) {
					if torn == nil {
						torn = map[string]bool{}
					}
					torn[h] = true
					break
				}
			}
			if torn[h] {
				break
			}
		}
	}
	return torn
}

// gluedHosts counts the hosts seen only glued to torn text: names that
// may carry a torn record's tail, so they do not prove another node.
func (d *decider) gluedHosts() int {
	n := 0
	for i := range d.f.Processes {
		p := &d.f.Processes[i]
		if p.GluedOnly && p.Kind == "" && !d.alias(i) {
			n++
		}
	}
	return n
}

func (d *decider) sizes() {
	f, v := d.f, d.v
	d.maxNR = -1
	for _, n := range f.NRanks {
		d.maxNR = max(d.maxNR, n)
	}
	switch {
	case d.maxNR > 0:
		v.NRanks = ptr(d.maxNR)
	case f.MaxRank >= 0 || f.NRanksListed > 0:
		// A ring order listing holds every rank of its communicator.
		v.NRanks = ptr(max(f.MaxRank+1, f.NRanksListed))
		v.NRanksInferred = true
	}
	switch {
	case f.NNodes > 0:
		v.NNodes, v.NNodesFrom = ptr(f.NNodes), "nNodes"
	case len(d.hosts) > 1:
		v.NNodes, v.NNodesFrom = ptr(int64(len(d.hosts))), "hostnames"
	case f.MultiNode != nil:
		v.NNodes, v.NNodesFrom = ptr(int64(2)), "at least 2: "+d.line(f.MultiNode.NCCLLoc)
	}
}

// proveOneNode looks for lines that show the whole job ran on one node.
func (d *decider) proveOneNode() {
	f := d.f
	switch {
	case f.NNodes == 1:
		d.oneNode, d.oneWhy = true, "NCCL reports nNodes 1"
	case f.NNodes > 1 || f.MultiNode != nil:
		return // NCCL's own lines say more than one node
	case d.maxNR == 1:
		d.oneNode, d.oneWhy = true, "every communicator has a single rank"
	default:
		if p, n := d.oneProcess(); p != nil {
			d.oneNode = true
			d.oneWhy = "one process (" + p.Host + ":" + strconv.FormatInt(p.PID, 10) + ") drives all " + strconv.FormatInt(n, 10) +
				" ranks, and a process runs on one node"
			break
		}
		if p, n := d.oneProcessListing(); p != nil {
			d.oneNode = true
			d.oneWhy = "one process (" + p.Host + ":" + strconv.FormatInt(p.PID, 10) + ") prints as every rank of the " + strconv.FormatInt(n, 10) +
				"-rank ring on " + strconv.FormatInt(n, 10) + " different GPUs (the ring order listing, which NCCL prints from rank 0 only, and the Trees lines of the others), and a process runs on one node"
			break
		}
		lo, other := false, false
		for i := range f.Processes {
			lo = lo || f.Processes[i].LoopbackIf
			other = other || f.Processes[i].OtherIf
		}
		if lo && !other {
			d.oneNode, d.oneWhy = true, "the bootstrap network is the loopback interface, which cannot reach another node"
		}
	}
	if d.oneNode {
		d.v.NNodes, d.v.NNodesFrom = ptr(int64(1)), "single-node proof"
	}
}

// oneProcess returns the process that holds every rank of the largest
// communicator, if one does (the `nccl-tests -g 8` shape: one pid, one
// communicator instance per GPU), with that communicator's size. The log
// must announce no larger communicator and name no rank beyond it.
func (d *decider) oneProcess() (*state.NCCLProcess, int64) {
	n := d.maxNR
	if n < 2 || d.f.MaxRank >= n || n > 1<<16 {
		return nil, 0
	}
	for i := range d.f.Processes {
		p := &d.f.Processes[i]
		if p.Kind != "" || p.Host == "" {
			// An empty host name is the same on every node, so "host:pid"
			// may be processes of several nodes with the same pid.
			continue
		}
		have := make([]bool, n)
		k := int64(0)
		for _, c := range p.Comms {
			if c.NRanks == n && c.Rank >= 0 && c.Rank < n && !have[c.Rank] {
				have[c.Rank] = true
				k++
			}
		}
		if k == n {
			return p, n
		}
	}
	return nil, 0
}

// oneProcessListing is oneProcess for logs without communicator lines (or
// with too few): a process that printed the ring order listing of an
// N-rank communicator holds its rank 0, as NCCL prints that listing from
// rank 0 only ("if (rank == 0) dumpLine" in src/graph/rings.cc), and a
// Trees line names its printer ("…->me->…", comm->rank). When one process
// prints as each of the N ranks, each from a thread of a different GPU
// ([dev]), the whole communicator runs in it. The listing must be the
// longest of the log, and no larger communicator or higher rank may be
// named: the rule speaks for the largest communicator only. Distinct GPUs
// keep one single-GPU process that is rank 0 of one communicator and rank
// 1 of another from passing.
func (d *decider) oneProcessListing() (*state.NCCLProcess, int64) {
	f := d.f
	for i := range f.Processes {
		p := &f.Processes[i]
		n := p.RingListing
		if p.Kind != "" || p.Host == "" || n < 2 || n > 1<<10 || n != f.NRanksListed || d.maxNR > n || f.MaxRank >= n {
			continue
		}
		devOf := map[int64]int64{0: p.RingListingDev}
		for _, t := range p.TreeRanks {
			if t.Rank > 0 && t.Rank < n {
				devOf[t.Rank] = t.Dev
			}
		}
		if int64(len(devOf)) != n {
			continue
		}
		devs := map[int64]bool{}
		for _, dv := range devOf {
			devs[dv] = true
		}
		if int64(len(devs)) == n {
			return p, n
		}
	}
	return nil, 0
}

func (d *decider) decideInterNode() {
	f, v := d.f, d.v
	var total, gdr int64
	for _, c := range f.NetConnections {
		total += c.Lines
		if c.GDR {
			gdr += c.Lines
		}
	}
	v.NetConnections, v.GDRConnections = total, gdr
	if total > 0 && !d.oneNode {
		if n, p := d.netWithinProcess(); n == total {
			// Every NET connection line joins two ranks that one process
			// drives: GPUs of one host talking through the NIC because
			// NCCL's P2P and SHM transports refused them, not inter-node
			// traffic. Whether other ranks run elsewhere is for the other
			// rules to decide.
			d.netIntra = total
			d.netIntraWhere = p.Host + ":" + strconv.FormatInt(p.PID, 10)
			v.NetConnections, v.GDRConnections = 0, 0
			d.warn("net_within_process", "NCCL used its network transport between GPUs driven by one process ("+d.netIntraWhere+", "+
				strconv.FormatInt(total, 10)+" NET connection lines): traffic between GPUs of one node, through the NIC",
				"P2P and SHM were not usable between these GPUs: check NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, NCCL_SHM_DISABLE and GPU peer access")
			total, gdr = 0, 0
		}
	}
	if d.oneNode {
		v.InterNode = InterNone
		if total > 0 {
			d.warn("net_on_one_node", "NCCL used its network transport between GPUs of one node ("+strconv.FormatInt(total, 10)+" NET connection lines)",
				"P2P and SHM were not usable between these GPUs: check NCCL_P2P_DISABLE/NCCL_SHM_DISABLE, /dev/shm size in containers, and GPU peer access")
		}
		return
	}
	if total > 0 {
		d.fromConnections(total, gdr)
		return
	}
	if d.singleHost() {
		return
	}
	if d.socketBy >= 0 && (len(d.hosts)-d.gluedHosts() > 1 || f.MultiNode != nil) {
		v.InterNode = InterSocket
		v.GDR = ptr(false)
		v.Evidence = v.TCPFallbackReason
		return
	}
	if i := d.allGDROff(); i >= 0 {
		v.InterNode = InterIB
		v.GDR = ptr(false)
		e := d.sel[i].ev
		v.Evidence = d.evidence(e.NCCLLoc, e.Text, 0)
		return
	}
	v.InterNode = InterUnknown
	v.Missing = d.missing()
}

// netWithinProcess counts the NET connection lines whose two ranks one
// process drives: the printing rank and its peer both belong to the same
// communicator (commId, else size) of one host:pid, or both to the
// connection lines of that process that no communicator line claimed. A
// process runs on one host, so such a line is traffic inside a node, which
// NCCL sends through its network transport only when P2P and SHM refuse
// the pair: selectTransport (src/transport.cc) tries p2p, shm, then net,
// and netCanConnect (src/transport/net.cc) accepts any pair. Processes
// without a host name are left out: "" is the same on every node. It
// returns the count and the first process with such a line.
func (d *decider) netWithinProcess() (int64, *state.NCCLProcess) {
	var n int64
	var first *state.NCCLProcess
	for i := range d.f.Processes {
		p := &d.f.Processes[i]
		if p.Kind != "" || p.Host == "" {
			continue
		}
		groups := map[string][]*state.NCCLRankConns{}
		for j := range p.Comms {
			c := &p.Comms[j]
			key := c.CommID
			if key == "" {
				key = "n" + strconv.FormatInt(c.NRanks, 10)
			}
			groups[key] = append(groups[key], &c.Conns)
		}
		for j := range p.Orphans {
			groups["orphans"] = append(groups["orphans"], &p.Orphans[j])
		}
		for _, g := range groups {
			if len(g) < 2 {
				continue
			}
			ranks := make(map[int64]bool, len(g))
			for _, rc := range g {
				if rc.Rank >= 0 {
					ranks[rc.Rank] = true
				}
			}
			for _, rc := range g {
				for _, pl := range rc.Peers {
					if rc.Rank >= 0 && strings.HasPrefix(pl.Transport, "NET/") && pl.Peer != rc.Rank && ranks[pl.Peer] {
						n += pl.Lines
						if first == nil {
							first = p
						}
					}
				}
			}
		}
	}
	return n, first
}

func (d *decider) netConns(class string, gdr bool) *state.NCCLNetConns {
	for i := range d.f.NetConnections {
		if c := &d.f.NetConnections[i]; c.Class == class && c.GDR == gdr {
			return c
		}
	}
	return nil
}

func (d *decider) netLines(class string, gdr bool) int64 {
	if c := d.netConns(class, gdr); c != nil {
		return c.Lines
	}
	return 0
}

// fromConnections decides from NET connection lines. When classes mix,
// the worst one names the verdict: TCP anywhere is a fallback, and IB
// without GDR on some connections is IB without GDR.
func (d *decider) fromConnections(total, gdr int64) {
	v := d.v
	pick := func(cl string, g bool) *Evidence {
		c := d.netConns(cl, g)
		if c == nil {
			return nil
		}
		return d.evidence(c.First.NCCLLoc, c.First.Text, c.Lines)
	}
	n := func(cl string) int64 { return d.netLines(cl, false) + d.netLines(cl, true) }
	v.GDR = ptr(gdr == total)
	switch {
	case n(netSocket) > 0:
		v.InterNode, v.Evidence = InterSocket, pick(netSocket, false)
		v.GDR = ptr(false)
	case n(netFastSocket) > 0:
		v.InterNode, v.Evidence = InterSocket, pick(netFastSocket, false)
		v.GDR = ptr(false)
	case n(netOFI) > 0:
		v.InterNode = InterOFI
		if d.netLines(netOFI, false) > 0 {
			v.Evidence = pick(netOFI, false)
		} else {
			v.Evidence = pick(netOFI, true)
		}
	case d.netLines(netIB, false) > 0:
		v.InterNode, v.Evidence = InterIB, pick(netIB, false)
	case d.netLines(netIB, true) > 0:
		v.InterNode, v.Evidence = InterGDRDMA, pick(netIB, true)
	case d.netLines(netOther, true) > 0 && d.netLines(netOther, false) == 0:
		v.InterNode, v.Evidence = InterGDRDMA, pick(netOther, true)
	default:
		v.InterNode = InterUnknown
		v.Evidence = pick(netOther, false)
		v.Missing = "inter-node connections use a network plugin gpuprobe does not classify (" + d.netNames() + ")"
	}
	if gdr > 0 && gdr < total {
		d.warn("gdr_partial", fmt.Sprintf("only %d of %d inter-node connection lines use GPUDirect RDMA", gdr, total),
			"NCCL decides GDR per GPU/NIC pair: the GPUs without it are too far from their NIC (NCCL_NET_GDR_LEVEL) or their NIC lacks peer-memory support")
	}
}

// covers reports whether the ranks seen include 0..n-1.
func (d *decider) covers(n int64) bool {
	if n <= 0 {
		return false
	}
	for _, r := range d.f.Ranks {
		if r.From <= 0 && r.To >= n-1 {
			return true
		}
	}
	return false
}

// singleHost applies the weaker single-node rules that need every record
// to come from one host name, and reports whether it decided. A line that
// shows more than one node (f.MultiNode) rules it out: an excerpt can hold
// one host's lines of a multi-node job.
func (d *decider) singleHost() bool {
	f, v := d.f, d.v
	if len(d.hosts) != 1 || d.hosts[0] == "" || f.MultiNode != nil {
		// An empty host name (gethostname failed) is the same on every
		// node: records under it may come from several.
		return false
	}
	if f.NRanksListed > 0 && !d.covers(f.NRanksListed) {
		return false // a ring lists ranks that print elsewhere
	}
	intra := f.Connections["P2P"] + f.Connections["SHM"]
	all := false
	if d.maxNR > 1 {
		all = d.covers(d.maxNR)
	} else if intra > 0 && !d.netLoaded() {
		// Without a communicator size, the ranks seen are all there are
		// only if nothing shows a network at work: a network plugin or
		// libfabric loaded is what one node's log of a multi-node job
		// (srun --output=%N.log) shows before its NET connection lines.
		all = d.covers(f.MaxRank+1) || !d.anyNetEvidence()
	}
	if !all {
		return false
	}
	v.InterNode = InterNone
	n := d.maxNR
	if n <= 0 {
		n = f.MaxRank + 1
	}
	d.oneWhy = "all " + strconv.FormatInt(n, 10) + " ranks print from one host (" + hostName(d.hosts[0]) + ") and only intra-node transports appear"
	if d.maxNR <= 0 && f.NRanksListed < n {
		// No line gives the communicator's size: n is one more than the
		// highest rank named, not a count the log states.
		d.oneWhy = "ranks 0–" + strconv.FormatInt(n-1, 10) + ", every rank the log names, print from one host (" + hostName(d.hosts[0]) + ") and only intra-node transports appear"
	}
	if d.maxNR <= 0 && !d.covers(n) {
		d.oneWhy = "every record comes from one host (" + hostName(d.hosts[0]) + "), connections are all intra-node, and no network module is mentioned"
	}
	v.NNodes, v.NNodesFrom = ptr(int64(1)), "single host"
	return true
}

// hostName shows an empty host name (NCCL prints one when gethostname
// fails) as such.
func hostName(h string) string {
	if h == "" {
		return "an empty host name"
	}
	return h
}

func (d *decider) anyNetEvidence() bool {
	for i := range d.f.Processes {
		p := &d.f.Processes[i]
		if p.NoIB != nil || p.IBDisabled != nil {
			return true
		}
		for _, e := range p.Net {
			if e.Strength > 0 {
				return true
			}
		}
	}
	return false
}

// netLoaded reports whether a line shows a network plugin or library
// outside NCCL's core at work: a net plugin loaded or its symbols looked
// up, libfabric lines, or a process's evidence for OFI, FastSocket or an
// unclassified plugin.
func (d *decider) netLoaded() bool {
	if d.f.NetPlugin != nil {
		return true
	}
	for i := range d.f.Processes {
		for _, e := range d.f.Processes[i].Net {
			if e.Strength > 0 && (e.Class == netOFI || e.Class == netFastSocket || e.Class == netOther) {
				return true
			}
		}
	}
	return false
}

// allGDROff returns a process that selected IB and reports GPUDirect RDMA
// disabled on every HCA it listed, provided no process reports it enabled;
// -1 when there is none.
func (d *decider) allGDROff() int {
	found := -1
	for i := range d.f.Processes {
		p := &d.f.Processes[i]
		if p.GDREnabled {
			return -1
		}
		if found >= 0 || d.sel[i].class != netIB || p.GDRDisabledLines == 0 {
			continue
		}
		if p.HCAs > 0 && p.HCAs <= 64 {
			all := uint64(1)<<uint(p.HCAs) - 1
			if p.HCAs == 64 {
				all = ^uint64(0)
			}
			if p.GDRDisabledHCAs&all != all {
				continue
			}
		}
		found = i
	}
	return found
}

func (d *decider) missing() string {
	f, v := d.f, d.v
	if f.Stats.Records == 0 {
		return "the input has no NCCL records: run with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) and capture stdout and stderr of every rank"
	}
	s := "no inter-node connection line (\"Channel … via NET/…\") is in the log"
	if v.NetSelected != netUnknown {
		s = "NCCL selected " + v.NetSelected + " but " + s
	}
	if d.netIntra > 0 {
		s = "no line shows traffic between nodes: all " + strconv.FormatInt(d.netIntra, 10) +
			" NET connection lines join GPUs that one process (" + d.netIntraWhere + ") drives, inside one node"
	}
	intra := f.Connections["P2P"] + f.Connections["SHM"]
	if d.hasFinding("ib_completion_error") {
		// NCCL prints "NET/IB : Got completion from peer … with error"
		// from ncclIbTest (src/transport/net_ib.cc), which polls the
		// completion queue of a connection already set up and carrying
		// data: the excerpt starts after the lines that say how.
		return s + ", and its IB completion errors come from connections that were already set up and carrying data" +
			". NCCL prints connection lines at init with NCCL_DEBUG_SUBSYS including INIT or NET; this excerpt starts after them"
	}
	switch {
	case d.hasErrors() && intra == 0 && d.collNetSetup():
		// NCCL sets CollNet up (ncclCollNetSetup in initTransportsRank,
		// src/init.cc) after ncclTransportRingConnect and
		// ncclTransportTreeConnect, unless NCCL_RUNTIME_CONNECT (2.22+)
		// defers those to the first collective; its failure is the WARN
		// "Cannot initialize CollNet, using point-to-point network
		// instead" (ncclTransportCollNetCheck, src/transport.cc), and
		// the SHARP plugin's errors come from its collnet connect. The
		// log cannot say which order held: not "before any connection".
		s += ", only errors from setting up CollNet (SHARP), which NCCL does after connecting rings and trees unless it defers those connections to the first collective (NCCL_RUNTIME_CONNECT, 2.22+)"
	case d.hasErrors() && intra == 0 && d.ncclErrors():
		s += ", only errors from before any connection was set up"
	case len(d.hosts) == 1 && f.MultiNode != nil:
		s += ", and every record comes from one host (" + hostName(d.hosts[0]) + ") while " + d.line(f.MultiNode.NCCLLoc) +
			" shows more than one node: the log holds one node's lines only"
	case len(d.hosts) == 1:
		s += ", and nothing shows that every rank runs on " + hostName(d.hosts[0])
	case d.socketBy >= 0 && d.gluedHosts() > 0:
		s += "; NCCL selected its Socket module, but the other host names appear only glued to torn records, so they do not show another node"
	}
	return s + ". NCCL prints connection lines at init with NCCL_DEBUG_SUBSYS including INIT or NET; an excerpt may end before the communicators connect"
}

// ncclErrors: an error comes from NCCL's own lines. A framework's lines
// alone (a watchdog timeout, which follows a collective that ran; "NCCL
// error in: …" or its ncclInternalError line; a crash) do not say when
// NCCL failed.
func (d *decider) ncclErrors() bool {
	for _, x := range d.f.Findings {
		switch x.Code {
		case "framework_nccl_error", "collective_timeout", "crash":
			continue
		}
		if ruleFor(x.Code, x.Key).sev == SevError {
			return true
		}
	}
	return false
}

// collNetSetup: the log shows CollNet being set up, a CollNet connection
// line or an error finding about CollNet or SHARP (the HPC-X collnet
// plugin's "SHARP coll init error", "SHARP group create …"). Called only
// when missing() words an unknown verdict.
func (d *decider) collNetSetup() bool {
	if d.f.Connections["COLLNET"] > 0 {
		return true
	}
	for _, x := range d.f.Findings {
		if ruleFor(x.Code, x.Key).sev == SevError &&
			(strings.Contains(x.Message, "CollNet") || strings.Contains(x.Message, "SHARP")) {
			return true
		}
	}
	return false
}

func (d *decider) netNames() string {
	var names []string
	for n := range d.f.NetNames {
		names = append(names, "NET/"+n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// versionCheck warns when ranks run different NCCL versions.
func (d *decider) versionCheck() {
	vs := d.f.Versions
	if len(vs) < 2 {
		return
	}
	// A version printed without "+cudaX.Y" (PyTorch's "NCCL error in: …,
	// NCCL version 2.28.9", torch.cuda.nccl.version()) names no build: it
	// is not a different build of the same version.
	base := map[string]bool{}
	builds := map[string]bool{}
	for _, s := range vs {
		b, cuda, ok := strings.Cut(s, "+")
		base[b] = true
		if ok {
			builds[b+"+"+cuda] = true
		}
	}
	list := strings.Join(vs, ", ")
	if len(base) > 1 {
		d.warn("version_mismatch", "ranks run different NCCL versions: "+list,
			"every rank must load the same NCCL: check the container images, LD_LIBRARY_PATH and the framework's bundled NCCL on each node")
		return
	}
	if len(builds) < 2 {
		return
	}
	d.warn("cuda_build_mismatch", "ranks run the same NCCL built for different CUDA versions: "+list,
		"usually harmless, but it means the nodes do not run the same software stack")
}

// runChecks judges how `gpuprobe nccl run` ran the command: debug settings
// of the user's that hide what the verdict needs, and output that could
// not be passed on.
func (d *decider) runChecks() {
	r := d.f.Run
	if r == nil {
		return
	}
	if lv, ok := r.UserEnv["NCCL_DEBUG"]; ok && !strings.EqualFold(lv, "INFO") && !strings.EqualFold(lv, "TRACE") {
		d.warn("nccl_debug_level", "NCCL_DEBUG="+lv+" was set by you: NCCL prints no INFO lines, so the verdict cannot see the transports",
			"unset NCCL_DEBUG (gpuprobe sets INFO) or set it to INFO")
	}
	if sub, ok := r.UserEnv["NCCL_DEBUG_SUBSYS"]; ok && !subsysCovers(sub) {
		d.warn("nccl_debug_subsys", "NCCL_DEBUG_SUBSYS="+sub+" was set by you and leaves out INIT or NET, which print the connection and network lines",
			"unset NCCL_DEBUG_SUBSYS (gpuprobe sets INIT,NET) or include INIT,NET")
	}
	if f := r.UserEnv["NCCL_DEBUG_FILE"]; f != "" {
		d.warn("nccl_debug_file", "NCCL_DEBUG_FILE="+f+" sends NCCL's log to files, not to stdout: this verdict covers only what reached stdout/stderr",
			"unset NCCL_DEBUG_FILE, or analyse the files with `gpuprobe nccl analyze FILE…`")
	}
	for _, name := range []string{"stdout", "stderr"} {
		if err, ok := r.OutputErrors[name]; ok {
			d.warn("output_error", "could not pass the command's "+name+" on: "+err, "")
		}
	}
}

func subsysCovers(s string) bool {
	has := map[string]bool{}
	for _, p := range strings.Split(strings.ToUpper(s), ",") {
		has[strings.TrimSpace(p)] = true
	}
	if has["ALL"] {
		return true
	}
	return has["INIT"] && has["NET"]
}

// limits says which memory caps the log reached.
func (d *decider) limits() {
	s := d.f.Stats
	var parts []string
	if s.ProcessCap > 0 {
		parts = append(parts, "the log has more than "+strconv.Itoa(s.ProcessCap)+
			" processes; the ones past that are kept together as \"(more processes)\", so their hosts are not counted and their per-process network lines are merged")
	}
	if s.OrphanCap > 0 {
		parts = append(parts, "connection lines of more than "+strconv.Itoa(s.OrphanCap)+
			" ranks came before (or without) their communicator's line; those of the ranks past that are counted in the totals but not per rank")
	}
	if s.Untracked > 0 {
		parts = append(parts, strconv.FormatInt(s.Untracked, 10)+" records went past a per-process or per-communicator cap and were only counted")
	}
	if s.FindingsDropped > 0 {
		parts = append(parts, strconv.FormatInt(s.FindingsDropped, 10)+" findings past the first 256 kinds were dropped")
	}
	d.v.Limits = strings.Join(parts, "; ")
}

func (d *decider) warn(code, msg, hint string) {
	d.extraWarnings = append(d.extraWarnings, Finding{Severity: SevWarning, Code: code, Message: msg, Hint: hint, Count: 1, Lines: []Location{}})
}

func (d *decider) location(l state.NCCLLoc) Location {
	var src string
	if in := d.f.Stats.Inputs; len(in) > 1 && int(l.Input) < len(in) && l.Input >= 0 {
		src = in[l.Input]
	}
	return Location{Source: src, Line: l.Line}
}

func (d *decider) evidence(at state.NCCLLoc, text string, count int64) *Evidence {
	if at.Line <= 0 {
		return nil
	}
	return &Evidence{Location: d.location(at), Text: text, Count: count}
}

func (d *decider) line(at state.NCCLLoc) string {
	l := d.location(at)
	if l.Source != "" {
		return l.Source + ":" + strconv.FormatInt(l.Line, 10)
	}
	return "line " + strconv.FormatInt(l.Line, 10)
}

func ptr[T any](v T) *T { return &v }
