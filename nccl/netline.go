package nccl

import "bytes"

// Network lines: which network module NCCL selected, which devices it found,
// and whether it may use GPUDirect RDMA on them.

// netClass groups network module names by what they mean for the verdict.
type netClass uint8

const (
	netUnknown    netClass = iota
	netIB                  // NCCL's IB verbs module and the HPC-X/SHARP plugin (IBext, IBext_v8, …); IB and RoCE
	netSocket              // NCCL's own TCP module
	netOFI                 // aws-ofi-nccl (EFA and other libfabric providers)
	netFastSocket          // Google's FastSocket plugin: TCP, but not NCCL's Socket module
	netOther               // a plugin gpuprobe does not classify
	numNetClasses
)

func (c netClass) String() string {
	switch c {
	case netIB:
		return "IB"
	case netSocket:
		return "Socket"
	case netOFI:
		return "OFI"
	case netFastSocket:
		return "FastSocket"
	case netOther:
		return "other"
	}
	return "unknown"
}

// classifyNet maps a network module or plugin name to its class.
func classifyNet(name []byte) netClass {
	name = bytes.TrimSpace(name)
	switch {
	case len(name) == 0:
		return netUnknown
	case hasPrefix(name, "IB"), bytes.Contains(name, []byte("RDMA Plugin")):
		// IB, IBext, IBext_v8, IBP; "NCCL RDMA Plugin" is the HPC-X plugin's own name.
		return netIB
	case string(name) == "Socket":
		return netSocket
	case bytes.Contains(name, []byte("Libfabric")), hasPrefix(name, "OFI"), bytes.Contains(name, []byte("aws-ofi")):
		return netOFI
	case hasPrefix(name, "FastSocket"):
		return netFastSocket
	}
	return netOther
}

// gdrLine is a "GPU Direct RDMA Enabled|Disabled for …" decision.
type gdrLine struct {
	net      []byte // "IB", "Socket"; empty in the 2.5-2.26 per-GPU form
	enabled  bool
	hca      int64 // -1 when absent
	hcaName  []byte
	noModule bool // "(no module)": nvidia-peermem / nv_peer_mem not loaded (2.5-2.12)
	distance bool // "(distance d > L)": the GPU is too far from the NIC for NCCL_NET_GDR_LEVEL
}

var (
	gdrMark     = []byte("GPU Direct RDMA ")
	forHCA      = []byte("HCA ")
	noModule    = []byte("(no module)")
	distanceTag = []byte("(distance ")
)

// parseGDR reads the decision lines of every era:
//
//	NET/IB : GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)     2.4
//	GPU Direct RDMA Enabled for GPU ca000 / HCA 0 (distance 4 <= 4), read 1      2.5-2.26
//	NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)             2.5-2.12
//	NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'                         2.13+
func parseGDR(m []byte, g *gdrLine) bool {
	i := bytes.Index(m, gdrMark)
	if i < 0 {
		return false
	}
	*g = gdrLine{hca: -1}
	if hasPrefix(m, "NET/") {
		g.net = netNameOf(m)
	}
	rest := m[i+len(gdrMark):]
	switch {
	case hasPrefix(rest, "Enabled"):
		g.enabled = true
	case hasPrefix(rest, "Disabled"):
	default:
		return false
	}
	if k := bytes.Index(rest, forHCA); k >= 0 {
		v, n := leadingInt(rest[k+len(forHCA):])
		if n > 0 {
			g.hca = v
		}
		after := rest[k+len(forHCA)+n:]
		if q := bytes.IndexByte(after, '\''); q >= 0 {
			if e := bytes.IndexByte(after[q+1:], '\''); e >= 0 {
				g.hcaName = after[q+1 : q+1+e]
			}
		}
	}
	g.noModule = bytes.Contains(rest, noModule)
	g.distance = bytes.Contains(rest, distanceTag)
	return true
}

// netNameOf returns X from a message that starts with "NET/X : …",
// "NET/X: …" or "NET/X …".
func netNameOf(m []byte) []byte {
	m = m[len(trNETp):]
	for i, c := range m { // the name is a few bytes: no IndexAny set to build
		if c == ' ' || c == ':' {
			return m[:i]
		}
	}
	return m
}

// afterNetName returns what follows "NET/X" (name, from netNameOf) and its
// separator.
func afterNetName(m, name []byte) []byte {
	rest := m[len(trNETp)+len(name):]
	rest = bytes.TrimLeft(rest, " ")
	rest = bytes.TrimPrefix(rest, []byte(":"))
	return bytes.TrimLeft(rest, " ")
}

// devList summarises "[0]mlx5_0:1/IB [1]mlx5_2:1/RoCE [RO]; OOB ib0:…" and
// "[0]ens3:172.31.12.210<0>", the device lists of NET/IB, NET/Socket and
// Bootstrap lines, and the single-interface form "eth0:10.1.2.3<0>".
type devList struct {
	n        int  // devices (top-level "[i]" entries)
	loopback bool // every interface is a loopback one (lo, 127.x, ::1)
}

func parseDevList(b []byte) devList {
	var d devList
	if i := bytes.Index(b, []byte("; OOB")); i >= 0 {
		b = b[:i]
	} else if i := bytes.Index(b, []byte(" ; OOB")); i >= 0 {
		b = b[:i]
	}
	allLo, any := true, false
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			depth++
		case '}':
			depth--
		case '[':
			if depth == 0 && i+1 < len(b) && isDigit(b[i+1]) {
				d.n++
			}
		}
	}
	// Interfaces: "name:addr<idx>" entries.
	for rest := b; ; {
		lt := bytes.IndexByte(rest, '<')
		if lt < 0 {
			break
		}
		entry := rest[:lt]
		rest = rest[lt+1:]
		if sp := bytes.LastIndexAny(entry, " ]"); sp >= 0 {
			entry = entry[sp+1:]
		}
		colon := bytes.IndexByte(entry, ':')
		if colon < 0 {
			continue
		}
		any = true
		name, addr := entry[:colon], entry[colon+1:]
		if !(string(name) == "lo" || hasPrefix(addr, "127.") || string(addr) == "::1") {
			allLo = false
		}
	}
	if d.n == 0 && any {
		d.n = 1
	}
	d.loopback = any && allLo
	return d
}

// envLine is "NCCL_X set by environment to V[.]" or "NCCL_X set to V".
type envLine struct {
	name, value []byte
}

var (
	setByEnv = []byte(" set by environment to ")
	setTo    = []byte(" set to ")
)

func parseEnv(m []byte, e *envLine) bool {
	sp := bytes.IndexByte(m, ' ')
	if sp < 0 {
		return false
	}
	e.name = m[:sp]
	rest := m[sp:]
	switch {
	case hasPrefix(rest, " set by environment to "):
		e.value = rest[len(setByEnv):]
	case hasPrefix(rest, " set to "):
		e.value = rest[len(setTo):]
	default:
		return false
	}
	// Integer parameters print "to 1."; string ones have no period.
	if n := len(e.value); n > 1 && e.value[n-1] == '.' {
		if _, ok := atoi(e.value[:n-1]); ok {
			e.value = e.value[:n-1]
		}
	}
	return true
}
