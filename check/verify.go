package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// The verify checks judge what `gpuprobe verify` measured (or what a saved
// nccl-tests / nvbandwidth / dcgmi output says was measured): each figure
// as a share of what this platform should do (check/verifyexpect.go), and
// against the node's own GPUs, so that a GPU at a fraction of its siblings
// fails even where the table has no row. They run only in verify
// (VerifyScope) and skip when the state holds no Verify.
func init() {
	for _, c := range []Check{
		{ID: "verify.run", Title: "verify could run: the CUDA driver answered and every GPU asked for was measured", Run: checkVerifyRun},
		{ID: "verify.h2d", Title: "pinned host → device copies reach what the GPU's PCIe link should carry", Run: checkVerifyH2D},
		{ID: "verify.d2h", Title: "device → pinned host copies reach what the GPU's PCIe link should carry", Run: checkVerifyD2H},
		{ID: "verify.d2d", Title: "device-local copies reach the share of HBM bandwidth the model should give", Run: checkVerifyD2D},
		{ID: "verify.peer", Title: "GPU → GPU copies reach what NVLink or PCIe should carry between the pair", Run: checkVerifyPeer},
		{ID: "verify.compute", Title: "under an FMA load every GPU keeps its rate without throttling, Xids, ECC errors or falling off the bus", Run: checkVerifyCompute},
		{ID: "verify.memtest", Title: "a memory pattern written over part of each GPU reads back unchanged", Run: checkVerifyMemTest},
	} {
		c.Scope = VerifyScope
		register(c)
	}
}

const (
	remedyVerifyError  = "rerun verify; if the same call fails again, run nvidia-smi and dcgmi diag -r 1 on the node and check the kernel log for Xids"
	remedyHostLink     = "reseat or replace the GPU's riser/cable and check its slot's PCIe generation in the BIOS; nvidia-smi -q shows the link under load"
	remedyPeer         = "check nvlink.state and fabric.state (nvidia-fabricmanager), then ACS and the IOMMU for a PCIe pair; a pair slow alone points to one of its GPUs or links"
	remedyD2D          = "check clocks (nvidia-smi -q -d CLOCK) and the memory's row remaps; a GPU far below its siblings needs dcgmi diag -r 3 and likely an RMA"
	remedyCompute      = "check cooling and power delivery for this GPU (airflow, fans, PSUs); dcgmi diag -r 3 confirms; a GPU that errs or falls off under load needs a reset and an RMA if it repeats"
	remedyMemTest      = "drain the node and run dcgmi diag -r 3 (memory tests); corrupting memory needs an RMA"
	remedyVerifyRefuse = "run verify when the GPU is idle, or with --allow-busy when measuring beside the processes is intended"
)

// verifySkip: the verify checks judge a Verify only.
func verifySkip(n *state.Node, kind string) (Result, bool) {
	if n.Verify == nil {
		return Result{Status: Skip, Summary: "verify did not run (no measurements in the state)"}, true
	}
	for _, m := range n.Verify.Measurements {
		if m.Kind == kind {
			return Result{}, false
		}
	}
	why := "not measured"
	switch {
	case n.Verify.Error != "":
		why += ": " + n.Verify.Error
	case n.Verify.Source != "" && n.Verify.Source != "measured":
		why += fmt.Sprintf(": the %s output holds no %s figure", n.Verify.Source, kind)
	}
	return Result{Status: Skip, Summary: why}, true
}

// verifyGPU is the node state's GPU of an NVML index, or a stand-in named
// from the run's device list when the state has none (a --from file of
// another node, a GPU NVML did not list).
func verifyGPU(n *state.Node, index int) *state.GPU {
	if n.NVML != nil { // nil for a --from file judged on its own
		if g := gpuByIndex(n, index); g != nil {
			return g
		}
	}
	g := &state.GPU{Index: index}
	if n.Verify == nil {
		return g
	}
	for _, d := range n.Verify.Devices {
		if d.Index == index {
			g.Name, g.PCIBusID = d.Name, d.PCIBusID
			return g
		}
	}
	// A saved nvbandwidth output numbers its GPUs as the tool does (CUDA
	// ordinals, "Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)"), and
	// its figures carry that number: its device list names them by ordinal
	// (no NVML index is known for another node's file).
	if n.Verify.Source != "" && n.Verify.Source != "measured" {
		for _, d := range n.Verify.Devices {
			if d.Index < 0 && d.Ordinal == index {
				g.Name, g.PCIBusID = d.Name, d.PCIBusID
				return g
			}
		}
	}
	return g
}

// median of the values (0 for none).
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// minOutlierSet: the outlier rule needs three figures; with two, neither is
// known to be the slow one.
const minOutlierSet = 3

// judged is one figure's verdict against its expectation and siblings.
type judged struct {
	status Status
	msg    string
}

// judgeFigure: the % of expected against warn/fail, then the outlier rule
// against the median of the figures it is compared with (0: none).
func judgeFigure(cfg *Config, what string, value float64, unit string, e Expectation, hasExp bool, median float64, siblings string) judged {
	vc := cfg.Verify
	j := judged{status: Pass}
	var parts []string
	if hasExp && e.Value > 0 {
		pct := value / e.Value * 100
		line := fmt.Sprintf("%s %.1f %s is %.0f%% of the %.1f %s expected (%s)", what, value, unit, pct, e.Value, unit, e.Basis)
		switch {
		case pct < vc.FailPercent:
			j.status = Fail
			parts = append(parts, line)
		case pct < vc.WarnPercent:
			j.status = Warn
			parts = append(parts, line)
		}
	}
	if median > 0 && vc.OutlierPercent > 0 && value < median*vc.OutlierPercent/100 {
		j.status = Fail
		line := fmt.Sprintf("%.0f%% of the median %.1f %s of %s", value/median*100, median, unit, siblings)
		if len(parts) == 0 {
			line = fmt.Sprintf("%s %.1f %s is %s", what, value, unit, line)
		}
		parts = append(parts, line)
	}
	j.msg = strings.Join(parts, "; ")
	return j
}

// perGPU judges one kind measured once per GPU.
func perGPU(n *state.Node, cfg *Config, id, kind, what, remedy string, expect func(g *state.GPU) (Expectation, bool), note func(g *state.GPU) string) Result {
	if r, skip := verifySkip(n, kind); skip {
		return r
	}
	v := verdict{id: id}
	var ms []state.Measurement
	var vals []float64
	for _, m := range n.Verify.Measurements {
		if m.Kind != kind {
			continue
		}
		ms = append(ms, m)
		if m.Error == "" && m.Value > 0 {
			vals = append(vals, m.Value)
		}
	}
	med := 0.0
	if len(vals) >= minOutlierSet {
		med = medianOf(vals)
	}
	var pcts []float64
	var noExp []string
	var basis string
	unit := ms[0].Unit
	for _, m := range ms {
		g := verifyGPU(n, m.GPU)
		if m.Error != "" {
			v.add(Error, g, remedyVerifyError, what+" not measured: "+m.Error)
			continue
		}
		e, ok := expect(g)
		if ok {
			pcts = append(pcts, m.Value/e.Value*100)
			basis = e.Basis
		} else if !containsStr(noExp, modelName(g)) {
			noExp = append(noExp, modelName(g))
		}
		j := judgeFigure(cfg, what, m.Value, m.Unit, e, ok, med, fmt.Sprintf("this node's %d GPUs", len(vals)))
		if j.status != Pass && note != nil {
			j.msg += note(g)
		}
		v.add(j.status, g, remedy, j.msg)
	}
	pass := fmt.Sprintf("%s: %d GPUs at %s", what, len(vals), spread(vals, unit))
	if len(pcts) > 0 {
		pass += fmt.Sprintf(", %s of expected (%s)", spread(pcts, "%"), basis)
	}
	if len(noExp) > 0 {
		pass += fmt.Sprintf("; no expectation for %s: judged against this node's GPUs only", strings.Join(noExp, ", "))
	}
	return v.result(pass)
}

func modelName(g *state.GPU) string {
	if g.Name != "" {
		return g.Name
	}
	return "an unnamed GPU"
}

// spread prints the range of the values ("54.1–55.3 GB/s").
func spread(vs []float64, unit string) string {
	if len(vs) == 0 {
		return "no figure"
	}
	lo, hi := vs[0], vs[0]
	for _, x := range vs {
		lo, hi = min(lo, x), max(hi, x)
	}
	if unit == "%" {
		if fmt.Sprintf("%.0f", lo) == fmt.Sprintf("%.0f", hi) {
			return fmt.Sprintf("%.0f%%", lo)
		}
		return fmt.Sprintf("%.0f–%.0f%%", lo, hi)
	}
	if fmt.Sprintf("%.1f", lo) == fmt.Sprintf("%.1f", hi) {
		return fmt.Sprintf("%.1f %s", lo, unit)
	}
	return fmt.Sprintf("%.1f–%.1f %s", lo, hi, unit)
}

// linkNote says when the link ran below its maximum at collection: the
// figure was judged against the maximum, and a link that stays down under
// load is the likely cause (an idle GPU slowing its link is not).
func linkNote(g *state.GPU) string {
	p := g.PCIe
	if p == nil {
		return ""
	}
	if p.CurrentGen < p.MaxGen || p.CurrentWidth < p.MaxWidth {
		return fmt.Sprintf("; at collection the link ran Gen%d x%d of Gen%d x%d (trained lower: see gpu.pcie_link)", p.CurrentGen, p.CurrentWidth, p.MaxGen, p.MaxWidth)
	}
	return ""
}

func checkVerifyH2D(n *state.Node, cfg *Config) Result {
	return perGPU(n, cfg, "verify.h2d", state.MeasureH2D, "host → device", remedyHostLink, hostLinkExpectation, linkNote)
}

func checkVerifyD2H(n *state.Node, cfg *Config) Result {
	return perGPU(n, cfg, "verify.d2h", state.MeasureD2H, "device → host", remedyHostLink, hostLinkExpectation, linkNote)
}

func checkVerifyD2D(n *state.Node, cfg *Config) Result {
	return perGPU(n, cfg, "verify.d2d", state.MeasureD2D, "device-local copy", remedyD2D,
		func(g *state.GPU) (Expectation, bool) { return ModelExpectation(state.MeasureD2D, g.Name) }, nil)
}

// peerLink is how the topology says two GPUs are joined: "nvswitch" (both
// have NVLinks up to NVSwitches), "nvlink" (a's NVLinks reach b directly;
// links counts them) or "pcie".
func peerLink(a, b *state.GPU) (kind string, links int) {
	toSwitch := func(g *state.GPU) bool {
		for _, l := range g.NVLinks {
			if l.Up && l.RemoteType == "switch" {
				return true
			}
		}
		return false
	}
	if toSwitch(a) && toSwitch(b) {
		return "nvswitch", 0
	}
	for _, l := range a.NVLinks {
		if l.Up && b.PCIBusID != "" && l.RemotePCIBusID == b.PCIBusID {
			links++
		}
	}
	if links > 0 {
		return "nvlink", links
	}
	return "pcie", 0
}

func checkVerifyPeer(n *state.Node, cfg *Config) Result {
	if r, skip := verifySkip(n, state.MeasurePeer); skip {
		return r
	}
	v := verdict{id: "verify.peer"}
	type pairFig struct {
		m    state.Measurement
		a, b *state.GPU
		link string
	}
	var ps []pairFig
	byLink := map[string][]float64{}
	for _, m := range n.Verify.Measurements {
		if m.Kind != state.MeasurePeer {
			continue
		}
		a, b := verifyGPU(n, m.GPU), verifyGPU(n, m.Peer)
		link, _ := peerLink(a, b)
		if n.NVML == nil {
			// A saved output (--from) carries no topology: the pair's link is
			// not known, and calling it PCIe would be a guess.
			link = "unknown-link"
		}
		if m.Path == "p2p-unsupported" {
			link += " staged"
		}
		ps = append(ps, pairFig{m, a, b, link})
		if m.Error == "" && m.Value > 0 {
			byLink[link] = append(byLink[link], m.Value)
		}
	}
	var pcts, all []float64
	var noExp []string
	basis := ""
	for _, p := range ps {
		name := fmt.Sprintf("GPU %d → GPU %d", p.a.Index, p.b.Index)
		add := func(s Status, remedy, msg string) {
			v.add(s, p.a, remedy, msg)
			v.add(s, p.b, remedy, msg)
		}
		if p.m.Error != "" {
			add(Error, remedyVerifyError, name+" not measured: "+p.m.Error)
			continue
		}
		all = append(all, p.m.Value)
		if strings.HasSuffix(p.link, " staged") && !strings.HasPrefix(p.link, "pcie") {
			add(Fail, remedyPeer, fmt.Sprintf("%s: the driver refuses peer access between GPUs the topology joins by NVLink; the copy was staged through host memory at %.1f GB/s", name, p.m.Value))
			continue
		}
		var e Expectation
		ok := false
		switch p.link {
		case "nvswitch":
			e, ok = ModelExpectation(state.MeasurePeer, p.a.Name)
		case "pcie":
			ea, oka := hostLinkExpectation(p.a)
			eb, okb := hostLinkExpectation(p.b)
			if oka && okb {
				e, ok = ea, true
				if eb.Value < ea.Value {
					e = eb
				}
				e.Basis = "PCIe peer, the slower link: " + e.Basis
			}
		}
		if ok {
			pcts = append(pcts, p.m.Value/e.Value*100)
			basis = e.Basis
		} else if !containsStr(noExp, p.link) {
			noExp = append(noExp, p.link)
		}
		med := 0.0
		if sib := byLink[p.link]; len(sib) >= minOutlierSet {
			med = medianOf(sib)
		}
		j := judgeFigure(cfg, name, p.m.Value, p.m.Unit, e, ok, med, fmt.Sprintf("this node's %d %s pairs", len(byLink[p.link]), p.link))
		add(j.status, remedyPeer, j.msg)
	}
	pass := fmt.Sprintf("%d GPU pairs at %s", len(all), spread(all, "GB/s"))
	if len(pcts) > 0 {
		pass += fmt.Sprintf(", %s of expected (%s)", spread(pcts, "%"), basis)
	}
	if len(noExp) > 0 {
		pass += fmt.Sprintf("; no expectation for %s pairs of this platform: judged against the node's other pairs only", strings.Join(noExp, ", "))
	}
	return v.result(pass)
}

// Under load, the hardware slowing a GPU is a fault (HW slowdown, HW
// thermal, HW power brake: the board or its cooling); the driver's thermal
// slowdown warns (the GPU reached its slowdown temperature: cooling is
// short); the SW power cap is how a loaded GPU holds its power limit.
const loadFailBits = clockHWSlowdown | clockHWThermal | clockHWPowerBrake

func loadReasons(mask uint64) []string {
	var out []string
	for _, b := range slowdownBits {
		if mask&b.bit != 0 {
			out = append(out, b.name)
		}
	}
	return out
}

func checkVerifyCompute(n *state.Node, cfg *Config) Result {
	if r, skip := verifySkip(n, state.MeasureCompute); skip {
		return r
	}
	v := verdict{id: "verify.compute"}
	var vals []float64
	for _, m := range n.Verify.Measurements {
		if m.Kind == state.MeasureCompute && m.Error == "" && m.Value > 0 {
			vals = append(vals, m.Value)
		}
	}
	med := 0.0
	if len(vals) >= minOutlierSet {
		med = medianOf(vals)
	}
	var pcts []float64
	var noExp []string
	basis := ""
	unwatched := 0
	for _, m := range n.Verify.Measurements {
		if m.Kind != state.MeasureCompute {
			continue
		}
		g := verifyGPU(n, m.GPU)
		if w := m.Load; w != nil {
			// 0 °C is a temperature not read (an older capture, or the call
			// failed at every sample): left out, never said.
			temp := ""
			if w.MaxTempC > 0 {
				temp = fmt.Sprintf(", %d °C", w.MaxTempC)
			}
			clocks := fmt.Sprintf("SM clock %d–%d of %d MHz%s, %.0f W", w.MinSMClockMHz, w.MaxSMClockMHz, w.MaxClockMHz, temp, w.MaxPowerW)
			if w.Lost {
				v.add(Fail, g, remedyCompute, "fell off the bus under load (GPU_IS_LOST)")
			}
			if len(w.XIDs) > 0 {
				v.add(Fail, g, remedyCompute, fmt.Sprintf("Xid %s logged under load", joinInts(w.XIDs)))
			}
			if w.ECCDelta > 0 {
				v.add(Fail, g, remedyCompute, fmt.Sprintf("%d uncorrectable ECC errors under load", w.ECCDelta))
			}
			if w.ThrottleReasons&loadFailBits != 0 {
				v.add(Fail, g, remedyCompute, fmt.Sprintf("the hardware slowed it under load (%s; %s)", strings.Join(loadReasons(w.ThrottleReasons), ", "), clocks))
			} else if w.ThrottleReasons&clockSWThermal != 0 {
				v.add(Warn, g, remedyCompute, fmt.Sprintf("reached its slowdown temperature under load (sw_thermal_slowdown; %s)", clocks))
			}
			if w.ReadError != "" {
				v.add(Warn, g, remedyVerifyError, "the load watch could not read: "+w.ReadError)
			}
		} else if m.Error == "" {
			unwatched++
		}
		if m.Error != "" {
			v.add(Error, g, remedyVerifyError, "compute load failed: "+m.Error)
			continue
		}
		e, ok := ModelExpectation(state.MeasureCompute, g.Name)
		if ok {
			pcts = append(pcts, m.Value/e.Value*100)
			basis = e.Basis
		} else if !containsStr(noExp, modelName(g)) {
			noExp = append(noExp, modelName(g))
		}
		j := judgeFigure(cfg, "FP32 FMA", m.Value, m.Unit, e, ok, med, fmt.Sprintf("this node's %d GPUs", len(vals)))
		v.add(j.status, g, remedyCompute, j.msg)
	}
	pass := fmt.Sprintf("FP32 FMA: %d GPUs at %s", len(vals), spread(vals, "TFLOP/s"))
	if len(pcts) > 0 {
		pass += fmt.Sprintf(", %s of expected (%s)", spread(pcts, "%"), basis)
	}
	pass += ", no throttling, Xid, ECC error or loss under load"
	if unwatched > 0 {
		pass += fmt.Sprintf(" (%d GPUs' load not watched: no NVML reading)", unwatched)
	}
	if len(noExp) > 0 {
		pass += fmt.Sprintf("; no expectation for %s: judged against this node's GPUs only", strings.Join(noExp, ", "))
	}
	return v.result(pass)
}

func checkVerifyMemTest(n *state.Node, _ *Config) Result {
	if r, skip := verifySkip(n, state.MeasureMemTest); skip {
		return r
	}
	v := verdict{id: "verify.memtest"}
	var total int64
	count := 0
	for _, m := range n.Verify.Measurements {
		if m.Kind != state.MeasureMemTest {
			continue
		}
		g := verifyGPU(n, m.GPU)
		switch {
		case m.Error != "":
			v.add(Error, g, remedyVerifyError, "memory pattern test failed: "+m.Error)
		case m.Mismatches > 0:
			v.add(Fail, g, remedyMemTest, fmt.Sprintf("%d words of %d MiB read back wrong", m.Mismatches, m.Bytes>>20))
		default:
			total += m.Bytes
			count++
		}
	}
	return v.result(fmt.Sprintf("%d GPUs: %d MiB each written and read back unchanged", count, total>>20/int64(max(count, 1))))
}

func checkVerifyRun(n *state.Node, _ *Config) Result {
	vf := n.Verify
	if vf == nil {
		return Result{Status: Skip, Summary: "verify did not run (no measurements in the state)"}
	}
	v := verdict{id: "verify.run"}
	if vf.Error != "" {
		v.add(Error, nil, remedyVerifyError, vf.Error)
	}
	for _, r := range vf.Refused {
		v.add(Warn, nil, remedyVerifyRefuse, "not measured: "+r)
	}
	for _, note := range vf.Notes {
		v.add(Pass, nil, "", note)
	}
	// Nothing judged is not "healthy": a run that measured nothing, or a
	// saved output holding no figure a verify check judges (an SM-copy
	// nvbandwidth test, a matrix cut from a post), says so.
	judged := 0
	var other []string
	for _, m := range vf.Measurements {
		switch m.Kind {
		case state.MeasureH2D, state.MeasureD2H, state.MeasureD2D, state.MeasurePeer, state.MeasureCompute, state.MeasureMemTest, state.MeasureBusBW, state.MeasureDiag:
			judged++
		default:
			if p := m.Path; p != "" && !containsStr(other, p) {
				other = append(other, p)
			}
		}
	}
	if judged == 0 && vf.Error == "" {
		msg := "nothing was judged: no figure of a kind verify judges"
		if len(other) > 0 {
			msg += " (read: " + strings.Join(other, ", ") + ")"
		}
		v.add(Warn, nil, "measure with gpuprobe verify, or give --from the output of a test verify judges (docs/verify.md)", msg)
	}
	var what string
	if vf.Source == "measured" || vf.Source == "" {
		gpus := map[int]bool{}
		for _, m := range vf.Measurements {
			gpus[m.GPU] = true
		}
		what = fmt.Sprintf("measured %d GPUs (%s tier) in %.1f s through %s", len(gpus), vf.Tier, vf.Took.Seconds(), vf.Driver)
	} else {
		what = fmt.Sprintf("read %d figures from %s output %s", len(vf.Measurements), vf.Source, vf.File)
	}
	return v.result(what)
}
