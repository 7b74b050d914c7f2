package check

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	register(Check{ID: "slurm.gres", Title: "gres.conf and slurm.conf describe this node's GPUs as NVML sees them", Run: checkSlurmGres})
	register(Check{ID: "slurm.topology", Title: "a multi-node GPU cluster tells Slurm its network topology", Run: checkSlurmTopology})
}

const fixGresOrder = "list File= in NVML index order (nvidia-smi --query-gpu=index,pci.bus_id; /proc/driver/nvidia/gpus/*/information gives each Device Minor), or use AutoDetect=nvml"

func slurmConfSkip(n *state.Node) (*slurmstate.Conf, Result, bool) {
	if n.Slurm == nil || n.Slurm.Conf == nil {
		return nil, Result{Status: Skip, Summary: "Slurm configuration not collected"}, true
	}
	c := n.Slurm.Conf
	if len(c.Unreadable) > 0 {
		// A file that is there but cannot be read is never "not a Slurm
		// node": say which and why, and do not judge from half the files.
		var why []string
		for _, e := range c.Unreadable {
			why = append(why, e.Path+": "+e.Reason)
		}
		return nil, Result{Status: Error, Summary: "cannot read the Slurm configuration: " + strings.Join(why, "; "),
			Remedy: "make the file readable by gpuprobe, within its size limit and read timeout, or pass the right --slurm-conf"}, true
	}
	if c.SlurmConf == nil {
		return nil, Result{Status: Skip, Summary: "no slurm.conf at " + c.SlurmConfPath + " (not a Slurm node, or pass --slurm-conf)"}, true
	}
	return c, Result{}, false
}

func checkSlurmGres(n *state.Node, cfg *Config) Result {
	c, r, skip := slurmConfSkip(n)
	if skip {
		return r
	}
	v := verdict{id: "slurm.gres"}
	node := n.Slurm.NodeName
	sc := c.SlurmConf
	for _, e := range sc.Errors {
		v.add(Warn, nil, "fix slurm.conf: slurmctld refuses lines it cannot parse", e.Error())
	}
	nl, declared := sc.Node(node)
	gpuCount, hasGres := nl.GPUCount()
	nvmlOK := n.NVML != nil && n.NVML.Available
	nvmlCount := 0
	mig := false
	if nvmlOK {
		nvmlCount = len(n.NVML.GPUs)
		for _, g := range n.NVML.GPUs {
			mig = mig || g.MIG != nil && g.MIG.Current
		}
	}
	var recs []slurmstate.GresRecord
	if c.GresConf != nil {
		recs = c.GresConf.ForNode(node, "gpu")
	}
	if !declared {
		v.add(Warn, nil, "check SLURMD_NODENAME / the host name against slurm.conf's NodeName lines; a dynamic node (slurmd -Z) is in no NodeName line and declares its GPUs with slurmd --conf \"Gres=gpu:N\" (slurmd(8))",
			fmt.Sprintf("node %s (from %s) is not declared in %s", node, n.Slurm.NodeNameFrom, sc.Path))
	}
	if (hasGres || len(recs) > 0) && !sc.HasGresType("gpu") {
		v.add(Fail, nil, "add GresTypes=gpu to slurm.conf", "GPUs are declared but slurm.conf GresTypes= does not list gpu: slurmctld rejects every GPU request")
	}
	for _, p := range LintGresSpec(nl.Where, nl.GresSpec) {
		v.add(Fail, nil, "give every gpu item of Gres= a type, or none", p.String())
	}
	switch {
	case declared && !hasGres && nvmlCount > 0:
		v.add(Warn, nil, fmt.Sprintf("add Gres=gpu:%d (or gpu:<type>:%d) to the NodeName line of %s", nvmlCount, nvmlCount, node),
			fmt.Sprintf("slurm.conf declares no Gres=gpu for %s (%s), but NVML sees %d GPUs: jobs cannot request them", node, nl.Where, nvmlCount))
	case hasGres && nvmlOK && mig:
		// Gres counts MIG instances then; NVML's count is of whole GPUs.
	case hasGres && nvmlOK && gpuCount > uint64(nvmlCount):
		v.add(Fail, nil, "fix Gres= in slurm.conf or find the missing GPUs (gpu.count)",
			fmt.Sprintf("slurm.conf Gres=%s declares %d GPUs, NVML sees %d: slurmd drains the node (gres/gpu count reported lower than configured)", nl.Gres, gpuCount, nvmlCount))
	case hasGres && nvmlOK && gpuCount < uint64(nvmlCount):
		v.add(Warn, nil, "declare every GPU in slurm.conf Gres=",
			fmt.Sprintf("slurm.conf Gres=%s declares %d GPUs, NVML sees %d: %d GPUs are never scheduled", nl.Gres, gpuCount, nvmlCount, nvmlCount-int(gpuCount)))
	}

	if c.GresConf == nil {
		if hasGres {
			v.add(Fail, nil, "create gres.conf beside slurm.conf with AutoDetect=nvml, or one File=/dev/nvidiaN line per GPU in NVML order",
				fmt.Sprintf("no gres.conf at %s: Slurm knows no device files, so it cannot bind GPUs (jobs get CUDA_VISIBLE_DEVICES=NoDevFiles and can use every GPU)", c.GresConfPath))
		}
		return gresResult(&v, "")
	}
	g := c.GresConf
	for _, e := range g.Errors {
		v.add(Fail, nil, "fix gres.conf: slurmd rejects the line", e.Error())
	}
	for _, p := range append(LintAutoDetect(g, node), LintGres(g, node, "gpu")...) {
		if p.NotFatal {
			// slurmd starts and the node schedules; only what the
			// value would have told it is lost (GresProblem.NotFatal).
			v.add(Warn, nil, "fix gres.conf (see gres.conf(5))", p.String())
			continue
		}
		v.add(Fail, nil, "fix gres.conf (see gres.conf(5))", p.String())
	}
	if declared {
		checkSharedGres(&v, nl, g, node)
	}
	if flags, where := noCUDAEnvFlag(g, node); flags != "" && nvmlOK && len(n.NVML.GPUs) > 0 {
		constrained := sc.UsesCgroupTasks() && c.CgroupConf != nil && c.CgroupConf.ConstrainDevices
		what := fmt.Sprintf("Flags=%s (%s) sets no CUDA_VISIBLE_DEVICES", flags, where)
		fix := "add nvidia_gpu_env to Flags= (or drop the env flags: without any, slurmd sets every GPU variable)"
		if flags == "no_gpu_env" {
			fix = "drop Flags=no_gpu_env"
		} else {
			what += " on these NVIDIA GPUs"
		}
		switch {
		case !constrained:
			v.add(Fail, nil, fix+", or set ConstrainDevices=yes in cgroup.conf (with TaskPlugin=task/cgroup) so each step reaches only its GPUs",
				what+", and without ConstrainDevices every job step can use every GPU: CUDA sees them all")
		case flags != "no_gpu_env":
			v.add(Warn, nil, fix, what+": the device cgroup confines each step, but --gpus-per-task and --gpu-bind cannot narrow what each task sees")
		}
	}
	ad, adWhere := g.AutoDetectFor(node)
	devs := slurmstate.Devices(recs)
	mode := "AutoDetect not set"
	if ad != "" {
		mode = "AutoDetect=" + ad
		// Judge what slurmd reads ("nvml:" is nvml to it), and say so.
		if m, ok := SlurmdAutoDetect(ad); ok && m != ad {
			mode = fmt.Sprintf("AutoDetect=%s (written %q; slurmd matches the value as a substring)", m, ad)
			ad = m
		}
	}
	switch ad {
	case "nvml", "nvidia":
		if ad == "nvml" {
			mode += checkNVMLPlugin(&v, c.Plugins, adWhere, len(devs), gpuCount, hasGres)
		} else {
			// gres.conf(5): "nvidia ... Added in Slurm 24.11". An older
			// slurmd (gres.c _handle_autodetect_flags) logs "unknown
			// autodetect flag 'nvidia'" and detects nothing (slurmd -G
			// 22.05). Which slurmd runs is not collected: said, not judged.
			rest := "detect no GPU"
			if len(devs) > 0 {
				rest = "use only the File= lines"
			}
			mode += fmt.Sprintf(" (needs slurmd 24.11 or later: older ones log \"unknown autodetect flag 'nvidia'\" and %s)", rest)
		}
		if len(devs) == 0 {
			return gresResult(&v, fmt.Sprintf("%s (%s): slurmd takes devices, order and cores from the driver", mode, adWhere))
		}
	case "rsmi", "oneapi", "nrt":
		sev := Fail
		if len(devs) > 0 {
			sev = Warn
		}
		v.add(sev, nil, "use AutoDetect=nvml (or explicit File= lines) on NVIDIA nodes",
			fmt.Sprintf("AutoDetect=%s (%s) detects non-NVIDIA devices; this node's GPUs are NVIDIA", ad, adWhere))
	default:
		if len(devs) == 0 && (hasGres || nvmlCount > 0) {
			v.add(Fail, nil, "add AutoDetect=nvml, or one File=/dev/nvidiaN line per GPU in NVML order",
				fmt.Sprintf("gres.conf has no File= for gpu on %s and %s: Slurm cannot bind GPUs", node, strings.Replace(mode, "=", " is ", 1)))
		}
	}
	checkGresTypes(&v, nl, devs)
	if len(devs) == 0 {
		return gresResult(&v, mode)
	}
	if !nvmlOK {
		// A Jetson (nvgpu driver) or a node whose driver is down: the File=
		// lines are read, but there is no GPU list to hold them against.
		why := "NVML not available"
		if n.NVML != nil && n.NVML.Error != "" {
			why += " (" + n.NVML.Error + ")"
		}
		// The device files are judged all the same: slurmd stats them
		// without NVML.
		files := map[string]slurmstate.DeviceFile{}
		for _, d := range n.Slurm.Devices {
			files[d.Path] = d
		}
		for _, d := range devs {
			gresFileOK(&v, d, files)
		}
		return gresResult(&v, fmt.Sprintf("%s; %d File= devices not compared with the GPUs: %s", mode, len(devs), why))
	}
	note := checkGresDevices(&v, n, nl, devs, ad, mig)
	return gresResult(&v, fmt.Sprintf("%s; %d File= GPUs in NVML order%s", mode, len(devs), note))
}

// checkGresTypes compares slurm.conf's typed gpu counts with the File=
// devices gres.conf declares of each Type for this node. slurmctld counts
// a node's GRES by type: a node whose slurmd reports fewer of a type than
// slurm.conf declares registers invalid and is drained with "gres/gpu:TYPE
// count too low (N < M)" (the Reason admins meet when a conversion leaves
// the two files disagreeing; a message libslurmfull of 22.05 carries, not
// yet reproduced on a real Slurm here). Types that differ only in case are
// another matter: what Slurm 22.05 did with them is described, and said to
// be 22.05's. Untyped File= lines count as no type. Under
// AutoDetect without File= lines the types come from NVML's names, whose
// match with slurm.conf is not judged here.
func checkGresTypes(v *verdict, nl slurmstate.NodeLine, devs []slurmstate.GresDevice) {
	if len(devs) == 0 {
		return
	}
	// Case matters: Slurm compares types by gres_build_id's hash of the
	// exact bytes (src/common/gres.c), so "H100" is not "h100".
	byType := map[string]uint64{}
	var types []string
	for _, d := range devs {
		if byType[d.Type] == 0 {
			types = append(types, orNA(d.Type))
		}
		byType[d.Type]++
	}
	for _, g := range nl.GresSpec {
		if g.Name != "gpu" || g.Type == "" {
			continue
		}
		have := byType[g.Type]
		if have >= g.Count {
			continue
		}
		if other := caseVariant(byType, g.Type); other != "" {
			// Seen on Slurm 22.05: slurmctld takes the node's types from
			// slurmd, spelled as gres.conf spells them, so the node stays
			// IDLE as gpu:OTHER:N and a job asking for the slurm.conf
			// spelling matches no GPU of it.
			v.add(Fail, nil, fmt.Sprintf("spell the type the same in both files (Type=%s in gres.conf, or gpu:%s in slurm.conf)", g.Type, other),
				fmt.Sprintf("slurm.conf Gres=gpu:%s:%d (%s), but gres.conf says Type=%s: the types differ only in case, and Slurm 22.05 registers the node as gpu:%s:%d (gres.conf's spelling) and leaves it IDLE, then refuses --gres=gpu:%s with \"Requested node configuration is not available\" (what 22.05 does; other Slurm versions may differ)",
					g.Type, g.Count, nl.Where, other, other, byType[other], g.Type))
			continue
		}
		v.add(Fail, nil, fmt.Sprintf("give gres.conf's File= lines for these GPUs Type=%s, or slurm.conf the type gres.conf uses", g.Type),
			fmt.Sprintf("slurm.conf Gres=gpu:%s:%d (%s), but gres.conf declares %d GPU(s) of Type=%s for this node (its types: %s): slurmctld drains the node with \"gres/gpu:%s count too low (%d < %d)\"",
				g.Type, g.Count, nl.Where, have, g.Type, strings.Join(types, ", "), g.Type, have, g.Count))
	}
}

// checkSharedGres compares the GPU-sharing GRES (mps, shard) that gres.conf
// declares for node with the count slurm.conf's Gres= gives it. A line
// without Count= counts one per file (slurmd -G 22.05: "A line in gres.conf
// for GRES mps has 1 more configured than expected"). With none in Gres=
// slurmd ignores the lines; with more in Gres= than File= lines hold, it
// makes a File-less record for the rest and stops in _build_shared_list
// (src/plugins/gres/common/gres_c_s.c): "multiple configurations with and
// without \"File\"" (slurmd -G 22.05 on the andmax config).
func checkSharedGres(v *verdict, nl slurmstate.NodeLine, g *slurmstate.GresConf, node string) {
	for _, name := range []string{"mps", "shard"} {
		recs := g.ForNode(node, name)
		if len(recs) == 0 {
			continue
		}
		var have uint64
		files := true
		for _, r := range recs {
			n := uint64(len(r.Files) + len(r.MultipleFiles))
			if n == 0 {
				n, files = 1, false
			}
			if c, err := slurmstate.ParseCount(r.Count); r.Count != "" && err == nil {
				n = c
			}
			have += n
		}
		var want uint64
		declared := false
		for _, s := range nl.GresSpec {
			if strings.EqualFold(s.Name, name) {
				want += s.Count
				declared = true
			}
		}
		switch {
		case !declared:
			v.add(Warn, nil, fmt.Sprintf("add %s:N to the Gres= of %s in slurm.conf, N the sum of the lines' Count= (now %d; a line without Count= is one), with %s in GresTypes; or drop the %s lines", name, node, have, name, name),
				fmt.Sprintf("gres.conf declares %s for %s (%d lines, from %s), but slurm.conf's Gres= for it has none: slurmd ignores them (\"A line in gres.conf for GRES %s has ... more configured than expected in slurm.conf. Ignoring extra GRES.\") and no job can ask for %s",
					name, node, len(recs), recs[0].Where, name, name))
		case files && want > have:
			v.add(Fail, nil, fmt.Sprintf("give each %s line Count= (the shares of its GPU, e.g. Count=100), summing to %d, or lower %s in Gres=", name, want, name),
				fmt.Sprintf("slurm.conf Gres= declares %s:%d for %s, but gres.conf's %s lines with File= hold %d (a line without Count= is one): slurmd adds a line without File for the rest and stops with fatal: _build_shared_list: multiple configurations with and without \"File\"",
					name, want, node, name, have))
		}
	}
}

// checkNVMLPlugin judges AutoDetect=nvml against what slurmd can load:
// the gpu_nvml plugin is built only where configure found NVML (Debian's
// slurm-wlm has none). Without it slurmd 22.05 logs "We were configured
// with nvml functionality, but that lib wasn't found on the system." and
// detects no GPU; with no File= lines it then reports none and slurmctld
// sets the node INVAL+DRAIN "gres/gpu count reported lower than
// configured (0 < N)" (seen on 22.05). It returns what the pass summary
// adds when whether slurmd has the plugin is unknown.
func checkNVMLPlugin(v *verdict, p *slurmstate.Plugins, where string, files int, gpuCount uint64, hasGres bool) string {
	if p == nil {
		return ""
	}
	switch p.GPUNVML {
	case "no":
		fix := "install a slurmd built with NVML (its plugin directory then has gpu_nvml.so; Debian's slurm-wlm has none), or replace AutoDetect=nvml with one File=/dev/nvidiaN line per GPU in NVML order"
		what := fmt.Sprintf("AutoDetect=nvml (%s), but slurmd has no %s (%s): slurmd logs \"We were configured with nvml functionality, but that lib wasn't found on the system.\" and detects no GPU", where, "gpu_nvml.so", p.Why)
		if files > 0 {
			v.add(Warn, nil, fix, what+"; it has only the File= lines")
			return ""
		}
		if hasGres && gpuCount > 0 {
			what += fmt.Sprintf("; it registers 0 GPUs and slurmctld sets the node INVAL and DRAIN: \"gres/gpu count reported lower than configured (0 < %d)\"", gpuCount)
		}
		v.add(Fail, nil, fix, what)
	case "unknown":
		return "; whether slurmd has gpu_nvml.so is unknown: " + p.Why
	}
	return ""
}

// caseVariant is the type of byType that equals t but for case ("" when none).
func caseVariant(byType map[string]uint64, t string) string {
	var out []string
	for k := range byType {
		if k != t && k != "" && strings.EqualFold(k, t) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return ""
	}
	slices.Sort(out)
	return out[0]
}

func gresResult(v *verdict, detail string) Result {
	pass := "gres.conf and slurm.conf match this node"
	if detail != "" {
		pass += " (" + detail + ")"
	}
	return v.result(pass)
}

// checkGresDevices compares explicit File= devices with NVML: the count,
// the device minor in NVML index order, Type= and Cores=.
//
// It returns what the pass summary adds about what could not be judged.
func checkGresDevices(v *verdict, n *state.Node, nl slurmstate.NodeLine, devs []slurmstate.GresDevice, ad string, mig bool) string {
	unplaced := false
	files := map[string]slurmstate.DeviceFile{}
	for _, d := range n.Slurm.Devices {
		files[d.Path] = d
	}
	gpus := n.NVML.GPUs
	if !mig && len(devs) != len(gpus) {
		v.add(Fail, nil, "declare one File= per GPU, in NVML order",
			fmt.Sprintf("gres.conf lists %d GPU device files for %s, NVML sees %d GPUs", len(devs), n.Slurm.NodeName, len(gpus)))
	}
	autodetect := ad == "nvml" || ad == "nvidia"
	typeSev := Warn
	if autodetect {
		typeSev = Fail // slurmd then matches records to GPUs by Type and rejects a mismatch
	}
	for i, d := range devs {
		if !gresFileOK(v, d, files) {
			continue
		}
		if mig || i >= len(gpus) {
			continue
		}
		g := &gpus[i]
		// Under AutoDetect=nvml slurmd merges the File= records into what
		// NVML found and takes the order from the driver (Slurm's
		// gpu_nvml.c and gres.c merge; testsuite test39.18), so the order
		// of the lines is not a mistake there.
		if minor, ok := deviceMinor(d.File, files); ok && !autodetect && g.Minor != nil && *g.Minor != minor {
			v.add(Fail, g, fixGresOrder,
				fmt.Sprintf("gres.conf File #%d (%s, %s) is device minor %d, but this GPU is minor %d: Slurm binds jobs to another GPU than SLURM_STEP_GPUS says", i+1, d.File, d.Where, minor, *g.Minor))
		}
		// gres.conf(5): Type is "an optional arbitrary string"; only "if
		// using autodetect functionality" must it "match or be a substring of
		// the value that is detected, using an underscore in lieu of any
		// spaces". Without AutoDetect Slurm never compares it, so a label
		// that names the model in other punctuation (Type=m2070q on a "Tesla
		// M2070-Q", gtx1060 on a "GeForce GTX 1060 6GB") or names no model
		// at all (Type=turing on a Quadro RTX 6000, Dieterichlab) is no
		// finding; one that names another model (a100 on an H100) still is.
		if d.Type != "" && g.Name != "" {
			nvmlType := strings.ReplaceAll(strings.ToLower(g.Name), " ", "_")
			same := strings.Contains(nvmlType, strings.ToLower(d.Type))
			if !autodetect && !same {
				// A label without a digit names a family or a site's class
				// (Type=turing, ampere, tesla), not a model: nothing to
				// hold against the GPU.
				same = strings.Contains(alnum(g.Name), alnum(d.Type)) || !strings.ContainsAny(d.Type, "0123456789")
			}
			if !same {
				v.add(typeSev, g, "make Type= a substring of the NVML name, lower-case, spaces as underscores (slurmd -C prints it)",
					fmt.Sprintf("Type=%s (%s) is not part of the NVML name %q (%s)", d.Type, d.Where, g.Name, nvmlType))
			}
		}
		if d.Cores != nil {
			unplaced = !checkGresCores(v, n, nl, g, d) || unplaced
		}
	}
	if unplaced {
		if n.Topology == nil || len(n.Topology.Cores) == 0 {
			return "; Cores= not placed on sockets: no CPU topology collected"
		}
		return "; Cores= not placed on sockets: the GPUs' local CPUs are unknown"
	}
	return ""
}

// gresFileOK judges one File= by the stat the collector made of it (true
// when it was not collected). A missing file stops slurmd whatever NVML
// says and whatever slurm.conf's Gres= holds: slurmd -G 22.05 on a node
// line without Gres= and "NodeName=dummy-compute Name=gpu Type=tesla
// File=/dev/nvidia0" (aws-parallelcluster-cookbook#409's template) waits
// 20 s, then "fatal: can't stat gres.conf file /dev/nvidia0".
func gresFileOK(v *verdict, d slurmstate.GresDevice, files map[string]slurmstate.DeviceFile) bool {
	f, ok := files[d.File]
	switch {
	case !ok:
		return true
	case !f.Exist:
		// gres.c _validate_file -> _my_stat: slurmd waits up to 20 s
		// for each File= ("Waiting for gres.conf file ...") and then
		// exits; the node goes DOWN as not responding.
		v.add(Fail, nil, "fix File= or load the driver", fmt.Sprintf("%s: File=%s does not exist: slurmd stops (\"fatal: can't stat gres.conf file %s\")", d.Where, d.File, d.File))
		return false
	case !f.Char:
		v.add(Fail, nil, "point File= at the GPU's character device", fmt.Sprintf("%s: File=%s is not a character device: slurmd ignores it and jobs get no CUDA_VISIBLE_DEVICES", d.Where, d.File))
		return false
	}
	return true
}

// alnum is s lower-cased with everything but letters and digits dropped.
func alnum(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, s)
}

// deviceMinor is the minor number of a device file: from stat when the
// collector saw it, else from a /dev/nvidiaN name.
func deviceMinor(path string, files map[string]slurmstate.DeviceFile) (int, bool) {
	if f, ok := files[path]; ok && f.Exist && f.Char {
		return f.Minor, true
	}
	if rest, ok := strings.CutPrefix(path, "/dev/nvidia"); ok {
		if m, err := strconv.Atoi(rest); err == nil {
			return m, true
		}
	}
	return 0, false
}

// checkGresCores judges Cores= as gres.conf(5) defines it: logical core
// indexes ("Core 0 will be the first core on the first socket, while core 1
// will be the second core on the first socket", as hwloc's "Core L#"), not
// OS CPU (thread) numbers. The topology's cores map them to CPUs.
//
// It returns false when the cores could not be placed on the GPU's NUMA
// node for want of a CPU topology.
func checkGresCores(v *verdict, n *state.Node, nl slurmstate.NodeLine, g *state.GPU, d slurmstate.GresDevice) bool {
	var cores []topostate.Core
	if n.Topology != nil {
		cores = n.Topology.Cores
	}
	total, from := len(cores), "the node's CPU topology"
	if total == 0 && nl.Sockets > 0 && nl.CoresPerSocket > 0 {
		total, from = nl.Sockets*nl.CoresPerSocket, "slurm.conf Sockets×CoresPerSocket"
	}
	last := slices.Max(d.Cores)
	if total > 0 && last >= total {
		msg := fmt.Sprintf("%s=%s (%s) names core %d, but the node has %d cores (%s): gres.conf counts logical cores, core 0 being the first core of the first socket", d.CoresKey, d.CoresRaw, d.Where, last, total, from)
		if nl.CPUs > total && last < nl.CPUs {
			msg += "; these look like CPU (thread) numbers, as nvidia-smi's CPU Affinity prints them"
		}
		v.add(Fail, g, "give Cores= as logical core numbers (lstopo -l, \"Core L#\"), or leave it to AutoDetect=nvml", msg)
		return true
	}
	if total == 0 && nl.CPUs > 0 && last >= nl.CPUs {
		v.add(Fail, g, "keep Cores= within the node's cores", fmt.Sprintf("%s=%s (%s) names core %d, beyond even the node's %d CPUs", d.CoresKey, d.CoresRaw, d.Where, last, nl.CPUs))
		return true
	}
	local, _ := gpuCPUs(n, g)
	if local == nil || len(cores) == 0 {
		// Without the CPU topology the logical cores cannot be placed on
		// sockets: not judged rather than compared as CPU numbers.
		return false
	}
	var cpus []int
	for _, c := range d.Cores {
		l, _ := cpulist.Parse(cores[c].CPUs)
		cpus = append(cpus, l...)
	}
	var near []int
	for i, c := range cores {
		if l, _ := cpulist.Parse(c.CPUs); len(l) > 0 && len(cpulist.Subtract(l, local)) == 0 {
			near = append(near, i)
		}
	}
	fix := fmt.Sprintf("set Cores= to the logical cores of the GPU's NUMA node (here %s: CPUs %s), or use AutoDetect=nvml", cpulist.Format(near), cpulist.Format(local))
	switch in := cpulist.Intersect(cpus, local); {
	case len(in) == 0:
		v.add(Fail, g, fix, fmt.Sprintf("%s=%s (%s) are cores on another NUMA node than the GPU's (its CPUs %s): jobs get cores on the far socket", d.CoresKey, d.CoresRaw, d.Where, cpulist.Format(local)))
	case len(in) < len(cpus):
		v.add(Warn, g, fix, fmt.Sprintf("%s=%s (%s) reaches beyond the GPU's NUMA node (its CPUs %s)", d.CoresKey, d.CoresRaw, d.Where, cpulist.Format(local)))
	}
	return true
}

func checkSlurmTopology(n *state.Node, cfg *Config) Result {
	c, r, skip := slurmConfSkip(n)
	if skip {
		return r
	}
	sc := c.SlurmConf
	nodes := sc.GPUNodes()
	if nodes <= 1 {
		return Result{Status: Skip, Summary: fmt.Sprintf("%d GPU node(s) in slurm.conf: no network topology to describe", nodes)}
	}
	if sc.TopologyPlugin != "" && !strings.HasSuffix(sc.TopologyPlugin, "none") {
		return Result{Status: Pass, Summary: fmt.Sprintf("TopologyPlugin=%s for %d GPU nodes", sc.TopologyPlugin, nodes)}
	}
	if c.TopologyConf != "" {
		return Result{Status: Pass, Summary: fmt.Sprintf("%s describes the network of %d GPU nodes", c.TopologyConf, nodes)}
	}
	return Result{Status: Pass,
		Summary: fmt.Sprintf("info: %d GPU nodes and no TopologyPlugin: Slurm places multi-node jobs without regard to the switches between them", nodes),
		Details: []string{"consider TopologyPlugin=topology/tree (or topology/block for NVLink domains) with a topology.conf from ibnetdiscover/slurmibtopology, so large NCCL jobs land under as few switches as possible"}}
}
