package nccl

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Verdict judges what the analyzer has read so far. It can be called at
// any time (a live run asks at the end) and does not change the state.
func (a *Analyzer) Verdict() *Verdict {
	a.mu.Lock()
	defer a.mu.Unlock()
	d := decider{a: a, v: &Verdict{NCCLVersions: []string{}}}
	return d.run()
}

type decider struct {
	a *Analyzer
	v *Verdict

	sel      map[*process]selection
	hosts    []string
	oneNode  bool
	oneWhy   string
	maxNR    int64
	socketBy *process

	extraWarnings []Finding
}

type selection struct {
	class netClass
	ev    netEvidence
	name  string
}

func (d *decider) run() *Verdict {
	a, v := d.a, d.v
	v.Stats = a.stats
	v.Stats.Inputs = append([]string(nil), a.stats.Inputs...)
	v.Stats.Processes = len(a.procs)
	v.Stats.FindingsDropped = a.find.dropped
	v.NCCLVersions = append(v.NCCLVersions, a.versions...)
	v.CollNet, v.NVLS = a.collnet, a.nvls
	v.Env = a.envSummary()

	d.selectNets()
	d.countHosts()
	d.sizes()
	d.proveOneNode()
	d.decideInterNode()
	d.versionCheck()
	d.summary()

	v.Errors = a.find.list(SevError, a.sources)
	v.Warnings = a.find.list(SevWarning, a.sources)
	v.Warnings = append(v.Warnings, d.extraWarnings...)
	v.Notes = a.find.list(SevNote, a.sources)
	v.Communicators, v.CommunicatorsOmitted = a.communicators()
	v.Processes, v.ProcessesOmitted = d.processes()
	return v
}

// selectNets decides, per process, which network module NCCL selected,
// then for the log.
func (d *decider) selectNets() {
	a, v := d.a, d.v
	d.sel = make(map[*process]selection, len(a.order))
	best := strengthNone
	for _, p := range a.order {
		s := p.selected()
		d.sel[p] = s
		if s.ev.strength > best {
			best = s.ev.strength
		}
	}
	var names []string
	for _, p := range a.order {
		s := d.sel[p]
		if s.class == netUnknown {
			continue
		}
		if s.class == netSocket && s.ev.strength >= strengthInit && d.socketBy == nil {
			d.socketBy = p
		}
		if s.ev.strength == best {
			n := s.display()
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	v.NetSelected = "unknown"
	if len(names) > 0 {
		v.NetSelected = strings.Join(names, ",")
	}
	if len(names) > 1 {
		d.warn("net_mismatch", "processes selected different network modules: "+v.NetSelected,
			"every rank must use the same network module; compare NCCL_* settings and the installed plugins across nodes")
	}
	if p := d.socketBy; p != nil {
		v.TCPFallback = true
		e := d.sel[p].ev
		v.TCPFallbackReason = a.evidenceOf(e.at, e.text, 0)
	}
}

// selected returns the module the process's lines point to. Lines that
// show the module at work beat init lines, which beat a loaded plugin;
// at equal strength a plugin beats IB beats Socket, the order in which
// NCCL tries them.
func (p *process) selected() selection {
	net := p.net
	if e := p.impliedSocket(); e.strength > net[netSocket].strength {
		net[netSocket] = e
	}
	order := [...]netClass{netOFI, netFastSocket, netOther, netIB, netSocket}
	var s selection
	for _, c := range order {
		if net[c].strength > s.ev.strength {
			s = selection{class: c, ev: net[c]}
		}
	}
	if s.class == netOther || s.class == netFastSocket {
		s.name = p.netName
	}
	return s
}

// impliedSocket: NCCL falls back to its Socket module when IB has no device
// or is disabled and no plugin took over. NCCL <= 2.5 does not print
// "Using network Socket", so this is the only sign there.
func (p *process) impliedSocket() netEvidence {
	why := p.ibOff
	if !why.at.valid() {
		why = p.noIB
	}
	if !why.at.valid() || p.net[netIB].strength >= strengthInit {
		return netEvidence{}
	}
	for _, c := range [...]netClass{netOFI, netFastSocket, netOther} {
		if p.net[c].strength > strengthNone {
			return netEvidence{}
		}
	}
	return netEvidence{strength: strengthInit, at: why.at, text: why.text}
}

func (s selection) display() string {
	switch s.class {
	case netOther, netFastSocket:
		if s.name != "" {
			return s.name
		}
	}
	return s.class.String()
}

func (d *decider) countHosts() {
	seen := map[string]bool{}
	for _, p := range d.a.order {
		if p.pseudo || seen[p.host] {
			continue
		}
		seen[p.host] = true
		d.hosts = append(d.hosts, p.host)
	}
	d.v.Hosts = len(d.hosts)
}

func (d *decider) sizes() {
	a, v := d.a, d.v
	d.maxNR = -1
	for n := range a.nranks {
		d.maxNR = max(d.maxNR, n)
	}
	switch {
	case d.maxNR > 0:
		v.NRanks = ptr(d.maxNR)
	case a.maxRank >= 0:
		v.NRanks = ptr(a.maxRank + 1)
		v.NRanksInferred = true
	}
	if a.nnodes > 0 {
		v.NNodes, v.NNodesFrom = ptr(a.nnodes), "nNodes"
	} else if len(d.hosts) > 1 {
		v.NNodes, v.NNodesFrom = ptr(int64(len(d.hosts))), "hostnames"
	}
}

// proveOneNode looks for lines that show the whole job ran on one node.
func (d *decider) proveOneNode() {
	a := d.a
	switch {
	case a.nnodes == 1:
		d.oneNode, d.oneWhy = true, "NCCL reports nNodes 1"
	case d.maxNR == 1:
		d.oneNode, d.oneWhy = true, "every communicator has a single rank"
	default:
		lo, other := false, false
		for _, p := range a.order {
			lo = lo || p.loIf
			other = other || p.nonLoIf
		}
		if lo && !other {
			d.oneNode, d.oneWhy = true, "the bootstrap network is the loopback interface, which cannot reach another node"
		}
	}
	if d.oneNode {
		d.v.NNodes, d.v.NNodesFrom = ptr(int64(1)), "single-node proof"
	}
}

func (d *decider) decideInterNode() {
	a, v := d.a, d.v
	c := &a.conns
	total, gdr := c.total(), c.gdr()
	v.NetConnections, v.GDRConnections = total, gdr
	if d.oneNode {
		v.InterNode = InterNone
		if total > 0 {
			d.warn("net_on_one_node", "NCCL used its network transport between GPUs of one node ("+itoa(total)+" NET connection lines)",
				"P2P and SHM were not usable between these GPUs: check NCCL_P2P_DISABLE/NCCL_SHM_DISABLE, /dev/shm size in containers, and GPU peer access")
		}
		return
	}
	if total > 0 {
		d.fromConnections()
		return
	}
	if d.singleHost() {
		return
	}
	if d.socketBy != nil && len(d.hosts) > 1 {
		v.InterNode = InterSocket
		v.GDR = ptr(false)
		v.Evidence = v.TCPFallbackReason
		return
	}
	if p := d.allGDROff(); p != nil {
		v.InterNode = InterIB
		v.GDR = ptr(false)
		e := d.sel[p].ev
		v.Evidence = a.evidenceOf(e.at, e.text, 0)
		return
	}
	v.InterNode = InterUnknown
	v.Missing = d.missing()
}

// fromConnections decides from NET connection lines. When classes mix,
// the worst one names the verdict: TCP anywhere is a fallback, and IB
// without GDR on some connections is IB without GDR.
func (d *decider) fromConnections() {
	a, v := d.a, d.v
	c := &a.conns
	pick := func(cl netClass, g int) *Evidence {
		f := c.first[cl][g]
		return a.evidenceOf(f.at, f.text, c.n[cl][g])
	}
	total, gdr := c.total(), c.gdr()
	v.GDR = ptr(gdr == total)
	switch {
	case c.n[netSocket][0]+c.n[netSocket][1] > 0:
		v.InterNode, v.Evidence = InterSocket, pick(netSocket, 0)
		v.GDR = ptr(false)
	case c.n[netFastSocket][0]+c.n[netFastSocket][1] > 0:
		v.InterNode, v.Evidence = InterSocket, pick(netFastSocket, 0)
		v.GDR = ptr(false)
	case c.n[netOFI][0]+c.n[netOFI][1] > 0:
		v.InterNode = InterOFI
		if c.n[netOFI][0] > 0 {
			v.Evidence = pick(netOFI, 0)
		} else {
			v.Evidence = pick(netOFI, 1)
		}
	case c.n[netIB][0] > 0:
		v.InterNode, v.Evidence = InterIB, pick(netIB, 0)
	case c.n[netIB][1] > 0:
		v.InterNode, v.Evidence = InterGDRDMA, pick(netIB, 1)
	case c.n[netOther][1] > 0 && c.n[netOther][0] == 0:
		v.InterNode, v.Evidence = InterGDRDMA, pick(netOther, 1)
	default:
		v.InterNode = InterUnknown
		v.Evidence = pick(netOther, 0)
		v.Missing = "inter-node connections use a network plugin gpuprobe does not classify (" + d.netNames() + ")"
	}
	if gdr > 0 && gdr < total {
		d.warn("gdr_partial", fmt.Sprintf("only %d of %d inter-node connection lines use GPUDirect RDMA", gdr, total),
			"NCCL decides GDR per GPU/NIC pair: the GPUs without it are too far from their NIC (NCCL_NET_GDR_LEVEL) or their NIC lacks peer-memory support")
	}
}

// singleHost applies the weaker single-node rules that need every record
// to come from one host name, and reports whether it decided.
func (d *decider) singleHost() bool {
	a, v := d.a, d.v
	if len(d.hosts) != 1 {
		return false
	}
	intra := a.intra[trP2P] + a.intra[trSHM]
	all := false
	if d.maxNR > 1 {
		all = a.ranks.covers(d.maxNR)
	} else if intra > 0 {
		all = a.ranks.covers(a.maxRank+1) || !d.anyNetEvidence()
	}
	if !all {
		return false
	}
	v.InterNode = InterNone
	n := d.maxNR
	if n <= 0 {
		n = a.maxRank + 1
	}
	d.oneWhy = "all " + itoa(n) + " ranks print from one host (" + d.hosts[0] + ") and only intra-node transports appear"
	if d.maxNR <= 0 && !a.ranks.covers(n) {
		d.oneWhy = "every record comes from one host (" + d.hosts[0] + "), connections are all intra-node, and no network module is mentioned"
	}
	v.NNodes, v.NNodesFrom = ptr(int64(1)), "single host"
	return true
}

func (d *decider) anyNetEvidence() bool {
	for _, p := range d.a.order {
		if p.noIB.at.valid() || p.ibOff.at.valid() {
			return true
		}
		for c := range p.net {
			if p.net[c].strength > strengthNone {
				return true
			}
		}
	}
	return false
}

// allGDROff returns a process that selected IB and reports GPUDirect RDMA
// disabled on every HCA it listed, provided no process reports it enabled.
func (d *decider) allGDROff() *process {
	var found *process
	for _, p := range d.a.order {
		if p.gdrOn {
			return nil
		}
		if found != nil || d.sel[p].class != netIB || p.gdrOffN == 0 {
			continue
		}
		if p.hcas > 0 && p.hcas <= 64 {
			all := uint64(1)<<uint(p.hcas) - 1
			if p.hcas == 64 {
				all = ^uint64(0)
			}
			if p.gdrOff&all != all {
				continue
			}
		}
		found = p
	}
	return found
}

func (d *decider) missing() string {
	a, v := d.a, d.v
	if a.stats.Records == 0 {
		return "the input has no NCCL records: run with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) and capture stdout and stderr of every rank"
	}
	s := "no inter-node connection line (\"Channel … via NET/…\") is in the log"
	if v.NetSelected != "unknown" {
		s = "NCCL selected " + v.NetSelected + " but " + s
	}
	switch {
	case d.hasErrors() && a.intra[trP2P]+a.intra[trSHM] == 0:
		s += ", only errors from before any connection was set up"
	case len(d.hosts) == 1:
		s += ", and nothing shows that every rank runs on " + d.hosts[0]
	}
	return s + ". NCCL prints connection lines at init with NCCL_DEBUG_SUBSYS including INIT or NET; an excerpt may end before the communicators connect"
}

func (d *decider) hasErrors() bool {
	for _, f := range d.a.find.byKey {
		if f.Severity == SevError {
			return true
		}
	}
	return false
}

func (d *decider) netNames() string {
	var names []string
	for n := range d.a.conns.names {
		names = append(names, "NET/"+n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// versionCheck warns when ranks run different NCCL versions.
func (d *decider) versionCheck() {
	a := d.a
	if len(a.versions) < 2 {
		return
	}
	base := map[string]bool{}
	for _, s := range a.versions {
		b, _, _ := strings.Cut(s, "+")
		base[b] = true
	}
	list := strings.Join(a.versions, ", ")
	if len(base) > 1 {
		d.warn("version_mismatch", "ranks run different NCCL versions: "+list,
			"every rank must load the same NCCL: check the container images, LD_LIBRARY_PATH and the framework's bundled NCCL on each node")
		return
	}
	d.warn("cuda_build_mismatch", "ranks run the same NCCL built for different CUDA versions: "+list,
		"usually harmless, but it means the nodes do not run the same software stack")
}

func (d *decider) warn(code, msg, hint string) {
	d.extraWarnings = append(d.extraWarnings, Finding{Severity: SevWarning, Code: code, Message: msg, Hint: hint, Count: 1, Lines: []Location{}})
}

func (a *Analyzer) evidenceOf(at loc, text string, count int64) *Evidence {
	if !at.valid() {
		return nil
	}
	return &Evidence{Location: location(at, a.sources), Text: text, Count: count}
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

func ptr[T any](v T) *T { return &v }
