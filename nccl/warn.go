package nccl

import (
	"bytes"
	"slices"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
)

// WARN records and the foreign lines that matter around them. The parser
// only recognises them (a code per kind); check/ncclverdict decides what
// each code means and what to do about it.

type warnRule struct {
	match []byte
	code  string
}

// warnRules name WARN messages; the first match wins. WARNs not listed are
// "nccl_warn".
var warnRules = []warnRule{
	{[]byte("Got async event"), "ib_async_event"},
	{[]byte("Failed to open libibverbs"), "no_ibverbs"},
	{[]byte("Failed to find CUDA library"), "no_libcuda"},
	{[]byte("does not loop back"), "topology_error"},
	{[]byte("ibv_reg_mr"), "ib_memory_registration"},
	{[]byte("ibv_reg_dmabuf_mr"), "ib_memory_registration"},
	{[]byte("Bootstrap"), "bootstrap_error"},
	{[]byte("Connection closed by remote peer"), "peer_lost"},
	{[]byte("Connection refused"), "connection_refused"},
	{[]byte("Cuda failure"), "cuda_error"},
}

func (a *Analyzer) applyWarn(p *process, r *rawRecord, at loc) {
	m := r.msg
	w := a.warnClass(m)
	if w.ib {
		p.see(netIB, strengthInit, at, m)
	}
	if w.rule == warnCompletion {
		a.ibCompletion(p, r, at, w.key)
		return
	}
	if w.rule >= 0 {
		rule := &warnRules[w.rule]
		if rule.code == "bootstrap_error" {
			// "Bootstrap Root : rank 1 of 8 ranks has already checked in"
			if n := numberAfter(m, []byte(" of ")); n > 0 && bytes.Contains(m, []byte(" ranks")) {
				a.addNRanks(n)
			}
		}
		if rule.code == "no_ibverbs" && !p.noIB.at.valid() {
			// NCCL <= 2.4 warns, later ones print INFO: either way IB
			// cannot be used by this process.
			p.noIB = evidence{at: at, text: safetext.Clip(string(m), 200)}
		}
		a.addWarn(rule.code, r, p, at)
		return
	}
	a.addWarn("nccl_warn", r, p, at)
}

// warnClass is what a WARN message says by its text alone: whether it
// names NET/IB, and which rule it matches (warnCompletion: an IB
// completion error, with its key; -1: none).
type warnClass struct {
	msg  string // the message it was made of (in warnMemo)
	key  []byte // warnCompletion: ibCompletion's key
	rule int
	ib   bool
	ok   bool // the entry is filled
}

const warnCompletion = -2

// warnMemo remembers the warnClass of recent WARN messages. A job's ranks
// print the same few WARNs, each rank its own copy (the real shape: 11
// texts, 528 times each, per 40 MB), and matching a message against the
// rules cost 2,500 instructions. Invariant: warnClass depends on the
// message's bytes alone and an entry is used only for the same bytes, so
// the memo cannot change a finding; 64 entries of at most warnMemoText
// bytes, whatever the log. TestWarnMemo holds it.
type warnMemo [64]warnClass

const warnMemoText = 256

func (a *Analyzer) warnClass(m []byte) *warnClass {
	var e *warnClass
	if len(m) <= warnMemoText {
		e = &a.warns[hash64(m)&uint64(len(a.warns)-1)]
		if e.ok && e.msg == string(m) {
			return e
		}
	} else {
		e = &a.warnLong
	}
	*e = warnClass{ok: true, msg: string(m), rule: -1, ib: bytes.Contains(m, []byte("NET/IB")) || bytes.Contains(m, []byte("NET/IBext"))}
	if bytes.Contains(m, []byte("Got completion from peer")) {
		e.rule, e.key = warnCompletion, completionKey(m)
		return e
	}
	for i := range warnRules {
		if bytes.Contains(m, warnRules[i].match) {
			e.rule = i
			break
		}
	}
	return e
}

// addWarn adds a WARN finding keyed by its source location; the text is
// built only for a new one.
func (a *Analyzer) addWarn(code string, r *rawRecord, p *process, at loc) {
	if !a.find.repeat(code, r.tag, at) {
		a.find.add(code, string(r.tag), warnText(r), where(p), at)
	}
}

func warnText(r *rawRecord) string { return string(r.tag) + " NCCL WARN " + string(r.msg) }

// ibCompletion handles "NET/IB : Got completion from peer … with error 4,
// opcode …, vendor err 81 (Send)" (NCCL core) and "… with status=12
// opcode=0 len=0 vendor err 129 (Recv) …" (HPC-X plugin). The key carries
// the status and vendor error ("status 12 vendor 129"): the judge's remedy
// depends on them.
func (a *Analyzer) ibCompletion(p *process, r *rawRecord, at loc, key []byte) {
	if !a.find.repeat("ib_completion_error", key, at) {
		a.find.add("ib_completion_error", string(key), warnText(r), where(p), at)
	}
}

// completionKey is ibCompletion's key of message m.
func completionKey(m []byte) []byte {
	vendor := numberAfter(m, []byte("vendor err "))
	status := numberAfter(m, []byte("with error "))
	if status < 0 {
		status = numberAfter(m, []byte("status="))
	}
	return append(append(append(append([]byte(nil), "status "...), itoa(status)...), " vendor "...), itoa(vendor)...)
}

// numberAfter returns the decimal number that follows marker in m, or -1.
func numberAfter(m, marker []byte) int64 {
	i := bytes.Index(m, marker)
	if i < 0 {
		return -1
	}
	v, n := leadingInt(m[i+len(marker):])
	if n == 0 {
		return -1
	}
	return v
}

type foreignRule struct {
	match []byte
	code  string
	// once: count every such line under one finding (one example is enough).
	once bool
}

// foreignRules pick out the lines from other software that decide or
// explain an NCCL problem. The rest of the foreign lines are only counted.
var foreignRules = []foreignRule{
	{[]byte("Watchdog caught collective operation timeout"), "collective_timeout", false},
	{[]byte("Caught signal "), "crash", false},
	{[]byte("NCCL error"), "framework_nccl_error", false},
	{[]byte("DistBackendError"), "framework_nccl_error", false},
	{[]byte("<warn>"), "libfabric_warning", true},
	{[]byte("nccl=="), "framework_nccl_version", true},
}

// matchForeign returns the index of the first foreign rule b matches, or -1.
func matchForeign(b []byte) int {
	for i, rule := range foreignRules {
		if bytes.Contains(b, rule.match) {
			return i
		}
	}
	if resultLine(b) {
		return frameworkError
	}
	return -1
}

// frameworkError is the foreign rule of a framework's NCCL error.
const frameworkError = 2

var errorColon = []byte("Error: ")

// resultLine reports a failing ncclResult_t named as PyTorch prints it
// under its "NCCL error in: …" line (getNcclErrorDetailStr in
// torch/csrc/distributed/c10d/NCCLUtils.cpp: "ncclInternalError: Internal
// check failed.", "ncclRemoteError: A call failed possibly due to a
// network error …"), which an excerpt may hold without that line
// (posted/150.log, nccl#1837, behind a "[trainer0|0]:" launcher tag). One
// search of a foreign line, not of NCCL's records.
func resultLine(b []byte) bool {
	j := bytes.Index(b, errorColon)
	if j < 0 {
		return false
	}
	name := b[:j+len("Error")]
	k := bytes.LastIndex(name, []byte("nccl"))
	return k >= 0 && slices.Contains(rcNames[1:7], string(name[k:])) // not ncclSuccess, ncclInProgress
}

// foreign notes a line from other software. The parser has counted it.
func (a *Analyzer) foreign(b []byte) {
	i := matchForeign(b)
	if i < 0 {
		return
	}
	if a.seen.dup(b, 0) {
		a.stats.Duplicates++
		return
	}
	rule := foreignRules[i]
	if rule.code == "libfabric_warning" && !a.netPlugin.at.valid() && bytes.Contains(b, []byte("libfabric:")) {
		// aws-ofi-nccl's libfabric prints these: a network plugin is loaded.
		a.netPlugin = evidence{at: a.cur, text: safetext.Clip(string(b), 200)}
	}
	key := ""
	if rule.once {
		key = "all"
	}
	a.find.add(rule.code, key, string(b), "", a.cur)
}
