package check

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// The verify.* checks judge what `gpuprobe verify` measured or read; these
// two judge saved outputs read with `verify --from` (benchout/): an
// nccl-tests run and a dcgmi diag run. nvbandwidth's figures are
// measurements of the kinds verify itself takes (h2d, d2h, peer, d2d) and
// are judged with them. Rules and sources: docs/verify.md, "Judging saved outputs".

func init() {
	for _, c := range []Check{
		{ID: "verify.nccl_tests", Title: "an nccl-tests output (verify --from): correct results, a real multi-rank run, bus bandwidth at large sizes against the expectation for its shape", Run: checkNcclTests},
		{ID: "verify.dcgmi_diag", Title: "a dcgmi diag output (verify --from): every GPU passes every test it ran", Run: checkDcgmiDiag},
	} {
		c.Scope = VerifyScope
		register(c)
	}
}

// fromFinding is one observation of a --from check.
type fromFinding struct {
	status Status
	msg    string
	remedy string
	gpus   []int
}

// fromResult folds findings: the worst status wins and names the summary;
// every finding that is not a pass is a detail.
func fromResult(id string, fs []fromFinding, passSummary string, details []string) Result {
	r := Result{ID: id, Status: Pass, Devices: []Device{}}
	for _, f := range fs {
		if f.status.Worse(r.Status) || r.Status == Pass && f.status == Skip {
			r.Status = f.status
		}
	}
	var worst, remedies []string
	seen := map[int]bool{}
	for _, f := range fs {
		if f.status == r.Status {
			worst = append(worst, f.msg)
			if f.remedy != "" && !slices.Contains(remedies, f.remedy) {
				remedies = append(remedies, f.remedy)
			}
			for _, g := range f.gpus {
				if !seen[g] && (r.Status == Fail || r.Status == Warn) {
					seen[g] = true
					r.Devices = append(r.Devices, Device{Index: g})
				}
			}
		}
		if f.status != Pass {
			r.Details = append(r.Details, string(f.status)+": "+f.msg)
		}
	}
	slices.SortFunc(r.Devices, func(a, b Device) int { return a.Index - b.Index })
	switch {
	case r.Status == Pass:
		r.Summary = passSummary
	case len(worst) > 2:
		r.Summary = strings.Join(worst[:2], "; ") + fmt.Sprintf(" (and %d more)", len(worst)-2)
	default:
		r.Summary = strings.Join(worst, "; ")
	}
	if r.Status == Warn || r.Status == Fail {
		r.Remedy = strings.Join(remedies, "; ")
	}
	r.Details = append(r.Details, details...)
	return r
}

// collectiveShape is an nccl-tests run's shape as its rank lines say.
type collectiveShape struct {
	ranks       int
	worlds      int // independent runs: each process its own world
	hosts       []string
	gpusPerNode int
	models      []string
}

func shapeOf(c *state.CollectiveRun) collectiveShape {
	var s collectiveShape
	perHost := map[string]int{}
	zeros := 0
	for _, r := range c.Ranks {
		if r.Rank == 0 {
			zeros++
		}
		if perHost[r.Host] == 0 {
			s.hosts = append(s.hosts, r.Host)
		}
		perHost[r.Host]++
		if r.Model != "" && !slices.Contains(s.models, r.Model) {
			s.models = append(s.models, r.Model)
		}
	}
	s.ranks = len(c.Ranks)
	s.worlds = max(c.Headers, zeros, 1)
	for _, n := range perHost {
		s.gpusPerNode = max(s.gpusPerNode, n)
	}
	if s.worlds > 1 {
		// Each world holds its share; a host's GPUs are counted per world.
		s.gpusPerNode = max(1, s.gpusPerNode/s.worlds)
	}
	return s
}

func (s collectiveShape) String() string {
	if s.ranks == 0 && len(s.hosts) == 0 && len(s.models) == 0 {
		return "shape not shown: the output has no nccl-tests header (ranks, hosts, GPUs)"
	}
	model := "unknown GPU"
	if len(s.models) == 1 {
		model = s.models[0]
	} else if len(s.models) > 1 {
		model = "mixed GPUs (" + strings.Join(s.models, ", ") + ")"
	}
	return fmt.Sprintf("%d rank(s) on %d node(s), %d GPU(s) per node, %s", s.ranks, len(s.hosts), s.gpusPerNode, model)
}

// network is how the nodes talked, as the NCCL INFO lines say: the
// "Using network X" choice, else the NET/X a channel went over; "" when the
// output holds no such line.
func network(c *state.CollectiveRun) (name string, evidence *state.TransportLine) {
	for i, t := range c.Transports {
		if t.Kind == "network" && !strings.HasPrefix(t.Name, "NET/") {
			return t.Name, &c.Transports[i]
		}
	}
	for i, t := range c.Transports {
		if t.Kind == "channel" && strings.HasPrefix(t.Name, "NET/") {
			return strings.TrimPrefix(t.Name, "NET/"), &c.Transports[i]
		}
	}
	return "", nil
}

func gb(bytes int64) string {
	switch {
	case bytes >= 1<<30 && bytes%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", bytes>>30)
	case bytes >= 1<<20 && bytes%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", bytes>>20)
	case bytes >= 1<<30:
		// all_gather rounds sizes to a multiple of the rank count
		// (8589934560 B on 12 ranks): the bytes, and about how much.
		return fmt.Sprintf("%d B (%.1f GiB)", bytes, float64(bytes)/(1<<30))
	case bytes >= 1<<20:
		return fmt.Sprintf("%d B (%.1f MiB)", bytes, float64(bytes)/(1<<20))
	}
	return fmt.Sprintf("%d B", bytes)
}

func checkNcclTests(n *state.Node, _ *Config) Result {
	const id = "verify.nccl_tests"
	v := n.Verify
	if v == nil || v.Source != "nccl-tests" {
		return Result{ID: id, Status: Skip, Devices: []Device{}, Summary: "no nccl-tests output given (verify --from FILE)"}
	}
	c := &state.CollectiveRun{}
	if v.From != nil && v.From.Collective != nil {
		c = v.From.Collective
	}
	var fs []fromFinding
	var details []string
	test := c.Test
	if test == "" {
		test = "an unnamed nccl-tests binary"
	}
	var rows []state.Measurement
	for _, m := range v.Measurements {
		if m.Kind == state.MeasureBusBW {
			rows = append(rows, m)
		}
	}

	// The collective's own checks: wrong data is a failure whatever the speed.
	for _, m := range rows {
		if m.Mismatches > 0 {
			fs = append(fs, fromFinding{status: Fail, msg: fmt.Sprintf("%d wrong element(s) at size %s (#wrong): the collective returned wrong data", m.Mismatches, gb(m.Bytes)),
				remedy: "a GPU, NVLink or NIC corrupts data: rerun per node and per GPU pair to find it, and check the XID/SXid logs"})
		}
	}
	for _, o := range c.OutOfBounds {
		if o.Count > 0 || !strings.EqualFold(o.Status, "OK") {
			fs = append(fs, fromFinding{status: Fail, msg: fmt.Sprintf("line %d: out of bounds values: %d %s", o.Line, o.Count, safetext.Clean(o.Status)),
				remedy: "the test's own validation failed: treat the GPUs and links of this run as suspect"})
		}
	}

	// Did it measure anything?
	s := shapeOf(c)
	allOne := len(c.CommRanks) == 1 && c.CommRanks[0] == 1
	switch {
	case s.worlds > 1 && (s.ranks <= s.worlds || allOne):
		fs = append(fs, fromFinding{status: Error,
			msg:    fmt.Sprintf("measured nothing: every process reports nranks 1 (%d headers, %d 'Rank 0' lines): each process ran its own one-rank test, so no data crossed a link", c.Headers, countRank0(c)),
			remedy: "nccl-tests was built without MPI (or launched without it): rebuild with make MPI=1 and launch with mpirun or srun --mpi=pmix"})
	case s.worlds > 1:
		fs = append(fs, fromFinding{status: Error,
			msg:    fmt.Sprintf("%d processes each ran their own %d-rank test instead of one %d-rank test: the figures are per process, not of the whole run", s.worlds, s.ranks/s.worlds, s.ranks),
			remedy: "nccl-tests was built without MPI: rebuild with make MPI=1"})
	case s.ranks == 1 || allOne:
		fs = append(fs, fromFinding{status: Error, msg: "measured nothing: one rank; a collective over one GPU moves no data between GPUs (busbw is 0 by definition)",
			remedy: "run over two or more GPUs (-g N, or one rank per GPU under MPI)"})
	case len(rows) == 0:
		fs = append(fs, fromFinding{status: Error, msg: "no size-table rows: the run printed no figures (did it finish?)"})
	}

	// How the nodes talked. NCCL sets up a network plugin ("Using network
	// Socket") in every communicator, one node or many; only a channel
	// "via NET/Socket" or a run across nodes puts data on it. A run known
	// to be on one node (its rank lines, or "nNodes 1") is not warned.
	net, ev := network(c)
	nodes := len(s.hosts)
	if nodes == 0 {
		nodes = c.Nodes
	}
	var sockChan, sockNet *state.TransportLine
	for i, t := range c.Transports {
		switch {
		case !strings.Contains(t.Name, "Socket"):
		case t.Kind == "channel" && sockChan == nil:
			sockChan = &c.Transports[i]
		case t.Kind != "channel" && sockNet == nil:
			sockNet = &c.Transports[i]
		}
	}
	if t := sockChan; t != nil || sockNet != nil && nodes != 1 {
		if t == nil {
			t = sockNet
		}
		msg := fmt.Sprintf("TCP sockets: NCCL used %s (line %d: %s)", t.Name, t.Line, safetext.Clean(t.Text))
		if t.Kind != "channel" && nodes == 0 {
			msg += "; the output does not say how many nodes the run spanned (no rank lines, no nNodes)"
		}
		fs = append(fs, fromFinding{status: Warn, msg: msg,
			remedy: "NCCL fell back to TCP: check that the IB/RoCE/EFA devices and NCCL's net plugin are visible to the job (NCCL_IB_HCA, NCCL_NET, the container's devices)"})
	} else if sockNet != nil {
		details = append(details, fmt.Sprintf("NCCL set up its Socket network (line %d) but the run is on one node and no channel went over it", sockNet.Line))
	}
	if ev != nil && (nodes != 1 || sockChan != nil || !strings.Contains(net, "Socket")) {
		details = append(details, fmt.Sprintf("network: %s (line %d)", net, ev.Line))
	} else if len(s.hosts) > 1 {
		details = append(details, "network: not shown (no NCCL INFO lines; run with NCCL_DEBUG=INFO to tell IB, EFA and TCP sockets apart)")
	}
	for _, a := range c.AvgBusBW {
		details = append(details, fmt.Sprintf("the Avg bus bandwidth line (%.2f GB/s) averages every size, small ones included: not judged", a))
	}

	// The figure: the best bus bandwidth at the large sizes.
	var best *state.Measurement
	var largest int64
	for i, m := range rows {
		largest = max(largest, m.Bytes)
		if m.Bytes >= busBWJudgedFrom && (best == nil || m.Value > best.Value) {
			best = &rows[i]
		}
	}
	judgeable := !slices.ContainsFunc(fs, func(f fromFinding) bool { return f.status == Error })
	switch {
	case !judgeable || len(rows) == 0:
	case best == nil:
		fs = append(fs, fromFinding{status: Skip,
			msg:    fmt.Sprintf("largest size %s is under %s: too small to reach peak bus bandwidth, not judged (%s)", gb(largest), gb(busBWJudgedFrom), s),
			remedy: "rerun with -e 8G"})
	default:
		fig := fmt.Sprintf("%s peak busbw %.2f GB/s at %s", test, best.Value, gb(best.Bytes))
		e := findBusBW(c.Test, s, net)
		if e == nil {
			fs = append(fs, fromFinding{status: Skip, msg: fmt.Sprintf("%s; no expectation for this shape (%s, network %s)", fig, s, orNone(net))})
			break
		}
		pct := 100 * best.Value / e.Healthy
		msg := fmt.Sprintf("%s, %.0f%% of the %.0f GB/s a healthy %d-node %d x %s reaches (%s)", fig, pct, e.Healthy, e.Nodes, e.GPUsPerNode, e.Model, e.Source)
		switch {
		case best.Value >= e.Healthy*busBWWarnFraction:
			fs = append(fs, fromFinding{status: Pass, msg: msg})
			details = append(details, msg)
		case best.Value >= e.Healthy*busBWFailFraction:
			fs = append(fs, fromFinding{status: Warn, msg: msg, remedy: "check NVLink state and errors (gpuprobe check), clocks and NVLS (NCCL_NVLS_ENABLE)"})
		default:
			fs = append(fs, fromFinding{status: Fail, msg: msg, remedy: "a link or GPU is slow: run gpuprobe verify (peer copies) and gpuprobe check on the node"})
		}
	}
	pass := fmt.Sprintf("%s: no wrong results", test)
	for _, f := range fs {
		if f.status == Pass {
			pass = f.msg
		}
	}
	return fromResult(id, fs, pass, details)
}

func countRank0(c *state.CollectiveRun) int {
	n := 0
	for _, r := range c.Ranks {
		if r.Rank == 0 {
			n++
		}
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "not shown"
	}
	return s
}

// findBusBW is the expectation whose shape the run has, or nil.
func findBusBW(test string, s collectiveShape, net string) *busBWExpectation {
	if len(s.models) != 1 {
		return nil
	}
	for i, e := range busBWExpectations {
		if e.Test != test || e.Model != s.models[0] || e.Nodes != len(s.hosts) || e.GPUsPerNode != s.gpusPerNode || s.ranks != e.Nodes*e.GPUsPerNode {
			continue
		}
		if e.Nodes > 1 && !strings.EqualFold(e.Network, net) {
			continue
		}
		return &busBWExpectations[i]
	}
	return nil
}

// diagStatus reads dcgmi's status words: "Pass", "PASS", "Skip - All",
// "Fail - GPU: 1", "SKIPPED", "Warn". Anything else is "" (not a pass).
func diagStatus(s string) string {
	w, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	switch strings.ToLower(w) {
	case "pass", "passed":
		return "pass"
	case "fail", "failed", "failure", "error":
		return "fail"
	case "skip", "skipped", "n/a":
		return "skip"
	case "warn", "warning":
		return "warn"
	}
	return ""
}

var diagGPUListRe = regexp.MustCompile(`GPUs?:?\s*([0-9][0-9, ]*)`)

func checkDcgmiDiag(n *state.Node, _ *Config) Result {
	const id = "verify.dcgmi_diag"
	v := n.Verify
	if v == nil || v.Source != "dcgmi-diag" {
		return Result{ID: id, Status: Skip, Devices: []Device{}, Summary: "no dcgmi diag output given (verify --from FILE)"}
	}
	d := &state.DiagRun{}
	if v.From != nil && v.From.Diag != nil {
		d = v.From.Diag
	}
	var fs []fromFinding
	var details []string
	for _, e := range d.Errors {
		fs = append(fs, fromFinding{status: Error, msg: "dcgmi could not run the diagnostic: " + safetext.Clean(e),
			remedy: "not a GPU verdict: fix what stopped dcgmi (host engine, permissions, another job on the GPUs) and rerun"})
	}
	if d.Tables > 1 {
		details = append(details, fmt.Sprintf("%d result tables: the output holds several runs (one per srun task?); each is judged", d.Tables))
	}
	passed, skipped := 0, 0
	gpus := map[int]bool{}
	for _, t := range d.Tests {
		name := safetext.Clean(t.Name)
		msgs := safetext.Clean(strings.Join(t.Messages, " "))
		overall := diagStatus(t.Result)
		var failed, ok []int
		unknownGPU := ""
		for _, g := range t.GPUs {
			gpus[g.GPU] = true
			switch diagStatus(g.Status) {
			case "fail":
				failed = append(failed, g.GPU)
			case "pass", "skip":
				ok = append(ok, g.GPU)
			case "warn":
				fs = append(fs, fromFinding{status: Warn, gpus: []int{g.GPU}, msg: fmt.Sprintf("GPU %d: %s warned: %s", g.GPU, name, msgs)})
				ok = append(ok, g.GPU)
			default:
				unknownGPU = g.Status
			}
		}
		if unknownGPU != "" {
			fs = append(fs, fromFinding{status: Error, msg: fmt.Sprintf("%s: status %q is not one dcgmi prints (Pass/Fail/Skip/Warn): not read as a pass", name, safetext.Clean(unknownGPU))})
		}
		api := cudaAPIOnly(t.Messages)
		switch {
		case (len(failed) > 0 || overall == "fail") && api != "":
			// Every warning is DCGM_FR_CUDA_API: the test could not use
			// CUDA, and DCGM itself files that error under software
			// (DCGM_FR_EC_SOFTWARE_CUDA, dcgmlib/src/dcgm_errors.c), not
			// under a GPU's hardware.
			fs = append(fs, fromFinding{status: Error, msg: fmt.Sprintf("%s could not use CUDA (Error using CUDA API %s on %s): dcgmi's test did not run, so it is no verdict on the GPUs%s", name, api, gpuWord(failed), withMsg(msgs)),
				remedy: "not a GPU verdict: make CUDA work on the node first (on NVSwitch systems 'system not yet initialized' means nvidia-fabricmanager is not running; check the driver and that no other process holds the GPUs), then rerun dcgmi diag"})
		case len(failed) > 0:
			fs = append(fs, fromFinding{status: Fail, gpus: failed, msg: fmt.Sprintf("GPU %s failed %s%s", joinInts(failed), name, withMsg(msgs)),
				remedy: "drain the node and hand the GPU and dcgmi's message to the vendor"})
		case overall == "fail" && len(t.GPUs) > 0:
			// Every GPU line passed: what failed is the harness.
			fs = append(fs, fromFinding{status: Error, msg: fmt.Sprintf("%s: overall Fail while every GPU line passes: a harness error, not a GPU failure%s", name, withMsg(msgs)),
				remedy: "not a GPU verdict: fix what the message names (CPU binding under a shared Slurm job, permissions) and rerun dcgmi diag"})
		case overall == "fail":
			g := gpusIn(t.Result)
			who := "the node"
			if len(g) > 0 {
				who = "GPU " + joinInts(g)
			}
			fs = append(fs, fromFinding{status: Fail, gpus: g, msg: fmt.Sprintf("%s failed %s (%s)%s", who, name, safetext.Clean(t.Result), withMsg(msgs)),
				remedy: "read dcgmi's message: a deployment test names a setup problem, a hardware test a GPU"})
		case overall == "warn":
			fs = append(fs, fromFinding{status: Warn, msg: fmt.Sprintf("%s warned%s", name, withMsg(msgs))})
		case overall == "skip" || overall == "" && len(t.GPUs) > 0 && len(ok) == len(t.GPUs) && allSkipped(t.GPUs):
			skipped++
		case overall == "pass" || overall == "" && len(t.GPUs) > 0 && len(ok) == len(t.GPUs):
			passed++
		default:
			fs = append(fs, fromFinding{status: Error, msg: fmt.Sprintf("%s: result %q is not one dcgmi prints (Pass/Fail/Skip/Warn): not read as a pass", name, safetext.Clean(t.Result))})
		}
	}
	if len(d.Tests) == 0 && len(d.Errors) == 0 {
		fs = append(fs, fromFinding{status: Error, msg: "no test results in the dcgmi output"})
	}
	if skipped > 0 {
		details = append(details, fmt.Sprintf("%d test(s) skipped: Skip is not a failure, but a skipped test measured nothing", skipped))
	}
	if len(fs) == 0 && passed == 0 && skipped > 0 {
		fs = append(fs, fromFinding{status: Skip, msg: fmt.Sprintf("every test was skipped (%d): dcgmi measured nothing", skipped)})
	}
	pass := fmt.Sprintf("dcgmi diag: %d test(s) passed, %d skipped", passed, skipped)
	if len(gpus) > 0 {
		var g []int
		for k := range gpus {
			g = append(g, k)
		}
		slices.Sort(g)
		pass += " on GPU " + joinInts(g)
	}
	if d.DCGMVersion != "" {
		pass += " (DCGM " + safetext.Clean(d.DCGMVersion) + ")"
	}
	return fromResult(id, fs, pass, details)
}

// cudaAPIMsg is DCGM_FR_CUDA_API_MSG, "Error using CUDA API %s"
// (dcgmlib/dcgm_errors.h); the API named after it is a word.
const cudaAPIMsg = "Error using CUDA API "

// cudaAPIOnly is the CUDA API named when every warning of a test is
// DCGM's "Error using CUDA API X" (info lines aside), else "". (Plain string
// search: a package-level regexp would compile in every process at start.)
func cudaAPIOnly(msgs []string) string {
	api := ""
	for _, m := range msgs {
		if strings.HasPrefix(m, "Info") {
			continue
		}
		_, rest, ok := strings.Cut(m, cudaAPIMsg)
		end := strings.IndexFunc(rest, func(r rune) bool {
			return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		})
		if end < 0 {
			end = len(rest)
		}
		if !ok || end == 0 {
			return ""
		}
		if api == "" {
			api = rest[:end]
		}
	}
	return api
}

func gpuWord(gpus []int) string {
	if len(gpus) == 0 {
		return "every GPU"
	}
	return "GPU " + joinInts(gpus)
}

func allSkipped(rs []state.DiagResult) bool {
	for _, r := range rs {
		if diagStatus(r.Status) != "skip" {
			return false
		}
	}
	return true
}

func withMsg(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}

// gpusIn reads the GPUs of an old-style result ("Fail - GPU: 1, 3").
func gpusIn(s string) []int {
	m := diagGPUListRe.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	var out []int
	for _, f := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' }) {
		if g, err := strconv.Atoi(f); err == nil && g >= 0 && g <= 4096 && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}
