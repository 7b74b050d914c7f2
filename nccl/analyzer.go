package nccl

import (
	"bytes"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/gpuprobe/gpuprobe/state"
)

// DefaultMaxLineBytes caps what the analyzer reads of one physical line.
// The rest of a longer line is skipped and counted in Stats.TruncatedLines.
const DefaultMaxLineBytes = 64 << 10

// HeapSoftLimit is the Go heap limit (runtime/debug.SetMemoryLimit) that a
// command running only the analyzer sets unless GOMEMLIMIT is given. The
// analyzer keeps about 20 MiB live at most (the caps in state.go and its
// block buffers), but a hostile log (a new process on every line) churns
// garbage, and the default GC target of twice the live heap lets the peak
// RSS pass the 64 MB that scripts/bench-nccl.sh allows (figures in
// docs/nccl.md, Limits).
const HeapSoftLimit = 32 << 20

// tokenBits sizes the analyzer's cache of threads by envelope memo token.
const tokenBits = 12

// LimitRuntime fits the Go runtime to a process that runs only the
// analyzer: HeapSoftLimit unless the user chose a limit with GOMEMLIMIT,
// and at most maxWorkers Ps unless the user set GOMAXPROCS.
//
// Why the Ps: the analyzer never runs more than maxWorkers goroutines, so
// further Ps only add the runtime's per-P memory and idle GC workers. Under
// HeapSoftLimit that memory leaves the heap goal at the live heap, and the
// collector runs back to back: the real shape took 3.7 s with 16 Ps and
// 1.2 s with 4 on a 16-CPU machine (191 against 38 collections measured
// here with GOMAXPROCS=16 and 4; docs/nccl.md, Performance).
// TestLimitRuntimeCapsProcs holds the cap.
func LimitRuntime() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(HeapSoftLimit)
	}
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) > maxWorkers {
		runtime.GOMAXPROCS(maxWorkers)
	}
}

// Analyzer reads NCCL_DEBUG=INFO output line by line and keeps what the
// verdict needs. Its memory is bounded whatever the input (see the caps in
// state.go). It is safe for concurrent use: the streams of one child
// process can feed it from separate goroutines.
type Analyzer struct {
	mu      sync.Mutex
	maxLine int

	sources []string
	lines   []int64 // per source: physical lines read
	cur     loc

	lp *lineParser // for lines fed one at a time
	lb batch
	ev event

	seen dedupe
	// threads finds a thread by hash64 of its envelope prefix (threadOf);
	// nthreads is how many distinct hashes it holds, at most maxThreads.
	threads  *threadTable
	nthreads int
	slab     *[maxThreads]thread // where threads live (newThread)
	// slabUsed is how many threads of slab are handed out.
	slabUsed int
	keys     []byte // where threads' keys live (keep)
	// tokens finds a connItem's thread by its envelope token: no hash to
	// compare, no bytes of the line to fetch from the parser's core.
	// Invariants: one token names one envelope text in every memo
	// (envTokens; TestEnvTokensNameOnePrefix), and the cache is emptied
	// with the threads (forgetThreads; TestThreadCacheReset). It pays on
	// connection-heavy logs, not on the real shape (docs/nccl.md).
	tokens [1 << tokenBits]struct {
		token uint64
		th    *thread
	}
	procs        map[string]*process
	order        []*process // processes in order of appearance
	pseudo       *process   // records without an envelope
	overflow     *process   // where processes past maxProcesses go
	pidKnown     pidFilter  // the pids of the processes in procs
	comms        int        // commInst count
	orphans      int        // rankStats in processes' orphan maps, all together
	orphanCapped bool       // a connection went past maxOrphanRanks
	trIDs        map[string]uint16
	trNames      []trName
	trRecent     [8]trRecent
	trNext       int
	trHit        int // the entry of trRecent that answered last
	scratch      []byte
	sink         uint64 // keeps dedupe.touch's loads

	ranks     bitset // ranks seen in connection and communicator lines
	maxRank   int64
	nranks    map[int64]int // distinct nranks values announced
	listed    int64         // longest ring order listing
	netPlugin evidence      // a net plugin or libfabric loaded
	nnodes    int64
	conns     netConnStats
	intra     [trCollNet + 1]int64 // connection lines by class (P2P, SHM, …)
	collnet   bool
	format    string   // "2.2": records without the word NCCL
	multiNode evidence // a line that shows more than one node
	nvls      bool
	versions  []string
	envGlobal map[string]map[string]bool
	find      findings
	warns     warnMemo        // recent WARN messages' classes (applyWarn)
	warnLong  warnClass       // the class of a WARN message too long for warns
	netMemo   [8]netMemoEntry // network names netClass classified lately
	stats     state.NCCLStats

	heads    []pendingHead
	dangling *pendingHead
}

type trName struct {
	name  string
	class trClass
}

// pendingHead is a record whose message went missing: a torn write left
// only its envelope, or a folded paste broke the line after "via". The
// next suitable line completes it.
type pendingHead struct {
	rec rawRecord // slices point into buf
	buf []byte
	at  loc
}

// NewAnalyzer returns an empty analyzer.
func NewAnalyzer() *Analyzer {
	seen := newDedupe()
	return &Analyzer{
		maxLine:   DefaultMaxLineBytes,
		lp:        newLineParser(DefaultMaxLineBytes),
		seen:      seen,
		threads:   newThreadTable(),
		procs:     make(map[string]*process),
		trIDs:     make(map[string]uint16),
		nranks:    make(map[int64]int),
		envGlobal: make(map[string]map[string]bool),
		maxRank:   -1,
		nnodes:    -1,
	}
}

// source registers an input name and returns its index.
func (a *Analyzer) source(name string) int32 {
	a.sources = append(a.sources, name)
	a.lines = append(a.lines, 0)
	a.stats.Inputs = append(a.stats.Inputs, name)
	return int32(len(a.sources) - 1)
}

// Feed analyses one physical line (a trailing newline is allowed). Lines
// fed this way are numbered in the order they arrive.
func (a *Analyzer) Feed(line []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sources) == 0 {
		a.source("-")
	}
	a.stats.Bytes += int64(len(line))
	line = bytes.TrimSuffix(line, []byte("\n"))
	a.lb.reset()
	a.lp.out = &a.lb
	a.lb.lines = 1
	a.lp.line(line, 1)
	a.merge(0, &a.lb)
}

// merge folds what a parser made of consecutive lines of source src into
// the state, in order. The caller holds a.mu.
func (a *Analyzer) merge(src int32, b *batch) {
	base := a.lines[src]
	var sink uint64
	for _, h := range b.chash {
		sink += a.seen.touch(h)
	}
	for i := range b.items {
		if it := &b.items[i]; it.kind == itRecord && it.cls != KindOther {
			sink += a.seen.touch(it.hash)
		}
	}
	a.sink = sink
	c := 0 // b.conns[:c] are merged
	for i := range b.items {
		it := &b.items[i]
		for ; c < int(it.conns); c++ {
			a.mergeConn(src, base, &b.conns[c])
		}
		a.cur = loc{src: src, line: base + it.line}
		if d := a.dangling; d != nil && !a.next(d.at, it.kind) {
			a.flushDangling()
		}
		switch it.kind {
		case itRecord:
			a.recordItem(it, b)
		case itTorn:
			a.pushHead(&it.rec)
		case itDangling:
			a.dangling = a.own(&it.rec)
		case itFragment:
			if a.dangling != nil {
				a.completeDangling(it.text)
			}
		case itPlain:
			a.plainLine(it.text)
		}
	}
	for ; c < len(b.conns); c++ {
		a.mergeConn(src, base, &b.conns[c])
	}
	a.lines[src] += b.lines
	a.stats.Lines += b.lines
	a.stats.Records += b.records
	a.stats.TruncatedLines += b.truncated
	a.stats.ForeignLines += b.foreign
}

// next reports whether an item of kind k at a.cur may still complete a
// connection line broken at "at": only the start of the very next line of
// the same input can.
func (a *Analyzer) next(at loc, k itemKind) bool {
	return a.cur.src == at.src && a.cur.line == at.line+1 && (k == itFragment || k == itPlain)
}

// plainLine handles a line without NCCL records: the rest of a torn or
// folded record, or a foreign line worth noting.
func (a *Analyzer) plainLine(b []byte) {
	if a.dangling != nil && a.completeDangling(b) {
		return
	}
	if len(a.heads) > 0 && a.completeHead(b) {
		return
	}
	a.foreign(b)
}

// own copies a record out of the line buffer so that it can wait for the
// line that completes it: the buffer is reused once the batch is merged,
// so every slice of the record must point into the copy.
func (a *Analyzer) own(r *rawRecord) *pendingHead {
	// Each field is copied on its own: the record may wait across batches,
	// and the buffer its slices point into is reused once its batch is
	// merged. Torn and dangling records are rare, so the copies cost nothing.
	cp := func(s []byte) []byte {
		if len(s) == 0 {
			return nil
		}
		return append([]byte(nil), s...)
	}
	p := &pendingHead{at: a.cur, rec: *r}
	p.rec.host, p.rec.pid, p.rec.prefix, p.rec.tag, p.rec.msg, p.rec.key = cp(r.host), cp(r.pid), cp(r.prefix), cp(r.tag), cp(r.msg), cp(r.key)
	p.buf = p.rec.key
	return p
}

// pushHead remembers a record torn off after its envelope. Its message is
// the next line that has no envelope (the orphan tail of the torn write).
func (a *Analyzer) pushHead(r *rawRecord) {
	if len(a.heads) == 8 {
		a.heads = a.heads[1:]
	}
	a.heads = append(a.heads, *a.own(r))
}

func (a *Analyzer) completeHead(b []byte) bool {
	// Heads wait at most 16 lines, and only for lines of their own input.
	live := a.heads[:0]
	for _, h := range a.heads {
		if h.at.src != a.cur.src || a.cur.line-h.at.line <= 16 {
			live = append(live, h)
		}
	}
	a.heads = live
	i := 0
	for i < len(a.heads) && a.heads[i].at.src != a.cur.src {
		i++
	}
	if i == len(a.heads) {
		return false
	}
	m := bytes.TrimSpace(b)
	if len(m) == 0 || classify(m, &a.ev) == KindOther {
		return false
	}
	h := a.heads[i]
	a.heads = append(a.heads[:i], a.heads[i+1:]...)
	r := h.joined(m)
	a.record(&r)
	return true
}

// joined is the waiting record with tail appended to its message.
func (h *pendingHead) joined(tail []byte) rawRecord {
	key := append(append(append([]byte(nil), h.rec.key...), ' '), tail...)
	r := h.rec
	r.msg = bytes.TrimLeft(key[len(key)-len(h.rec.msg)-1-len(tail):], " ")
	r.key = key
	return r
}

// completeDangling joins a connection line broken after "via" with the
// start of the next line, if that start is a transport.
func (a *Analyzer) completeDangling(frag []byte) bool {
	d := a.dangling
	f := bytes.TrimSpace(frag)
	if a.cur.src != d.at.src || a.cur.line != d.at.line+1 || !looksLikeTransport(f) {
		a.flushDangling()
		return false
	}
	a.dangling = nil
	r := d.joined(f)
	a.record(&r)
	return true
}

// flushDangling records a broken connection line as it is: it still names
// its ranks.
func (a *Analyzer) flushDangling() {
	d := a.dangling
	a.dangling = nil
	at := a.cur
	a.cur = d.at
	a.record(&d.rec)
	a.cur = at
}

// record analyses one complete record.
func (a *Analyzer) record(r *rawRecord) {
	kind := KindWarn
	if r.level != levelWarn {
		kind = classify(r.msg, &a.ev)
	}
	th := a.thread(r)
	a.noteEnvelope(r, th)
	if kind == KindOther {
		return
	}
	// Identical connection lines for two communicators of one thread are
	// not duplicates: salt their key with the thread's communicator.
	var salt uint64
	if kind == KindConnection && th != nil && th.comm != nil {
		salt = th.comm.ptr
	}
	if a.seen.dupHash(keyHash(r), salt) {
		a.stats.Duplicates++
		return
	}
	a.apply(kind, r, &a.ev, th, a.procOf(th))
}

// recordItem is record for a record the parser has classified, hashed and,
// for a kind with fields, read into b's fields or comms.
func (a *Analyzer) recordItem(it *item, b *batch) {
	r := &it.rec
	var th *thread
	if r.prefixed {
		// thread(r), written out: one call less for every record with an
		// envelope (−0.24% of all instructions on the real shape). The
		// parser put the prefix's hash64 in it.phash.
		h := it.phash
		if h == 0 {
			h = hash64(r.prefix)
		}
		r.phash = h
		s := a.threads.slot(h)
		if s.i != 0 {
			if t := &a.slab[(s.i-1)&(maxThreads-1)]; string(t.key) == string(r.prefix) {
				th = t
			}
		}
		if th == nil {
			th = a.addThread(r.prefix, r.host, r.pid, r.glued, h, s)
		}
	}
	a.noteEnvelope(r, th)
	kind := it.cls
	if kind == KindOther {
		return
	}
	var salt uint64
	if kind == KindConnection && th != nil && th.comm != nil {
		salt = th.comm.ptr
	}
	if a.seen.dupHash(it.hash, salt) {
		a.stats.Duplicates++
		return
	}
	if kind == KindConnection {
		// The connection the parser read, in place: the common line of an
		// init log skips apply's switch and a copy of the connection.
		a.applyConn(a.procOf(th), th, &it.conn, a.cur, r.msg)
		return
	}
	if it.ev > 0 {
		if kind == KindComm {
			a.ev.comm = b.comms[it.ev-1]
		} else {
			b.fields[it.ev-1].unpack(kind, &a.ev)
		}
	}
	a.apply(kind, r, &a.ev, th, a.procOf(th))
}

// mergeConn is recordItem for a connItem: a connection record with an
// envelope.
func (a *Analyzer) mergeConn(src int32, base int64, c *connItem) {
	a.cur = loc{src: src, line: base + c.line}
	if a.dangling != nil {
		a.flushDangling() // only a fragment or plain line completes it
	}
	tok := &a.tokens[c.token&(1<<tokenBits-1)]
	th := tok.th
	if c.token == 0 || tok.token != c.token || th == nil {
		var s *threadSlot
		if th, s = a.lookThread(c.prefix(), c.phash); th == nil {
			th = a.addThread(c.prefix(), c.key[c.hostLo:c.hostHi], c.key[c.pidLo:c.pidHi], c.glued, c.phash, s)
		}
		if c.token != 0 {
			tok.token, tok.th = c.token, th
		}
	}
	if th.gluedOnly && !c.glued {
		th.gluedOnly, th.proc.gluedOnly = false, false
	}
	var salt uint64
	if th.comm != nil {
		salt = th.comm.ptr
	}
	if a.seen.dupHash(c.hash, salt) {
		a.stats.Duplicates++
		return
	}
	a.applyConn(th.proc, th, &c.conn, a.cur, c.msg())
}

// procOf is the process of a record's thread; records without an
// envelope belong to the pseudo-process.
func (a *Analyzer) procOf(th *thread) *process {
	if th != nil {
		return th.proc
	}
	return a.pseudoProc()
}

// noteEnvelope records what a record's envelope says beyond its thread: a
// host seen on its own (not glued to torn text), NCCL 2.2's format.
func (a *Analyzer) noteEnvelope(r *rawRecord, th *thread) {
	if th != nil && th.gluedOnly && !r.glued {
		th.gluedOnly, th.proc.gluedOnly = false, false
	}
	if r.legacy && a.format == "" {
		a.format = "2.2"
	}
}

// thread returns the cache entry for the record's envelope, creating the
// process on first sight. Records without an envelope have none.
func (a *Analyzer) thread(r *rawRecord) *thread {
	if !r.prefixed {
		return nil
	}
	h := r.phash
	if h == 0 {
		h = hash64(r.prefix)
	}
	// lookThread, written out: the inliner's budget does not take it,
	// and this is the call of every record with an envelope.
	s := a.threads.slot(h)
	if s.i != 0 {
		if th := &a.slab[(s.i-1)&(maxThreads-1)]; string(th.key) == string(r.prefix) {
			return th
		}
	}
	return a.addThread(r.prefix, r.host, r.pid, r.glued, h, s)
}

// lookThread is the thread of an envelope prefix whose hash64 is h, or
// nil and the slot that addThread fills for it: one probe of the table
// serves the look-up and the insert of a new envelope (the real shape
// brings one every three records). The table is made with the analyzer,
// so that no look-up checks for it.
func (a *Analyzer) lookThread(prefix []byte, h uint64) (*thread, *threadSlot) {
	s := a.threads.slot(h)
	if s.i != 0 {
		// The mask spares a bounds check: s.i <= maxThreads.
		if th := &a.slab[(s.i-1)&(maxThreads-1)]; string(th.key) == string(prefix) {
			return th, nil
		}
	}
	return nil, s
}

// addThread makes the thread of an envelope prefix, whose hash64 is h,
// in s, the slot lookThread answered for h; host and pid are the
// prefix's, glued the record's (rawRecord). A connItem's envelope comes
// here without a rawRecord built for it.
//
// Invariant: s is still h's slot when it is written: nothing between the
// look-up and here writes the table but forgetThreads, which empties it,
// and then h's slot is its first (start). TestThreadTable and
// TestThreadCacheReset hold the table's contents.
func (a *Analyzer) addThread(prefix, host, pid []byte, glued bool, h uint64, s *threadSlot) *thread {
	// A cache, not the truth: forgetting threads (all of them past
	// maxThreads, or the one a 64-bit hash collision replaces) only loses
	// which communicator a thread announced last.
	// The slab is the bound, not nthreads: an envelope whose hash64
	// equals another's replaces it in the table without a new slot, but
	// takes a thread of the slab all the same, and hash64 is unseeded: a
	// log alternating two such envelopes ran the slab out (an index out of
	// range) while the table held one thread. nthreads <= slabUsed.
	if a.slabUsed >= maxThreads || len(a.keys)+len(prefix) > cap(a.keys) {
		a.forgetThreads()
		s = &a.threads.slots[a.threads.start(h)]
	}
	// process's first test, without the call: past maxProcesses (the real
	// shape's 131,000 of 137,000 new envelopes per 40 MB), a pid without
	// its bit in pidKnown is a new process and goes to the overflow.
	// Invariant: once len(procs) reaches the cap, pidKnown has a bit for
	// each of them (process adds it with the process); before the
	// overflow exists, process makes it. The part of
	// −1.4% of all instructions that this takes: −0.3% (docs/nccl.md).
	// TestProcessCapKnownThread holds it.
	p := a.overflow
	if len(a.procs) < maxProcesses || p == nil || a.pidKnown.mayHave(pidFilterBit(pid)) {
		p = a.process(host, pid, glued)
	}
	th := a.newThread()
	*th = thread{proc: p, key: a.keep(prefix), gluedOnly: p.gluedOnly}
	if s.i == 0 {
		a.nthreads++
	}
	*s = threadSlot{h: h, i: uint32(a.slabUsed)} // th is a.slab[a.slabUsed-1]
	a.stats.Threads++
	return th
}

// threadOf is the thread of an envelope prefix whose hash64 is h, or nil.
func (a *Analyzer) threadOf(prefix []byte, h uint64) *thread {
	th, _ := a.lookThread(prefix, h)
	return th
}

// threadTable is an open-addressing table (linear probing) of threads by
// hash64 of their envelope prefix: it replaced a map[uint64]*thread whose
// look-ups and inserts were a third of the merger's cost of a new envelope
// on the real shape (docs/nccl.md). A slot holds the hash and the thread's
// place in the slab + 1; 0 marks an empty slot.
//
// Invariants: it holds at most maxThreads distinct hashes (thread forgets
// them all before one more), so at least half its slots are empty and a
// probe ends; a hash is in at most one slot, and a second envelope with
// the same 64-bit hash replaces the first, as the map did (threadOf
// compares the key bytes, so the replaced one is only forgotten); it is
// emptied with the slab (forgetThreads), so a slot never names a thread
// of the slab that was handed out again. TestThreadCacheReset and
// TestThreadTable hold them.
//
// The first slot a hash tries is keyed by a random seed drawn per table:
// hash64 is deterministic, so without it a hostile log could pick
// envelopes whose hashes share their leading bits and turn every look-up
// into a walk over thousands of slots (the Go map it replaced is seeded
// too). What the table holds does not depend on where it sits, so the
// seed changes no output (TestThreadTableSeedChangesNothing).
type threadTable struct {
	seed  uint64
	slots [threadTableSlots]threadSlot
}

// newThreadTable returns an empty table with a fresh seed.
func newThreadTable() *threadTable {
	return &threadTable{seed: rand.Uint64() | 1}
}

type threadSlot struct {
	h uint64
	i uint32 // the thread's index in the slab + 1; 0: empty
}

const (
	threadTableBits  = 14
	threadTableSlots = 1 << threadTableBits
)

// The table needs an empty slot at maxThreads threads: twice as many slots.
var _ [threadTableSlots - 2*maxThreads]struct{} = [0]struct{}{}

// start is the first slot h tries: a keyed multiply, so that hashes that
// share their leading bits do not share a start unless the seed says so.
func (t *threadTable) start(h uint64) uint64 {
	return ((h ^ t.seed) * 0x9e3779b97f4a7c15) >> (64 - threadTableBits)
}

// slot returns the slot that holds h, or the empty slot where h would go.
func (t *threadTable) slot(h uint64) *threadSlot {
	for j := t.start(h); ; j = (j + 1) & (threadTableSlots - 1) {
		if s := &t.slots[j]; s.i == 0 || s.h == h {
			return s
		}
	}
}

// Threads and their envelopes live in a slab and an arena that are reused
// whenever the threads are forgotten, so that a new envelope costs no
// allocation: a log whose every replica is a new process (the bench's real
// shape) made them three quarters of the analyzer's garbage, and the GC
// that garbage paid for under HeapSoftLimit.
//
// Invariant: a thread, and its key, is reachable only through a.threads
// (by its slab index) and a.tokens, and while one record is merged; forgetThreads empties both
// before the slab and the arena are handed out again, so no one holds a
// thread or a key that is reused. TestThreadCacheReset fails when the
// token cache survives the reset.
const threadKeyArena = maxThreads * 64

// newThread hands out the next thread of the slab.
func (a *Analyzer) newThread() *thread {
	if a.slab == nil {
		a.slab = new([maxThreads]thread)
	}
	th := &a.slab[a.slabUsed]
	a.slabUsed++
	return th
}

// keep copies an envelope into the arena; one longer than any real one
// gets its own copy.
func (a *Analyzer) keep(prefix []byte) []byte {
	if a.keys == nil {
		a.keys = make([]byte, 0, threadKeyArena)
	}
	if len(prefix) > threadKeyArena/maxThreads*4 {
		return bytes.Clone(prefix)
	}
	n := len(a.keys)
	a.keys = append(a.keys, prefix...)
	return a.keys[n:len(a.keys):len(a.keys)]
}

// forgetThreads empties the thread map and the token cache in front of
// it, and lets newThread and keep reuse the slab and the arena.
func (a *Analyzer) forgetThreads() {
	clear(a.threads.slots[:])
	a.nthreads = 0
	clear(a.tokens[:])
	a.slabUsed = 0
	a.keys = a.keys[:0]
}

func (a *Analyzer) process(host, pid []byte, glued bool) *process {
	// Called once per new envelope. The key is built aside and allocated
	// only for a new process under the cap: past it, every process is new
	// and goes to the overflow.
	if len(a.procs) >= maxProcesses && !a.pidKnown.has(pid) {
		// Past the cap procs no longer changes, and pidKnown has the pid
		// of every process in it: this one is certainly new.
		return a.overflowProc()
	}
	a.scratch = append(append(append(a.scratch[:0], host...), ':'), pid...)
	if p := a.procs[string(a.scratch)]; p != nil {
		return p
	}
	if len(a.procs) >= maxProcesses {
		return a.overflowProc()
	}
	n, _ := atoi(pid)
	key := string(a.scratch)
	p := &process{host: key[:len(host)], pid: n, first: a.cur, gluedOnly: glued}
	a.procs[key] = p
	a.pidKnown.add(pid)
	a.order = append(a.order, p)
	return p
}

// overflowProc is where processes past maxProcesses go.
func (a *Analyzer) overflowProc() *process {
	if a.overflow == nil {
		a.overflow = &process{host: "(more processes)", pid: -1, pseudo: true, first: a.cur}
		a.order = append(a.order, a.overflow)
	}
	// Stats.ProcessCap tells the verdict; the records still count.
	return a.overflow
}

// pidFilter has a bit per hash of a pid's text: a bit that is clear says
// that no process in procs has that pid. On the real shape every replica
// is a new process, so past maxProcesses almost every new envelope is a
// new process, and this spares it building the "host:pid" key and the
// look-up in procs (docs/nccl.md).
//
// Invariant: every process in procs has its pid's bit set (process adds
// it with the process, and neither is ever removed), so a known process's
// new thread still finds its process past the cap; a set bit only sends
// a new process to the look-up. 8 KiB, whatever the log.
// TestProcessCapKnownThread holds it.
type pidFilter struct {
	bits *[1 << (pidFilterBits - 6)]uint64
}

const pidFilterBits = 16

func pidFilterBit(pid []byte) uint64 { return hash64(pid) >> (64 - pidFilterBits) }

func (f *pidFilter) add(pid []byte) {
	if f.bits == nil {
		f.bits = new([1 << (pidFilterBits - 6)]uint64)
	}
	b := pidFilterBit(pid)
	f.bits[b>>6] |= 1 << (b & 63)
}

func (f *pidFilter) has(pid []byte) bool {
	if f.bits == nil {
		return false
	}
	return f.mayHave(pidFilterBit(pid))
}

// mayHave is has for a pid whose bit is b, in a filter with bits.
func (f *pidFilter) mayHave(b uint64) bool {
	return f.bits[b>>6&(1<<(pidFilterBits-6)-1)]&(1<<(b&63)) != 0
}

func (a *Analyzer) pseudoProc() *process {
	if a.pseudo == nil {
		a.pseudo = &process{host: "", pid: -1, pseudo: true, first: a.cur}
		a.order = append(a.order, a.pseudo)
	}
	return a.pseudo
}

// transportID interns a transport name for per-rank counting. A log
// uses a handful of transports: the last few are compared as printed
// before the name is built and looked up, the one that answered last
// first (88% of the real shape's connection lines; with the thread's
// cached rank counters, statsFor, and the rank's last link,
// rankStats.add, it took a quarter off applyConn: docs/nccl.md).
// Invariant: an entry is added only when none matches, so no two entries
// match one transport and the first check gives the loop's answer;
// TestStatsForCache and the fixture outputs hold the counts.
func (a *Analyzer) transportID(tr *transport) uint16 {
	src := tr.name
	if tr.class == trNET || tr.class == trCollNet {
		src = tr.net
	}
	if e := &a.trRecent[a.trHit&(len(a.trRecent)-1)]; e.ok && e.class == tr.class && e.gdr == tr.gdr && e.src == string(src) {
		return e.id
	}
	for i := range a.trRecent {
		e := &a.trRecent[i]
		if e.ok && e.class == tr.class && e.gdr == tr.gdr && e.src == string(src) {
			a.trHit = i
			return e.id
		}
	}
	id := a.transportIDSlow(tr)
	a.trHit = a.trNext % len(a.trRecent)
	a.trRecent[a.trHit] = trRecent{ok: true, class: tr.class, gdr: tr.gdr, src: string(src), id: id}
	a.trNext++
	return id
}

type trRecent struct {
	ok    bool
	class trClass
	gdr   bool
	src   string
	id    uint16
}

func (a *Analyzer) transportIDSlow(tr *transport) uint16 {
	s := a.scratch[:0]
	if tr.class == trNET || tr.class == trCollNet {
		if tr.class == trNET {
			s = append(s, "NET/"...)
		} else {
			s = append(s, "COLLNET/"...)
		}
		s = append(s, tr.net...)
		if tr.gdr {
			s = append(s, "/GDRDMA"...)
		}
	} else if len(tr.name) > 0 {
		s = append(s, tr.name...)
	} else {
		s = append(s, "(unknown)"...)
	}
	a.scratch = s
	if id, ok := a.trIDs[string(s)]; ok {
		return id
	}
	if len(a.trNames) >= maxTransportNames {
		return maxTransportNames // "other"
	}
	id := uint16(len(a.trNames))
	a.trNames = append(a.trNames, trName{name: string(s), class: tr.class})
	a.trIDs[string(s)] = id
	return id
}

func (a *Analyzer) trNameOf(id uint16) trName {
	if int(id) < len(a.trNames) {
		return a.trNames[id]
	}
	return trName{name: "other"}
}

// where names the process of a record for findings.
func where(p *process) string {
	if p == nil || p.pseudo {
		return ""
	}
	return p.host + ":" + strconv.FormatInt(p.pid, 10)
}
