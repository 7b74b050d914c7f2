package nccl

import (
	"bytes"
	"cmp"
	"strings"
)

// summary writes the one-line verdict: what carried inter-node traffic,
// where, and the first reason the log gives for it.
func (d *decider) summary() {
	v := d.v
	scope := d.scope()
	nets := d.connNets()
	switch v.InterNode {
	case InterGDRDMA:
		v.Summary = "Inter-node traffic used GPUDirect RDMA over InfiniBand/RoCE (" + nets + ")" + scope + "."
	case InterIB:
		v.Summary = "Inter-node traffic used InfiniBand/RoCE WITHOUT GPUDirect RDMA (" + nets + ")" + scope + " — " + d.gdrOffReason()
	case InterSocket:
		if d.a.conns.n[netFastSocket][0]+d.a.conns.n[netFastSocket][1] > 0 {
			v.Summary = "Inter-node traffic used TCP through the FastSocket plugin (" + nets + ")" + scope + "."
			break
		}
		v.Summary = "Inter-node traffic used TCP sockets (NET/Socket)" + scope + " — " + d.socketReason()
	case InterOFI:
		with := "with"
		if v.GDR == nil || !*v.GDR {
			with = "WITHOUT"
		}
		v.Summary = "Inter-node traffic used libfabric/EFA (" + nets + ") " + with + " GPUDirect RDMA" + scope + "."
	case InterNone:
		v.Summary = "No inter-node traffic: " + d.oneWhy + "."
	default:
		v.Summary = "Inter-node transport unknown: " + v.Missing + "."
	}
}

// scope is " on 2 nodes, 16 ranks" with what is known.
func (d *decider) scope() string {
	v := d.v
	var parts []string
	if v.NNodes != nil && *v.NNodes > 1 {
		parts = append(parts, itoa(*v.NNodes)+" nodes")
	}
	if v.NRanks != nil && *v.NRanks > 0 {
		s := itoa(*v.NRanks) + " ranks"
		if v.NRanksInferred {
			s = "≥" + s
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return " on " + strings.Join(parts, ", ")
}

// connNets names the NET modules on connection lines ("NET/IBext_v8"), or
// the selected module when there were none.
func (d *decider) connNets() string {
	if len(d.a.conns.names) == 0 {
		return "NET/" + d.v.NetSelected
	}
	return d.netNames()
}

func (d *decider) line(at loc) string {
	l := location(at, d.a.sources)
	if l.Source != "" {
		return l.Source + ":" + itoa(l.Line)
	}
	return "line " + itoa(l.Line)
}

// socketReason gives the most telling reason any Socket process shows:
// IB turned off, IB not found, the module forced, or only the choice.
func (d *decider) socketReason() string {
	var off, none, forced, chose *process
	for _, p := range d.a.order {
		if s := d.sel[p]; s.class != netSocket || s.ev.strength < strengthInit {
			continue
		}
		switch {
		case p.ibOff.at.valid():
			off = cmp.Or(off, p)
		case p.noIB.at.valid():
			none = cmp.Or(none, p)
		case p.env["NCCL_NET"] == "Socket":
			forced = cmp.Or(forced, p)
		case bytes.HasPrefix([]byte(p.net[netSocket].text), msgUsingNet):
			chose = cmp.Or(chose, p)
		}
	}
	switch {
	case off != nil:
		return "NCCL_IB_DISABLE=1 turned InfiniBand off (" + d.line(off.ibOff.at) + ")."
	case none != nil:
		return "NCCL found no InfiniBand device: \"" + none.noIB.text + "\" (" + d.line(none.noIB.at) + ")."
	case forced != nil:
		return "NCCL_NET=Socket forced it."
	case chose != nil:
		e := chose.net[netSocket]
		return "NCCL chose its Socket module (\"" + e.text + "\", " + d.line(e.at) + "); the log does not say why not InfiniBand."
	}
	return "the log does not show why InfiniBand was not used (no \"NET/IB : No device found.\" or NCCL_IB_DISABLE line)."
}

// gdrOffReason gives the first reason the log shows for GPUDirect RDMA
// being off.
func (d *decider) gdrOffReason() string {
	a := d.a
	var best *Finding
	for _, f := range a.find.byKey {
		switch f.Code {
		case "gdr_no_module", "gdr_disabled", "gdr_distance":
			if best == nil || f.order < best.order {
				best = f
			}
		}
	}
	if best != nil {
		return "GPUDirect RDMA is disabled: " + gdrReasons[best.Code].why + ": \"" + best.Message + "\" (" + d.line(best.at[0]) + ")."
	}
	if lv := d.v.Env["NCCL_NET_GDR_LEVEL"]; len(lv) > 0 {
		return "NCCL_NET_GDR_LEVEL=" + strings.Join(lv, "/") + " is set."
	}
	return "the log does not say why (GDR decision lines need NCCL_DEBUG_SUBSYS including NET)."
}
