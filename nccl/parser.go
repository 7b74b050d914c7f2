package nccl

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
)

// The analyzer works in two stages so that reading can use more than one
// core. A lineParser turns lines into items: it finds the records, keeps
// those the verdict uses and drops the rest (most records of a large log
// are collective traces or tuning tables). It holds no state that depends
// on other lines, so several parsers can work on consecutive blocks of a
// file at once. The analyzer then merges the items in input order; all
// state that spans lines (communicators, de-duplication, torn records)
// lives there.

type itemKind uint8

const (
	itRecord   itemKind = iota // a record the verdict uses, or the first from its envelope
	itTorn                     // a record whose message another record cut off
	itDangling                 // a connection line that ends after "via"
	itFragment                 // text before a line's first record that reads like a transport
	itPlain                    // a line without records that may matter (a torn record's tail, a foreign error)
)

type item struct {
	kind itemKind
	// conns is how many connItems the parser emitted before this item:
	// the merger applies those first, which keeps the input's order.
	conns int32
	line  int64 // line number, relative to the batch for parallel parsing
	// For itRecord, what the parser already worked out so that the merger,
	// which runs on one core, does not do it again: the record's kind, the
	// connection it describes, and the hashes of its key and envelope.
	cls Kind
	// ev is 1 + the index of what classify read from the record in the
	// batch's fields (or comms, for KindComm); 0: none (see needsFields).
	ev    int32
	hash  uint64
	phash uint64
	conn  connInfo
	rec   rawRecord
	text  []byte
}

// connItem is the common line of an init log, a lone connection record
// with a host:pid:tid [dev] envelope, in half an item's size: the parser
// writes one per line and the merger, on another core, reads it back, so
// its size is memory traffic (see docs/nccl.md for what a larger one
// cost). TestFastPathMatches and FuzzFastPath hold it to the item the
// general path makes of the same line. Its record is
//
//	key = prefix " NCCL INFO " message
//
// at offset start of its line; host and pid are offsets into key.
type connItem struct {
	line   int64
	hash   uint64 // keyHash
	phash  uint64 // hash64(prefix)
	token  uint64 // the envelope memo entry's token; 0: none
	key    []byte
	start  int32
	plen   uint8 // len(prefix)
	hostLo uint8
	hostHi uint8
	pidLo  uint8
	pidHi  uint8
	glued  bool
	conn   connInfo
}

// infoMark is what lies between a connItem's prefix and its message.
const infoMark = " NCCL INFO "

func (c *connItem) prefix() []byte { return c.key[:c.plen] }
func (c *connItem) msg() []byte    { return c.key[int(c.plen)+len(infoMark):] }

// set fills c from r, a connection record fastConn read from line n, and
// reports whether r fits a connItem: an envelope, the message right after
// "NCCL INFO ", offsets below 256.
func (c *connItem) set(r *rawRecord, n int64) bool {
	if !r.prefixed || r.legacy || len(r.prefix) > 255 || r.start > 1<<31-1 ||
		len(r.key) != len(r.prefix)+len(infoMark)+len(r.msg) {
		return false
	}
	// host and pid are subslices of the prefix: their offsets in it.
	hostLo, pidLo := cap(r.key)-cap(r.host), cap(r.key)-cap(r.pid)
	if hostLo < 0 || pidLo < 0 || hostLo+len(r.host) > len(r.prefix) || pidLo+len(r.pid) > len(r.prefix) {
		return false
	}
	c.line, c.key, c.start, c.plen, c.glued = n, r.key, int32(r.start), uint8(len(r.prefix)), r.glued
	c.hostLo, c.hostHi = uint8(hostLo), uint8(hostLo+len(r.host))
	c.pidLo, c.pidHi = uint8(pidLo), uint8(pidLo+len(r.pid))
	if r.phash == 0 {
		r.phash = hash64(r.prefix)
	}
	c.phash, c.token = r.phash, 0
	c.hash = keyHash(r)
	return true
}

// setEntry is set for a line whose envelope is the memo entry e, straight
// from the entry's offsets: the common line builds no record. end is where
// the message ends in b. It reports false where set would.
func (c *connItem) setEntry(e *envMemoEntry, b []byte, end int, n int64) bool {
	// prefix, host and pid are b[lo:hi] for an entry's [lo, hi, 1].
	if e.flags&envPrefixed == 0 || e.prefix[2] == 0 || e.prefix[0] != e.start || e.tag[2] != 0 ||
		e.host[2] == 0 || e.pid[2] == 0 || e.host[0] < e.start || e.pid[0] < e.start ||
		int(e.prefix[1])+len(infoMark) > end {
		return false
	}
	key := b[e.start:end]
	plen := e.prefix[1] - e.prefix[0]
	if string(key[plen:int(plen)+len(infoMark)]) != infoMark {
		return false
	}
	c.line, c.key, c.start, c.plen, c.glued = n, key, int32(e.start), plen, e.flags&envGlued != 0
	c.hostLo, c.hostHi = e.host[0]-e.start, e.host[1]-e.start
	c.pidLo, c.pidHi = e.pid[0]-e.start, e.pid[1]-e.start
	c.phash, c.token = e.phash, e.token
	c.hash = keyHashParts(e.phash, key[plen:])
	return true
}

// record is the connItem's record as the general path reads it.
func (c *connItem) record() rawRecord {
	marker := int(c.start) + int(c.plen) + 1
	return rawRecord{
		marker: marker, start: int(c.start), msgStart: marker + len("NCCL INFO "), level: levelInfo,
		parsed: true, prefixed: true, glued: c.glued, phash: c.phash,
		host: c.key[c.hostLo:c.hostHi], pid: c.key[c.pidLo:c.pidHi], prefix: c.prefix(), msg: c.msg(), key: c.key,
	}
}

// batch is what a parser made of some lines.
type batch struct {
	items []item
	conns []connItem
	// chash is conns' key hashes again, packed: the merger loads their
	// de-duplication buckets ahead by reading 8 bytes a record instead of
	// a cache line of each connItem.
	chash []uint64
	// fields and comms hold what classify read from the records of items
	// with an ev: the parser classifies each record once, in full, and the
	// merger, which runs on one core, applies it without reading the
	// message again. Their slices point into the block, like the items'.
	fields    []fields
	comms     []commInfo
	lines     int64
	records   int64
	truncated int64
	foreign   int64
}

// reset empties the batch for reuse. Items are not cleared: they point
// into the block buffers, which are reused themselves, and clearing a few
// thousand items per block cost more than the rest of the reset.
func (b *batch) reset() {
	*b = batch{items: b.items[:0], conns: b.conns[:0], chash: b.chash[:0], fields: b.fields[:0], comms: b.comms[:0]}
}

// A parser remembers seenBuckets*seenWays envelopes it has passed on, as
// 32-bit fingerprints so that the table stays in the CPU's nearest cache
// while blocks of text stream past it. The cache is lossy: an evicted
// envelope is passed on again, which costs the merger one map lookup and
// changes nothing; a fingerprint collision could hide an envelope only
// until one of the two is evicted.
const (
	seenWays    = 4
	seenBuckets = 1 << 11
)

type lineParser struct {
	maxLine int
	sc      lineScanner
	ev      event
	seed    maphash.Seed
	seen    []uint32
	out     *batch
	// mpred is where the marker was on the last line that began with the
	// same 8 bytes (predictMarker; q 0: unknown), and the envelope memo's
	// entry for the text before it, which may since hold another text.
	mpred [1 << mpredBits]struct {
		q uint8
		e *envMemoEntry
	}
	// pmemo remembers plain's answers for recent texts (keepPlain);
	// allocated at the first line without records.
	pmemo *[plainMemoSlots]plainMemoEntry
	// cmemo remembers recent connection messages (connMemo); allocated
	// at the first connection line.
	cmemo *connMemo
	// kmemo remembers what classify made of recent messages (kindMemo).
	kmemo *kindMemo
	// cmRest is how many connection messages to parse without cmemo
	// before trying it again (connMemo.parse sets it).
	cmRest int32
	// slowOnly turns fastConn off (tests compare the two paths).
	slowOnly bool
}

const mpredBits = 12

func newLineParser(maxLine int) *lineParser {
	return &lineParser{maxLine: maxLine, seed: maphash.MakeSeed(), seen: make([]uint32, seenWays*seenBuckets),
		ev: event{trMemo: new(trMemo)}, sc: lineScanner{envMemo: new(envMemo)}}
}

// block parses every line of buf into out. buf holds whole lines; the last
// one may lack its newline.
func (p *lineParser) block(buf []byte, out *batch) {
	p.out = out
	// One look for a carriage return over the block spares one per record.
	p.sc.noCR = bytes.IndexByte(buf, '\r') < 0
	defer func() { p.sc.noCR = false }() // lines fed one by one look for themselves
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		var line []byte
		if i < 0 {
			line, buf = buf, nil
		} else {
			line, buf = buf[:i], buf[i+1:]
		}
		out.lines++
		p.line(line, out.lines)
	}
}

// line parses one line; n is its number within the batch.
func (p *lineParser) line(b []byte, n int64) {
	if len(b) > p.maxLine {
		b = b[:p.maxLine]
		p.out.truncated++
	}
	sc := &p.sc
	if p.slowOnly {
		sc.reset(b)
	} else {
		done, i := p.fastConn(b, n)
		if done {
			return
		}
		sc.resetAt(b, i) // i: the first "NCCL " in b, or -1; no need to look again
	}
	if !sc.hasNext {
		p.plain(b, n)
		return
	}
	if start := sc.next.start; start > 0 && couldStartTransport(b[0]) {
		if f := bytes.TrimSpace(b[:start]); looksLikeTransport(f) {
			p.emit(item{kind: itFragment, line: n, text: f})
		}
	}
	var r rawRecord
	for sc.scan(&r) {
		p.out.records++
		if r.cut {
			sc.finish(&r)
			if len(r.msg) == 0 && r.level != levelVersion && r.prefixed {
				p.emit(item{kind: itTorn, line: n, rec: r})
				continue
			}
		} else if r.level == levelInfo && len(r.msg) > 0 && (r.msg[0] == 'C' || r.msg[0] == 'R') {
			sc.finish(&r)
			if endsWithVia(r.msg) {
				p.emit(item{kind: itDangling, line: n, rec: r})
				continue
			}
		}
		cls := KindWarn
		if r.level != levelWarn {
			cls = p.classify(r.msg)
		}
		if cls != KindOther {
			// The kind and the event are those of the finished (trimmed)
			// message, which the merger applies: "Using network " is a net
			// selection before the trim and nothing after it.
			raw := len(r.msg)
			sc.finish(&r)
			if len(r.msg) != raw && r.level != levelWarn {
				if cls = p.classify(r.msg); cls == KindOther {
					p.passEnvelope(b, &r, n)
					continue
				}
			}
			it := p.next()
			it.setRecord(int32(len(p.out.conns)), n, cls, &r)
			it.hashes()
			switch {
			case cls == KindConnection:
				it.conn = p.ev.conn
			case cls == KindComm:
				p.out.comms = append(p.out.comms, p.ev.comm)
				it.ev = int32(len(p.out.comms))
			case needsFields(cls):
				p.out.fields = append(p.out.fields, packFields(cls, &p.ev))
				it.ev = int32(len(p.out.fields))
			}
			continue
		}
		p.passEnvelope(b, &r, n)
	}
}

// passEnvelope handles a record the verdict does not use: it matters only
// for its envelope, which the merger needs once to count the process and
// host.
func (p *lineParser) passEnvelope(b []byte, r *rawRecord, n int64) {
	if p.firstSight(b, r) {
		p.sc.finish(r)
		if r.prefixed {
			// r.phash is 0 or hash64(r.prefix) (the envelope memo's, see
			// rawRecord): as in item.hashes, it spares hashing again.
			h := r.phash
			if h == 0 {
				h = hash64(r.prefix)
			}
			it := p.next()
			it.setRecord(int32(len(p.out.conns)), n, KindOther, r)
			it.phash = h
		}
	}
}

// setRecord makes the item, which may hold an earlier batch's (batch.reset
// keeps them), an itRecord item of r, as the literal item{kind: itRecord,
// conns: conns, line: n, cls: cls, rec: *r} would, field by field: the
// literal is built aside (a few hundred bytes zeroed, then copied), which
// cost the real shape about 1% of its instructions (docs/nccl.md).
// Invariant: every field of item is set here; TestItemSetRecordSetsAll
// fails when item gains one that this does not set.
func (it *item) setRecord(conns int32, n int64, cls Kind, r *rawRecord) {
	it.kind, it.conns, it.line, it.cls, it.ev = itRecord, conns, n, cls, 0
	it.hash, it.phash, it.conn, it.text = 0, 0, connInfo{}, nil
	it.rec = *r
}

// hashes sets the item's envelope hash and key hash from its record.
func (it *item) hashes() {
	r := &it.rec
	if r.prefixed {
		if r.phash == 0 {
			r.phash = hash64(r.prefix)
		}
		it.phash = r.phash
	}
	it.hash = keyHash(r)
}

func (p *lineParser) emit(it item) {
	it.conns = int32(len(p.out.conns))
	*p.next() = it
}

// next appends an item to the batch and returns it, for the caller to fill
// in place.
func (p *lineParser) next() *item { return extend(&p.out.items) }

// nextConn appends a connItem to the batch and returns it.
func (p *lineParser) nextConn() *connItem { return extend(&p.out.conns) }

// extend appends an element to *s, reusing the capacity a reset batch
// kept, and returns it (an item is a few hundred bytes: building it aside
// and copying it in shows).
func extend[T any](s *[]T) *T {
	if len(*s) == cap(*s) {
		var zero T
		*s = append(*s, zero)
	} else {
		*s = (*s)[:len(*s)+1]
	}
	return &(*s)[len(*s)-1]
}

// plain passes on a line without records if it could complete a torn
// record or is a foreign line worth reporting.
func (p *lineParser) plain(b []byte, n int64) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return
	}
	p.out.foreign++
	if p.keepPlain(t) {
		p.emit(item{kind: itPlain, line: n, text: t})
	}
}

// keepPlain reports whether plain passes a line's trimmed text t on.
// The answer depends on t alone (classify, looksLikeTransport and
// matchForeign read nothing else), so the parser remembers it for recent
// texts of up to plainMemoText bytes, by memoHash, one text a slot, the
// text compared whole on a hit: a job's launcher and framework repeat
// their lines on every rank, and the look costs about 1,200
// instructions a line (six searches of the line in matchForeign), a hit
// about a tenth of that. TestPlainMemo holds the memo to the look.
func (p *lineParser) keepPlain(t []byte) bool {
	if len(t) > plainMemoText {
		return plainLook(t, &p.ev)
	}
	if p.pmemo == nil {
		p.pmemo = new([plainMemoSlots]plainMemoEntry)
	}
	e := &p.pmemo[memoHash(t)%plainMemoSlots]
	if int(e.n) == len(t) && string(e.text[:len(t)]) == string(t) {
		return e.keep
	}
	keep := plainLook(t, &p.ev)
	e.n, e.keep = uint8(len(t)), keep
	copy(e.text[:], t)
	return keep
}

// plainLook is keepPlain's answer without the memo.
func plainLook(t []byte, ev *event) bool {
	return classify(t, ev) != KindOther || looksLikeTransport(t) || matchForeign(t) >= 0
}

// plainMemoEntry is one text keepPlain remembers, in 128 bytes; n 0:
// none (plain sees no empty text).
type plainMemoEntry struct {
	n    uint8
	keep bool
	text [plainMemoText]byte
}

const (
	plainMemoText  = 126
	plainMemoSlots = 1 << 10
)

// firstSight reports whether the parser has not passed on a record with
// this envelope recently. The merger needs one record per envelope to
// count hosts and processes, not all of them. To avoid reading the
// envelope of every record, the key is the whole text before the marker
// when the envelope has not been read: launcher prefixes that change on
// every line (timestamps) then only cost extra records for the merger.
// Invariant: an envelope passed on again changes nothing in the merger
// (finding a thread is idempotent), so the table may forget at will;
// TestParallelMatchesSequential holds parsers with separate tables (one
// per block) to the verdict of one.
func (p *lineParser) firstSight(line []byte, r *rawRecord) bool {
	key := line[:r.marker]
	if r.parsed {
		key = r.prefix
	}
	h64 := maphash.Bytes(p.seed, key) // a cache: no need for hash64's determinism
	h := uint32(h64) | 1              // 0 marks an empty slot
	b := (*[seenWays]uint32)(p.seen[(h64>>32)%seenBuckets*seenWays:])
	for _, x := range b {
		if x == h {
			return false
		}
	}
	// By assignment, as in dedupe.dupHash: copy() called memmove.
	b[3], b[2], b[1], b[0] = b[2], b[1], b[0], h
	return true
}

// The shift in firstSight is written out for 4 ways.
var _ [seenWays - 4]struct{} = [0]struct{}{}

// couldStartTransport reports whether a text whose first byte is c could
// pass looksLikeTransport once bytes.TrimSpace has removed what leads it:
// the bytes looksLikeTransport accepts first, ASCII blanks, and the first
// byte of a multi-byte Unicode space. Any other c is the trimmed text's
// first byte, which looksLikeTransport refuses: the look is spared for
// most lines (an envelope's host name starts the text).
// TestCouldStartTransport holds it to looksLikeTransport. A table, not a
// switch: it is asked for nearly every line, and the switch's thirteen
// compares cost the real shape about 0.7% of its instructions (docs/nccl.md).
func couldStartTransport(c byte) bool { return transportStart[c] }

var transportStart = func() (t [256]bool) {
	for c := 0x80; c < 256; c++ {
		t[c] = true
	}
	for _, c := range []byte(" \t\n\v\f\rNPSCd*`") {
		t[c] = true
	}
	return t
}()

func looksLikeTransport(f []byte) bool {
	if len(f) < 4 {
		return false
	}
	switch f[0] { // NET/, P2P/, SHM/, COLLNET/, direct shared memory
	case 'N', 'P', 'S', 'C', 'd', '*', '`':
	default:
		return false
	}
	// parseTransport's class is not trOther only where the text, past
	// the blanks and markdown trimNoise drops, starts with one of its
	// five prefixes; cutting noise off the end cannot make one. Checking
	// the first four bytes spares the parse (a search for "NCCL ", the
	// noise scan) for the envelopes that start with one of the letters
	// above, a host "dgx-01" or "SuperPod-3" (TestLooksLikeTransportPrefix
	// holds it to the parse alone).
	g := f
	for len(g) > 0 && (g[0] == ' ' || g[0] == '\t' || g[0] == '*' || g[0] == '`') {
		g = g[1:]
	}
	if len(g) < 4 {
		return false
	}
	switch string(g[:4]) {
	case "NET/", "COLL", "P2P/", "SHM/", "dire":
	default:
		return false
	}
	var t transport
	parseTransport(f, &t)
	return t.class != trOther
}

func endsWithVia(m []byte) bool {
	return len(m) >= 4 && string(m[len(m)-4:]) == " via" &&
		(hasPrefix(m, "Channel ") || hasPrefix(m, "Ring ") || hasPrefix(m, "CollNet "))
}

// fastConn handles the line real init logs are made of, a lone connection
// record ("host:pid:tid [d] NCCL INFO Channel 05/0 : 3[3] -> 11[3] [send]
// via NET/IB/3/GDRDMA", or NCCL 2.4's "… NCCL INFO Ring 00 : 0[0] -> 1[1]
// via P2P/IPC", which classify parses with the same parseConnMemo), with a
// few scans and no copies: it finds the
// marker, takes the envelope from the memo, parses the connection into a
// connItem in place (an item when the line has no envelope, or one too
// long for a connItem). It reports false, having emitted nothing, for
// any line it is not sure the general path would read the same way (a
// line whose text before the record looks like a transport fragment, another "NCCL " in the
// message, a carriage return in the block, a message that ends after
// "via"); TestFastPathMatches holds the two paths to the same items.
//
// It also returns the index of the first "NCCL " in b (-1: none), so that
// the general path does not look for it again.
func (p *lineParser) fastConn(b []byte, n int64) (bool, int) {
	i, e := p.predictMarker(b)
	const info = len("NCCL INFO ")
	if i < 1 || len(b) < i+info+8 || string(b[i+5:i+info]) != "INFO " || isWordByte(b[i-1]) ||
		string(b[i+info:i+info+8]) != "Channel " && string(b[i+info:i+info+5]) != "Ring " || !p.sc.noCR {
		return false, i
	}
	// The general path passes on the text before the first record when it
	// looks like a transport (the tail of a torn connection line): so does
	// this one, by declining.
	if couldStartTransport(b[0]) && looksLikeTransport(bytes.TrimSpace(b[:i])) {
		return false, i
	}
	m := trimRightBlank(b[i+info:])
	if endsWithVia(m) {
		return false, i
	}
	c := p.nextConn()
	// The parse tells where another "NCCL " could be, which spares a
	// search over the message: the fixed words and the numbers it read
	// cannot hold one.
	// The memo's rest is looked at here, not in connMemo.parse: on init,
	// where it rests, the call through it cost 2% of all instructions.
	// Either way the same parse answers (TestConnMemoMatches).
	var ok bool
	if p.cmRest > 0 {
		p.cmRest--
		ok = parseConnMemo(m, &c.conn, p.ev.trMemo)
	} else {
		if p.cmemo == nil {
			p.cmemo = new(connMemo)
		}
		ok = p.cmemo.parse(m, &c.conn, p.ev.trMemo, &p.cmRest)
	}
	if !ok || c.conn.marker {
		p.out.conns = p.out.conns[:len(p.out.conns)-1]
		return false, i
	}
	if e != nil && c.setEntry(e, b, i+info+len(m), n) {
		p.out.records++
		p.out.chash = append(p.out.chash, c.hash)
		return true, i
	}
	// Field by field: a composite literal is built aside and copied.
	var r rawRecord
	r.level, r.marker, r.start, r.msgStart, r.parsed = levelInfo, i, i, i+info, true
	switch {
	case e != nil:
		e.fill(b, &r)
	case p.sc.envMemo != nil:
		p.sc.envMemo.parse(b, i, false, true, &r) // i is b's first "NCCL " (predictMarker)
	default:
		parseEnvelope(b, i, false, &r)
	}
	r.msg = m
	r.key = b[r.start : i+info+len(m)]
	if !c.set(&r, n) {
		// No envelope, or one too long for a connItem's offsets.
		conn := c.conn
		p.out.conns = p.out.conns[:len(p.out.conns)-1]
		it := p.next()
		*it = item{kind: itRecord, conns: int32(len(p.out.conns)), line: n, cls: KindConnection, rec: r, conn: conn}
		it.hashes()
	} else {
		p.out.chash = append(p.out.chash, c.hash)
	}
	p.out.records++
	return true, i
}

// predictMarker finds the first "NCCL " in b, and the envelope memo's
// entry for the text before it when a prediction found it. The lines of one
// process start alike and put the marker at the same place, so the place
// the last line with the same first 8 bytes had it is tried first: when
// "NCCL " is there and the memo holds exactly b[:q] (an envelope read
// before, with no marker in it), q is the first marker in b too, for
// "NCCL " cannot overlap itself, and the search over the envelope is
// spared. Anything else searches as before and remembers the place. The
// slot is a hash of the 8 bytes, so another line's place may be tried:
// the checks above decide, not the slot (TestPredictMarkerDistrustsMemo,
// and TestFastPathMatches over the fixtures). It pays on connection-heavy
// logs, whose lines of one thread start alike; on the real shape it
// measured neutral (docs/nccl.md).
func (p *lineParser) predictMarker(b []byte) (int, *envMemoEntry) {
	if len(b) < 8 || p.sc.envMemo == nil {
		return indexMarker(b), nil
	}
	slot := &p.mpred[binary.LittleEndian.Uint64(b)*0x9e3779b97f4a7c15>>(64-mpredBits)]
	// Only for the lines fastConn takes: for any other the general path
	// reads the envelope itself, and a memo look here would be a second.
	const conn = len("NCCL INFO Channel ")
	// Two compares of at most 16 bytes, which the compiler does inline
	// (a longer constant is a call to memequal).
	if q := int(slot.q); q > 0 && q+conn <= len(b) && string(b[q:q+10]) == "NCCL INFO " && string(b[q+10:q+conn]) == "Channel " {
		// The entry the slot remembers first: it spares hashing the text
		// to find its set. The compare decides either way.
		e := slot.e
		if e == nil || !e.matches(b[:q], false) {
			e = p.sc.envMemo.set(b[:q]).find(b[:q], false)
			slot.e = e
		}
		if e != nil && e.flags&envNoMarker != 0 {
			return q, e
		}
	}
	i := indexMarker(b)
	if i > 0 && i <= envMemoText && slot.q != uint8(i) {
		slot.q, slot.e = uint8(i), nil
	}
	return i, nil
}

// indexMarker is bytes.Index(b, markNCCL): every "NCCL " starts with an 'N',
// so trying each 'N' in turn finds the first one. Before a line's first
// marker lies its envelope, where an 'N' is rare, and IndexByte's vector
// loop beats bytes.Index's on such short texts (docs/nccl.md). Over a
// message, which has many, it does not: findRecordFrom keeps bytes.Index.
// TestIndexMarker holds it to bytes.Index.
func indexMarker(b []byte) int {
	off := 0
	for {
		j := bytes.IndexByte(b[off:], 'N')
		if j < 0 {
			return -1
		}
		off += j
		if len(b)-off >= len(markNCCL) && string(b[off:off+len(markNCCL)]) == "NCCL " { // a constant: compared inline
			return off
		}
		off++
	}
}

// kindMemo remembers what classify made of recent messages of the general
// path, as connMemo does for fastConn's connection lines: the kind, and
// what line passes on of it (a communicator's commInfo, the fields of a
// kind that needsFields), with their slices kept as offsets into the
// text. A gathered log prints the same plugin, network, environment and
// communicator lines on every rank, and the real shape on every replica.
// Connection messages are not kept (fastConn takes nearly all of them).
// Invariant: for every kind kept, classify sets all that packFields
// (or, for KindComm, line) reads of the event, so that a hit which sets
// those parts makes what classify would have made; apply reads nothing
// else of the event.
// Like connMemo it rests, with a doubling backoff, where hits are rare.
// TestKindMemoMatches holds it to classify.
type kindMemo struct {
	slots                [kindMemoSlots]kindMemoEntry
	hits, looks, backoff int32
	rest                 int32
}

type kindMemoEntry struct {
	n    uint8 // text length; 0: empty slot
	cls  Kind
	has  uint8 // bit i: slice i is not nil
	offs [2][2]uint8
	f    fields   // needsFields(cls): s0 and s1 nil
	comm commInfo // KindComm: busID and api nil
	text [kindMemoText]byte
}

const (
	kindMemoSlots = 1 << 9
	kindMemoText  = 160
)

// classify is classify(m, &p.ev) through the kind memo: on a hit, the
// parts of p.ev that line reads for the kind (comm, or the fields through
// unpack) are those classify would have set.
func (p *lineParser) classify(m []byte) Kind {
	n := len(m)
	if n < 24 || n > kindMemoText {
		return classify(m, &p.ev)
	}
	km := p.kmemo
	if km == nil {
		km = new(kindMemo)
		p.kmemo = km
	}
	if km.rest > 0 {
		km.rest--
		return classify(m, &p.ev)
	}
	if km.looks++; km.looks == connMemoWindow {
		if km.hits < connMemoWindow/4 {
			km.backoff = min(max(2*km.backoff, connMemoRest), connMemoMaxRest)
			km.rest = km.backoff
		} else {
			km.backoff = 0
		}
		km.hits, km.looks = 0, 0
	}
	e := &km.slots[connHash(m)%kindMemoSlots]
	if int(e.n) == n && string(e.text[:n]) == string(m) {
		km.hits++
		s := func(i int) []byte {
			if e.has&(1<<i) == 0 {
				return nil
			}
			return m[e.offs[i][0]:e.offs[i][1]]
		}
		p.ev.kind = e.cls
		switch {
		case e.cls == KindComm:
			p.ev.comm = e.comm
			p.ev.comm.busID, p.ev.comm.api = s(0), s(1)
		case needsFields(e.cls):
			f := e.f
			f.s0, f.s1 = s(0), s(1)
			f.unpack(e.cls, &p.ev)
		}
		return e.cls
	}
	cls := classify(m, &p.ev)
	e.n = 0
	var s0, s1 []byte
	switch {
	case cls == KindConnection, cls == KindBootstrap:
		// KindBootstrap's packed net is whatever ev.net held before
		// (classify sets only its dev, all that apply reads of it).
		return cls
	case cls == KindComm:
		s0, s1 = p.ev.comm.busID, p.ev.comm.api
	case needsFields(cls):
		f := packFields(cls, &p.ev)
		s0, s1 = f.s0, f.s1
	}
	var has uint8
	for i, sl := range [2][]byte{s0, s1} {
		if sl == nil {
			continue
		}
		lo, hi, ok := subOffsets(m, sl)
		if !ok {
			return cls // not a slice of m (a constant): not kept
		}
		e.offs[i] = [2]uint8{lo, hi}
		has |= 1 << i
	}
	e.cls, e.has = cls, has
	switch {
	case cls == KindComm:
		e.comm = p.ev.comm
		e.comm.busID, e.comm.api = nil, nil
	case needsFields(cls):
		e.f = packFields(cls, &p.ev)
		e.f.s0, e.f.s1 = nil, nil
	}
	copy(e.text[:], m)
	e.n = uint8(n)
	return cls
}
