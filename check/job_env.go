package check

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

func checkExclusive(n *state.Node, cfg *Config) Result {
	if r, skip := jobNVMLSkip(n, cfg); skip {
		return r
	}
	env := n.Slurm.Env
	t := visibleGPUs(n)
	if len(t.visible) == 0 {
		return t.noVisible()
	}
	if r, foreign := foreignPIDs(n, t.visible); foreign {
		return r
	}
	owners := map[uint32]slurmstate.Process{}
	for _, p := range n.Slurm.Processes {
		owners[p.PID] = p
	}
	myUID := -1
	if n.Slurm.Task != nil {
		myUID = n.Slurm.Task.UID
	}
	if env.JobUID != nil {
		myUID = *env.JobUID
	}
	const fix = "ask for whole GPUs to yourself (sbatch --exclusive, or a partition with OverSubscribe=NO and ConstrainDevices=yes); tell the admins if a process outlived its job"
	v := verdict{id: "job.exclusive"}
	others := 0
	for _, g := range t.visible {
		if !g.ProcessesKnown {
			missing(n, &v, g, "nvmlDeviceGetComputeRunningProcesses", "process list")
			continue
		}
		var mine uint64
		mineUnknown := false // a process of this job whose memory is not known
		isMine := func(p state.Process) bool {
			o, known := owners[p.PID]
			return n.Slurm.Task != nil && int(p.PID) == n.Slurm.Task.PID || known && o.JobID != "" && o.JobID == env.JobID
		}
		server := mpsServerOf(g, isMine)
		for _, p := range g.Processes {
			o, known := owners[p.PID]
			user := firstNonEmpty(p.User, o.User, "unknown user")
			who := fmt.Sprintf("pid %d (%s", p.PID, user)
			if p.Command != "" {
				who += ", " + p.Command
			}
			who += ")"
			serves := ""
			if server != nil && server.pid == p.PID {
				serves = "; " + server.words
			}
			switch {
			case isMine(p):
				mine += p.UsedMemoryBytes
				mineUnknown = mineUnknown || p.UsedMemoryUnknown
			case known && o.Gone:
			case known && o.JobID != "":
				others++
				v.add(Fail, g, fix, fmt.Sprintf("%s belongs to job %s, not this job %s (from its %s)%s", who, o.JobID, env.JobID, o.JobFrom, serves))
			case known && o.UID != nil && myUID >= 0 && *o.UID != myUID, !known && p.User != "" && n.Slurm.Task != nil && n.Slurm.Task.User != "" && p.User != n.Slurm.Task.User:
				others++
				v.add(Fail, g, fix, fmt.Sprintf("%s is not part of job %s (no SLURM_JOB_ID, no job cgroup)%s", who, env.JobID, serves))
			case serves != "":
				// The job's own MPS clients' server, started outside the
				// job: its memory serves the job.
				mine += p.UsedMemoryBytes
				mineUnknown = mineUnknown || p.UsedMemoryUnknown
				v.add(Warn, g, "start the MPS control daemon inside the job (nvidia-cuda-mps-control -d in the job script) and stop it at its end (echo quit | nvidia-cuda-mps-control), or have the site's prolog and epilog do both",
					fmt.Sprintf("%s runs on this GPU outside job %s%s", who, env.JobID, serves))
			default:
				v.add(Warn, g, "check for stray processes of your own (an earlier job step, a notebook)",
					fmt.Sprintf("%s runs on this GPU; it could not be tied to job %s", who, env.JobID))
			}
		}
		if m := g.Memory; m != nil && !mineUnknown && cfg.Job.UsedMemoryWarnMiB > 0 && m.UsedBytes > mine && (m.UsedBytes-mine)>>20 >= cfg.Job.UsedMemoryWarnMiB {
			v.add(Warn, g, "the memory belongs to a process this job cannot see (another container, or a leftover): ask for exclusive GPUs or report the node; if the GPU's previous job has just ended, its memory frees within seconds as its context tears down, so check again first",
				fmt.Sprintf("%d MiB of memory already in use by something other than this job", (m.UsedBytes-mine)>>20))
		}
	}
	return v.result(fmt.Sprintf("no other job's processes on GPU %s", listOr(indexes(t.visible))))
}

// mpsServer names the process that serves this job's MPS clients on a GPU.
type mpsServer struct {
	pid   uint32
	words string
}

// mpsServerOf finds the MPS server of the job's MPS clients on g: where
// NVML read the GPU's MPS client list (nvmlDeviceGetMPSComputeRunningProcesses)
// and it names processes of the job, the one process on the GPU that is
// not a client is their server (NVIDIA's MPS guide: the server holds the
// GPU's context for its clients). With two or more such processes, which
// one serves is not known, and none is named.
func mpsServerOf(g *state.GPU, isMine func(state.Process) bool) *mpsServer {
	if !g.ProcessesKnown || !g.MPSProcessesKnown {
		return nil
	}
	var clients []string
	var plain []uint32
	for _, p := range g.Processes {
		switch {
		case !p.MPSClient:
			plain = append(plain, p.PID)
		case isMine(p):
			clients = append(clients, strconv.FormatUint(uint64(p.PID), 10))
		}
	}
	if len(clients) == 0 || len(plain) != 1 {
		return nil
	}
	return &mpsServer{pid: plain[0], words: fmt.Sprintf("it is the MPS server of this job's pid(s) %s: NVML lists them as MPS clients of this GPU and it as the one process there that is not", strings.Join(clients, ", "))}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

const fixMaster = `set MASTER_ADDR to the job's first node: export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)`

func checkMasterAddr(n *state.Node, cfg *Config) Result {
	if r, skip := jobSkip(n, cfg); skip {
		return r
	}
	env := n.Slurm.Env
	if env.MasterAddr == "" {
		return Result{Status: Skip, Summary: "MASTER_ADDR is not set"}
	}
	v := verdict{id: "job.master_addr"}
	if env.MasterPort != "" {
		if p, err := strconv.Atoi(env.MasterPort); err != nil || p < 1 || p > 65535 {
			v.add(Fail, nil, "set MASTER_PORT to a free port number (1024-65535)", fmt.Sprintf("MASTER_PORT=%q is not a port number", env.MasterPort))
		}
	}
	hosts, err := slurmstate.ExpandHostlist(env.JobNodelist)
	if err != nil {
		v.add(Error, nil, "", "SLURM_JOB_NODELIST: "+err.Error())
		return v.result("")
	}
	host := n.Slurm.Host
	addrs := func(name string) []string {
		if host == nil {
			return nil
		}
		return host.Resolved[name]
	}
	if host != nil && host.Resolved != nil {
		if len(addrs(env.MasterAddr)) == 0 {
			why := ""
			if e := host.ResolveErrors[env.MasterAddr]; e != "" {
				why = ": " + e
			}
			v.add(Fail, nil, fixMaster, fmt.Sprintf("MASTER_ADDR=%s does not resolve%s", env.MasterAddr, why))
			return v.result("")
		}
	}
	if len(hosts) == 0 {
		return v.result(fmt.Sprintf("MASTER_ADDR=%s resolves (no SLURM_JOB_NODELIST to compare with)", env.MasterAddr))
	}
	first := hosts[0]
	short, _, _ := strings.Cut(env.MasterAddr, ".")
	pos := -1
	for i, h := range hosts {
		if h == env.MasterAddr || h == short {
			pos = i
			break
		}
	}
	// localhost (or 127.0.0.1, or a name that resolves only to loopback) is
	// right on a one-node job, but on a multi-node job every node finds
	// itself there: on the first node it matched one of its own addresses
	// and passed, on the others it read as "node N, not the first". Only a
	// job node's own name is exempt (Debian maps the host name to 127.0.1.1
	// on that host; the other nodes resolve it properly).
	if pos < 0 && len(hosts) > 1 && isLoopback(env.MasterAddr, addrs(env.MasterAddr)) {
		where := ""
		if a := addrs(env.MasterAddr); len(a) > 0 && a[0] != env.MasterAddr {
			where = " (" + strings.Join(a, ", ") + ")"
		}
		v.add(Fail, nil, fixMaster, fmt.Sprintf("MASTER_ADDR=%s is a loopback address%s on a %d-node job: the other nodes cannot reach rank 0 there, the rendezvous will hang", env.MasterAddr, where, len(hosts)))
		return v.result("")
	}
	sameAddr := shareAny(addrs(env.MasterAddr), addrs(first))
	byName := pos >= 0
	if pos < 0 && host != nil && shareAny(addrs(env.MasterAddr), host.LocalAddresses) {
		// MASTER_ADDR is one of this node's own addresses (an IPoIB name
		// of the first node, say): this node is that node of the job.
		for i, h := range hosts {
			if h == env.NodeName {
				pos = i
			}
		}
		sameAddr = pos == 0
	}
	switch {
	case pos == 0 || sameAddr:
	case pos > 0:
		v.add(Warn, nil, fixMaster, fmt.Sprintf("MASTER_ADDR=%s is node %d of the job, not the first (%s): ranks that derive the address themselves will look for rank 0 elsewhere", env.MasterAddr, pos+1, first))
	case host != nil && len(host.LocalAddresses) > 0 && len(addrs(env.MasterAddr)) > 0 && env.NodeName == first:
		// On the first node itself: its own addresses decide.
		v.add(Fail, nil, fixMaster, fmt.Sprintf("MASTER_ADDR=%s (%s) is not a node of this job (%s), nor an address of its first node %s, where this runs: rank 0 cannot listen there, the rendezvous will hang", env.MasterAddr, strings.Join(addrs(env.MasterAddr), ", "), env.JobNodelist, first))
	default:
		// Elsewhere a name that is no job node's and shares no address
		// with the first node's name may still be another interface of
		// the first node: JSC's InfiniBand names append "i" to the node
		// name (interTwin-eu/itwinai#438: MASTER_ADDR="${MASTER_ADDR}i",
		// tested on 8 nodes). Only the first node can tell.
		v.add(Skip, nil, "", fmt.Sprintf("MASTER_ADDR=%s is not a node name of this job (%s) and shares no address with its first node %s as resolved here; it may be another interface of that node (an InfiniBand name), which only the first node's own addresses can tell: whether rank 0 is there is unknown from this node", env.MasterAddr, env.JobNodelist, first))
	}
	if pos != 0 || !byName {
		return v.result(fmt.Sprintf("MASTER_ADDR=%s has the address of the job's first node %s", env.MasterAddr, first))
	}
	return v.result(fmt.Sprintf("MASTER_ADDR=%s is the job's first node", env.MasterAddr))
}

// isLoopback: name is localhost or a loopback IP, or every address it
// resolved to is a loopback address.
func isLoopback(name string, resolved []string) bool {
	if ip, loop := loopbackIP(name); ip {
		return loop
	}
	if strings.EqualFold(name, "localhost") || strings.HasSuffix(strings.ToLower(name), ".localhost") {
		return true
	}
	for _, a := range resolved {
		if ip, loop := loopbackIP(a); !ip || !loop {
			return false
		}
	}
	return len(resolved) > 0
}

// loopbackIP reads s as an IP address without the net package (check
// stays free of it, archtest): ip says whether s is an IPv4 dotted quad or
// an IPv6 address, loop whether it is a loopback one — 127.0.0.0/8, ::1,
// or ::ffff:127.x.x.x (what net.IP.IsLoopback accepts).
func loopbackIP(s string) (ip, loop bool) {
	if v4, ok := dottedQuad(s); ok {
		return true, v4[0] == 127
	}
	s, _, _ = strings.Cut(s, "%") // a zone ("fe80::1%eth0")
	if !strings.Contains(s, ":") {
		return false, false
	}
	var words []uint64
	tail := []uint64{}
	head, rest, double := strings.Cut(s, "::")
	if strings.Count(s, "::") > 1 {
		return false, false
	}
	// An embedded IPv4 address may only end the whole address.
	parse := func(part string, into *[]uint64, last bool) bool {
		if part == "" {
			return true
		}
		fields := strings.Split(part, ":")
		for i, f := range fields {
			if last && i == len(fields)-1 && strings.Contains(f, ".") {
				q, ok := dottedQuad(f)
				if !ok {
					return false
				}
				*into = append(*into, uint64(q[0])<<8|uint64(q[1]), uint64(q[2])<<8|uint64(q[3]))
				continue
			}
			w, err := strconv.ParseUint(f, 16, 16)
			if err != nil || len(f) > 4 {
				return false
			}
			*into = append(*into, w)
		}
		return true
	}
	if !parse(head, &words, !double) || double && !parse(rest, &tail, true) {
		return false, false
	}
	if double {
		if len(words)+len(tail) > 7 {
			return false, false
		}
		words = append(words, make([]uint64, 8-len(words)-len(tail))...)
		words = append(words, tail...)
	}
	if len(words) != 8 {
		return false, false
	}
	for _, w := range words[:5] {
		if w != 0 {
			return true, false
		}
	}
	switch {
	case words[5] == 0 && words[6] == 0 && words[7] == 1: // ::1
		return true, true
	case words[5] == 0xffff: // IPv4-mapped
		return true, words[6]>>8 == 127
	}
	return true, false
}

// dottedQuad parses a.b.c.d, each 0-255.
func dottedQuad(s string) ([4]byte, bool) {
	var q [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return q, false
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil || p == "" || len(p) > 3 || len(p) > 1 && p[0] == '0' || p[0] == '+' {
			return q, false
		}
		q[i] = byte(n)
	}
	return q, true
}

// shareAny reports whether two address lists have an address in common.
func shareAny(a, b []string) bool {
	for _, x := range a {
		if containsStr(b, x) {
			return true
		}
	}
	return false
}

func checkNCCLEnv(n *state.Node, cfg *Config) Result {
	if r, skip := jobSkip(n, cfg); skip {
		return r
	}
	nccl := n.Slurm.Env.NCCL
	if len(nccl) == 0 {
		return Result{Status: Pass, Summary: "no NCCL_* variables set: NCCL picks its transports itself"}
	}
	host := n.Slurm.Host
	if host == nil {
		return Result{Status: Skip, Summary: "HCAs and interfaces not collected"}
	}
	v := verdict{id: "job.nccl_env"}
	hcas := append([]string{}, host.IBDevices...)
	if n.Topology != nil {
		for _, nic := range n.Topology.NICs {
			if !containsStr(hcas, nic.Name) {
				hcas = append(hcas, nic.Name)
			}
		}
	}
	hasIB := len(hcas) > 0
	hasNVLink := false
	if n.NVML != nil {
		for _, g := range n.NVML.GPUs {
			for _, l := range g.NVLinks {
				hasNVLink = hasNVLink || l.Up
			}
		}
	}
	var notes []string
	if val, ok := nccl["NCCL_IB_HCA"]; ok {
		if !hasIB {
			v.add(Warn, nil, "unset NCCL_IB_HCA on nodes without InfiniBand", fmt.Sprintf("NCCL_IB_HCA=%s, but this node has no InfiniBand devices", val))
		} else if sel, bad, exclude := ncclListMatch(val, hcas); len(sel) == 0 && (exclude || len(bad) > 0) {
			v.add(Warn, nil, "list HCAs that exist (ls /sys/class/infiniband) or unset NCCL_IB_HCA",
				fmt.Sprintf("NCCL_IB_HCA=%s selects none of this node's HCAs (%s): NCCL's IB transport finds no device and NCCL falls back to sockets (or fails where NCCL_NET=IB)", val, strings.Join(hcas, ", ")))
		} else if len(bad) > 0 {
			v.add(Warn, nil, "list HCAs that exist (ls /sys/class/infiniband) or unset NCCL_IB_HCA",
				fmt.Sprintf("NCCL_IB_HCA=%s names %s, not an HCA here (have %s): NCCL skips it and uses %s", val, strings.Join(bad, ", "), strings.Join(hcas, ", "), strings.Join(sel, ", ")))
		}
	}
	// NCCL_SOCKET_IFNAME picks the bootstrap interface too (NCCL
	// src/misc/socket.cc ncclFindInterfaces: a value longer than one
	// character is "find or fail"; src/bootstrap.cc bootstrapNetInit:
	// "Bootstrap : no socket interface found", ncclInvalidUsage), unless
	// NCCL_COMM_ID names the root's address. An entry that matches nothing
	// is only skipped: one list for nodes whose interfaces differ is what
	// NCCL's maintainers advise (NVIDIA/nccl#286, "NCCL_SOCKET_IFNAME=eno1,eth0").
	ifVal, ifSet := nccl["NCCL_SOCKET_IFNAME"]
	ifSel, ifBad, ifExclude := ncclListMatch(ifVal, host.NetInterfaces)
	_, commID := nccl["NCCL_COMM_ID"]
	switch {
	case !ifSet || len(host.NetInterfaces) == 0:
	case len(strings.TrimSpace(ifVal)) <= 1:
		notes = append(notes, fmt.Sprintf("NCCL_SOCKET_IFNAME=%q is ignored (NCCL reads a value of two characters or more): NCCL picks the interface itself", ifVal))
	case len(ifSel) == 0 && !commID:
		what := "matches no interface here"
		if ifExclude {
			what = "excludes every interface here"
		}
		v.add(Fail, nil, "name interfaces that exist on every node (ip -br addr), or unset NCCL_SOCKET_IFNAME",
			fmt.Sprintf("NCCL_SOCKET_IFNAME=%s %s (have %s): NCCL's bootstrap finds no socket interface and ncclCommInitRank fails (\"Bootstrap : no socket interface found\")", ifVal, what, strings.Join(host.NetInterfaces, ", ")))
	case len(ifSel) == 0:
		v.add(Warn, nil, "name interfaces that exist on every node (ip -br addr), or unset NCCL_SOCKET_IFNAME",
			fmt.Sprintf("NCCL_SOCKET_IFNAME=%s matches no interface here (have %s): NCCL's socket transport and IB's out-of-band connections have none to use", ifVal, strings.Join(host.NetInterfaces, ", ")))
	case len(ifBad) > 0:
		notes = append(notes, fmt.Sprintf("NCCL_SOCKET_IFNAME=%s: %s matches no interface here, NCCL uses %s", ifVal, strings.Join(ifBad, ", "), strings.Join(ifSel, ", ")))
	}
	multiNode := jobNodes(n.Slurm.Env) > 1
	if val, ok := nccl["NCCL_SOCKET_IFNAME"]; ok && multiNode && loopbackOnly(val, host.NetInterfaces) {
		v.add(Fail, nil, "name the interface the nodes reach each other on (ip -br addr; e.g. NCCL_SOCKET_IFNAME=ib0 or eth0), or unset it",
			fmt.Sprintf("NCCL_SOCKET_IFNAME=%s selects only the loopback interface on a %d-node job: no other node can reach this one there; NCCL's bootstrap hangs or fails", val, jobNodes(n.Slurm.Env)))
	}
	// On a one-node job NCCL uses P2P/NVLink and shared memory, never the
	// network: IB being off costs nothing there.
	if on(nccl["NCCL_IB_DISABLE"]) && hasIB && jobNodes(n.Slurm.Env) != 1 {
		v.add(Warn, nil, "unset NCCL_IB_DISABLE", fmt.Sprintf("NCCL_IB_DISABLE=1 on a node with HCAs (%s): inter-node traffic goes over TCP sockets", strings.Join(hcas, ", ")))
	}
	if strings.EqualFold(nccl["NCCL_NET"], "Socket") && hasIB {
		v.add(Warn, nil, "unset NCCL_NET", "NCCL_NET=Socket on a node with HCAs: inter-node traffic goes over TCP sockets")
	}
	if on(nccl["NCCL_P2P_DISABLE"]) && hasNVLink {
		v.add(Warn, nil, "unset NCCL_P2P_DISABLE", "NCCL_P2P_DISABLE=1 on a node with NVLink: GPU-to-GPU traffic goes through host memory instead")
	}
	if on(nccl["NCCL_SHM_DISABLE"]) && (hasNVLink || hasIB) {
		v.add(Warn, nil, "unset NCCL_SHM_DISABLE", "NCCL_SHM_DISABLE=1: where P2P is not possible NCCL falls back to the network instead of shared memory")
	}
	if val, ok := nccl["NCCL_NET_GDR_LEVEL"]; ok {
		switch lvl, known := gdrLevel(val); {
		case !known:
			v.add(Warn, nil, "use one of LOC, PIX, PXB, PHB, SYS", fmt.Sprintf("NCCL_NET_GDR_LEVEL=%s is not a level NCCL knows", val))
		case lvl == "LOC" && hasIB:
			v.add(Warn, nil, "unset NCCL_NET_GDR_LEVEL (NCCL's default allows GDR up to PXB)",
				fmt.Sprintf("NCCL_NET_GDR_LEVEL=%s disables GPUDirect RDMA for every GPU/NIC pair: network data is staged through host memory", val))
		case hasIB && n.NVML != nil:
			for _, g := range gdrBlocked(n, visibleGPUs(n).visible, lvl) {
				v.add(Warn, g.gpu, "unset NCCL_NET_GDR_LEVEL, or set it at least to the path type of each GPU's nearest NIC",
					fmt.Sprintf("NCCL_NET_GDR_LEVEL=%s, but the nearest NIC (%s) is %s away: GPUDirect RDMA is off for this GPU", val, g.nic, g.path))
			}
		}
	}
	sum := fmt.Sprintf("%d NCCL_* variable(s) consistent with this node", len(nccl))
	if len(notes) > 0 {
		sum += "; " + strings.Join(notes, "; ")
	}
	return v.result(sum)
}

func on(v string) bool {
	v = strings.TrimSpace(v)
	return v == "1" || strings.EqualFold(v, "true") || strings.EqualFold(v, "yes")
}

// ncclListMatch applies NCCL's list syntax as NCCL_IB_HCA and
// NCCL_SOCKET_IFNAME read it (NCCL src/misc/utils.cc parseStringList,
// matchIf and matchIfList; src/transport/net_ib/init.cc and
// src/os/linux.cc ncclOsFindInterfaces): a leading "^" excludes, then a
// leading "=" wants whole names, otherwise each entry is a prefix; entries
// are comma-separated, empty ones dropped, and cut at ":" (an HCA's port;
// NCCL cuts interface names there too). An empty list selects everything.
// selected are the names NCCL takes (ports not judged); unmatched the
// entries of an including list that match no name.
func ncclListMatch(val string, have []string) (selected, unmatched []string, exclude bool) {
	exclude = strings.HasPrefix(val, "^")
	val = strings.TrimPrefix(val, "^")
	exact := strings.HasPrefix(val, "=")
	val = strings.TrimPrefix(val, "=")
	var entries []string
	for _, e := range strings.Split(val, ",") {
		if name, _, _ := strings.Cut(e, ":"); name != "" {
			entries = append(entries, name)
		}
	}
	match := func(name, e string) bool { return name == e || !exact && strings.HasPrefix(name, e) }
	for _, h := range have {
		in := len(entries) == 0
		for _, e := range entries {
			in = in || match(h, e)
		}
		if in != exclude {
			selected = append(selected, h)
		}
	}
	if !exclude {
		for _, e := range entries {
			found := false
			for _, h := range have {
				found = found || match(h, e)
			}
			if !found {
				unmatched = append(unmatched, e)
			}
		}
	}
	return selected, unmatched, exclude
}

// gdrLevel normalises NCCL_NET_GDR_LEVEL: names, or NCCL's legacy numbers
// (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS).
func gdrLevel(v string) (string, bool) {
	v = strings.ToUpper(strings.TrimSpace(v))
	switch v {
	case "LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS":
		return v, true
	}
	legacy := []string{"LOC", "PIX", "PXB", "PHB", "SYS"}
	if i, err := strconv.Atoi(v); err == nil && i >= 0 {
		return legacy[min(i, len(legacy)-1)], true
	}
	return "", false
}

func checkCUDACompat(n *state.Node, cfg *Config) Result {
	if r, skip := jobNVMLSkip(n, cfg); skip {
		return r
	}
	host := n.Slurm.Host
	if host == nil || host.CUDARuntime == nil {
		return Result{Status: Skip, Summary: "no CUDA runtime found in the job's environment (CUDA_VERSION, CUDA_HOME, LD_LIBRARY_PATH)"}
	}
	rt := host.CUDARuntime
	drv := n.NVML.CUDADriverVersion
	if drv == "" {
		return Result{Status: Skip, Summary: "the driver's CUDA version is unknown"}
	}
	rMaj, rMin, ok1 := majorMinor(rt.Version)
	dMaj, dMin, ok2 := majorMinor(drv)
	if !ok1 {
		// A value the user or a module file set (CUDA_VERSION=garbage)
		// says nothing about the node or the job's real runtime.
		return Result{Status: Skip, Summary: fmt.Sprintf("%s is %q, not a CUDA version: cannot compare it with the driver's CUDA %s", rt.From, rt.Version, drv)}
	}
	if !ok2 {
		return Result{Status: Error, Summary: fmt.Sprintf("cannot read the driver's CUDA version %q", drv)}
	}
	what := fmt.Sprintf("CUDA runtime %s (%s)", rt.Version, rt.From)
	have := fmt.Sprintf("this node's driver %s supports CUDA %s", orNA(n.NVML.DriverVersion), drv)
	fix := fmt.Sprintf("use a CUDA %d.%d or older build (module load cuda/%d.x), upgrade the driver, or put NVIDIA's cuda-compat package on LD_LIBRARY_PATH (datacenter GPUs)", dMaj, dMin, dMaj)
	if rMaj > dMaj || rMaj == dMaj && rMin > dMin && rMaj < 11 {
		// NVIDIA's forward compatibility (the CUDA Compatibility guide,
		// "Forward Compatibility"): the cuda-compat package's libcuda on
		// LD_LIBRARY_PATH runs a newer CUDA on a supported data center
		// driver branch. Where it is on the path, the mismatch alone is no
		// proof of cudaErrorInsufficientDriver.
		if c := n.Container; c != nil {
			for _, l := range c.CompatLibraries {
				if l.OnLDLibraryPath || l.LoaderConf != "" {
					return Result{Status: Skip, Summary: fmt.Sprintf("%s is newer than %s, and the forward-compatibility libcuda %s (driver %s) is on %s: container.cuda_compat judges whether it runs on this GPU and driver", what, have, safetext.Clean(l.Path), safetext.Clean(l.Version), safetext.Clean(loaderSource(l)))}
				}
			}
		}
		if dir := compatDirOnPath(n.Slurm.Env.LDLibraryPath); dir != "" {
			return Result{Status: Warn, Summary: fmt.Sprintf("%s is newer than %s; LD_LIBRARY_PATH holds %s, which looks like NVIDIA's forward-compatibility package: unknown whether it runs (only on data center GPUs and the driver branches the package supports; gpuprobe did not read the library outside a container)", what, have, safetext.Clean(dir)), Remedy: fix}
		}
	}
	switch {
	case rMaj > dMaj:
		return Result{Status: Fail, Summary: fmt.Sprintf("%s needs a CUDA %d driver; %s: cudaErrorInsufficientDriver at the first CUDA call", what, rMaj, have), Remedy: fix}
	case rMaj == dMaj && rMin > dMin && rMaj >= 11:
		return Result{Status: Warn, Summary: fmt.Sprintf("%s is newer than %s: minor-version compatibility runs it, but PTX JIT of newer PTX and some new APIs fail", what, have), Remedy: fix}
	case rMaj == dMaj && rMin > dMin:
		return Result{Status: Fail, Summary: fmt.Sprintf("%s needs a newer driver; %s (no minor-version compatibility before CUDA 11)", what, have), Remedy: fix}
	}
	return Result{Status: Pass, Summary: fmt.Sprintf("%s; %s", what, have)}
}

// compatDirOnPath is the first LD_LIBRARY_PATH entry that names a CUDA
// forward-compatibility directory (cuda-compat installs to
// /usr/local/cuda-X.Y/compat; NVIDIA's images keep /usr/local/cuda/compat),
// or "": the job's text, untrusted, only quoted back.
func compatDirOnPath(ld string) string {
	for _, d := range strings.Split(ld, ":") {
		if strings.HasPrefix(d, "/") && (path.Base(path.Clean(d)) == "compat" || strings.Contains(d, "cuda-compat")) {
			return d
		}
	}
	return ""
}

func majorMinor(v string) (int, int, bool) {
	parts := strings.Split(strings.TrimSpace(v), ".")
	maj, err := strconv.Atoi(parts[0])
	if err != nil {
		return 0, 0, false
	}
	mnr := 0
	if len(parts) > 1 {
		if mnr, err = strconv.Atoi(parts[1]); err != nil {
			return 0, 0, false
		}
	}
	return maj, mnr, true
}

// pathRank orders NCCL's path types (src/include/graph.h); nvidia-smi's
// NODE is NCCL's PHB.
var pathRank = map[string]int{"LOC": 0, "NVL": 1, "NVB": 2, "C2C": 3, "PIX": 4, "PXB": 5, "P2C": 6, "PXN": 7, "PHB": 8, "NODE": 8, "SYS": 9}

type gdrOff struct {
	gpu       *state.GPU
	nic, path string
}

// gdrBlocked lists the GPUs (judged by the topology's GPU/NIC paths)
// whose nearest NIC is farther than the GDR level allows: NCCL then stages
// their network traffic through host memory.
func gdrBlocked(n *state.Node, gpus []*state.GPU, level string) []gdrOff {
	if n.Topology == nil {
		return nil
	}
	nics := map[string]string{}
	for _, nic := range n.Topology.NICs {
		if nic.BusID != "" {
			nics[nic.BusID] = nic.Name
		}
	}
	var out []gdrOff
	for _, g := range gpus {
		tg := n.Topology.GPU(g.PCIBusID)
		if tg == nil {
			continue
		}
		best := gdrOff{gpu: g}
		bestRank := 99
		for _, p := range n.Topology.Paths {
			other := ""
			switch tg.BusID {
			case p.ABusID:
				other = p.BBusID
			case p.BBusID:
				other = p.ABusID
			}
			name, isNIC := nics[other]
			if r, ok := pathRank[p.PCIe]; isNIC && ok && r < bestRank {
				best.nic, best.path, bestRank = name, p.PCIe, r
			}
		}
		if best.nic != "" && bestRank > pathRank[level] {
			out = append(out, best)
		}
	}
	return out
}

// jobNodes is the job's node count from SLURM_JOB_NODELIST; 0 when unknown.
func jobNodes(env *slurmstate.Env) int {
	if env == nil || env.JobNodelist == "" {
		return 0
	}
	hosts, err := slurmstate.ExpandHostlist(env.JobNodelist)
	if err != nil {
		return 0
	}
	return len(hosts)
}

// loopbackOnly: NCCL_SOCKET_IFNAME, with NCCL's list syntax, selects
// interfaces here and all of them are loopback ("lo", "lo0"...). An exclude
// list ("^docker") never does.
func loopbackOnly(val string, have []string) bool {
	val = strings.TrimSpace(val)
	if val == "" || strings.HasPrefix(val, "^") {
		return false
	}
	exact := strings.HasPrefix(val, "=")
	val = strings.TrimPrefix(val, "=")
	selected := 0
	for _, e := range strings.Split(val, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		for _, name := range have {
			if name == e || !exact && strings.HasPrefix(name, e) {
				selected++
				if !strings.HasPrefix(name, "lo") {
					return false
				}
			}
		}
		if len(have) == 0 && !strings.HasPrefix(e, "lo") {
			return false
		}
	}
	return selected > 0 || len(have) == 0 && strings.HasPrefix(val, "lo")
}

// foreignPIDs: NVML lists the host's PIDs; a task in its own PID namespace
// (Docker, Podman, Kubernetes without --pid=host / hostPID; Enroot and
// Apptainer keep the host's by default) sees other processes, or none,
// under those numbers in its /proc, so their owners, jobs and commands as
// read here are not theirs. gpuprobe does not map them (the namespace's
// own numbers are in the host's /proc/PID/status NSpid line, which only
// the host can read): it says so and judges nothing per process. The
// daemon, on the host, attributes them by cgroup.
func foreignPIDs(n *state.Node, visible []*state.GPU) (Result, bool) {
	task := n.Slurm.Task
	if task == nil || task.PIDNamespace == "" || task.PIDNamespace == slurmstate.InitPIDNamespace {
		return Result{}, false
	}
	var pids []string
	for _, g := range visible {
		for _, p := range g.Processes {
			pids = append(pids, fmt.Sprintf("pid %d on GPU %d", p.PID, g.Index))
		}
	}
	if len(pids) == 0 {
		return Result{}, false
	}
	if len(pids) > 8 {
		pids = append(pids[:8], fmt.Sprintf("%d more", len(pids)-8))
	}
	return Result{Status: Skip,
		Summary: fmt.Sprintf("NVML reports host PIDs (%s), but this task runs in its own PID namespace (%s, not the host's %s): they cannot be mapped to its processes here, so no process is judged",
			strings.Join(pids, ", "), task.PIDNamespace, slurmstate.InitPIDNamespace),
		Remedy: "judge the GPU's processes from the host (gpuprobe serve or gpuprobe job on the node: they read the host's /proc and each process's cgroup), or start the container in the host's PID namespace (docker/podman run --pid=host; hostPID in a pod)"}, true
}
