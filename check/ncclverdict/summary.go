package ncclverdict

import (
	"strconv"
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
		if d.netLines(netFastSocket, false)+d.netLines(netFastSocket, true) > 0 {
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
	if f := d.f.Format; f == "2.2" {
		v.Summary += " (NCCL 2.2 log format: INFO lines without the word NCCL.)"
	}
}

// scope is " on 2 nodes, 16 ranks" with what is known.
func (d *decider) scope() string {
	v := d.v
	var parts []string
	if v.NNodes != nil && *v.NNodes > 1 {
		s := strconv.FormatInt(*v.NNodes, 10) + " nodes"
		if strings.HasPrefix(v.NNodesFrom, "at least") {
			s = "≥" + s
		}
		parts = append(parts, s)
	}
	if v.NRanks != nil && *v.NRanks > 0 {
		s := strconv.FormatInt(*v.NRanks, 10) + " ranks"
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
	if len(d.f.NetNames) == 0 {
		return "NET/" + d.v.NetSelected
	}
	return d.netNames()
}

// socketReason gives the most telling reason any Socket process shows:
// IB turned off, IB not found, the module forced, or only the choice.
func (d *decider) socketReason() string {
	off, none, forced, chose := -1, -1, -1, -1
	first := func(cur, i int) int {
		if cur < 0 {
			return i
		}
		return cur
	}
	for i := range d.f.Processes {
		p := &d.f.Processes[i]
		if s := d.sel[i]; s.class != netSocket || s.ev.Strength < 2 {
			continue
		}
		switch {
		case p.IBDisabled != nil:
			off = first(off, i)
		case p.NoIB != nil:
			none = first(none, i)
		case p.Env["NCCL_NET"] == "Socket":
			forced = first(forced, i)
		case strings.HasPrefix(net(p, netSocket).Text, "Using network "):
			chose = first(chose, i)
		}
	}
	ps := d.f.Processes
	switch {
	case off >= 0:
		return "NCCL_IB_DISABLE=1 turned InfiniBand off (" + d.line(ps[off].IBDisabled.NCCLLoc) + ")."
	case none >= 0:
		p := &ps[none]
		s := "NCCL found no InfiniBand device: \"" + p.NoIB.Text + "\" (" + d.line(p.NoIB.NCCLLoc) + ")"
		if p.SocketDevices != nil {
			s += ", then initialised its Socket module: \"" + p.SocketDevices.Text + "\" (" + d.line(p.SocketDevices.NCCLLoc) + ")"
		}
		return s + "."
	case forced >= 0:
		return "NCCL_NET=Socket forced it."
	case chose >= 0:
		e := net(&ps[chose], netSocket)
		return "NCCL chose its Socket module (\"" + e.Text + "\", " + d.line(e.NCCLLoc) + "); the log does not say why not InfiniBand."
	}
	return "the log does not show why InfiniBand was not used (no \"NET/IB : No device found.\" or NCCL_IB_DISABLE line)."
}

// gdrOffReason gives the first reason the log shows for GPUDirect RDMA
// being off.
func (d *decider) gdrOffReason() string {
	for _, x := range d.f.Findings {
		if why, ok := gdrWhy[x.Code]; ok && len(x.Lines) > 0 {
			return "GPUDirect RDMA is disabled: " + why + ": \"" + x.Message + "\" (" + d.line(x.Lines[0]) + ")."
		}
	}
	if lv := d.v.Env["NCCL_NET_GDR_LEVEL"]; len(lv) > 0 {
		return "NCCL_NET_GDR_LEVEL=" + strings.Join(lv, "/") + " is set."
	}
	return "the log does not say why (GDR decision lines need NCCL_DEBUG_SUBSYS including NET)."
}
