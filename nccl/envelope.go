package nccl

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
)

// The envelope is what NCCL prints before a message:
//
//	host:pid:tid [cudaDev] NCCL INFO <msg>
//	host:pid:tid [cudaDev] file:line[ (func)] NCCL WARN <msg>
//	NCCL version x.y.z+cudaA.B            (bare, printf'd by NCCL <= 2.21)
//
// Launchers and collectors put their own text in front (srun --label,
// Open MPI --tag-output, pdsh, Ray, Python logging, CloudWatch), pastes fold
// several records onto one physical line, and unsynchronised writers tear
// records apart. So instead of peeling known prefixes off the start of a
// line, the scanner looks for the fixed marker "NCCL " anywhere in the line
// and reads the envelope backwards from it: whatever precedes the host name
// is somebody else's prefix and is ignored.

var (
	markNCCL    = []byte("NCCL ")
	markInfo    = []byte("INFO")
	markWarn    = []byte("WARN")
	markVersion = []byte("version ")
)

// Record levels.
const (
	levelInfo    byte = 'I'
	levelWarn    byte = 'W'
	levelVersion byte = 'V' // bare "NCCL version" line, no envelope
)

const (
	maxHostLen = 255 // hostnames are at most 253 bytes; longer runs are not a host
	maxTagLen  = 256 // room for "file:line (function)" in a WARN envelope
)

// rawRecord is one NCCL record found in a line. Its slices point into the
// line buffer and are only valid until the next line is read.
type rawRecord struct {
	marker   int // index of "NCCL "
	start    int // index of the first byte of the record (host, or the marker when there is no envelope)
	msgStart int
	level    byte
	parsed   bool   // the envelope has been read (see lineScanner.envelope)
	prefixed bool   // a host:pid:tid [dev] envelope was found
	host     []byte // may be empty: NCCL prints an empty host when gethostname fails
	pid      []byte // decimal digits, parsed only when a process is first seen
	prefix   []byte // "host:pid:tid [dev]": identifies the printing thread
	tag      []byte // WARN source location, e.g. "transport/net_ib.cc:1295"
	msg      []byte // message text (see finish)
	key      []byte // host .. end of message: what de-duplication compares; set by finish
	cut      bool   // another record follows on the same line
	// glued: the host name starts right after other text, with no blank
	// or separator in between: the tail of a torn record the writer cut
	// off may be stuck to it (see cleanHostStart).
	glued  bool
	legacy bool // NCCL 2.2: "host:pid:tid [dev] INFO …" without the word NCCL
	// phash is hash64(prefix) when the envelope memo had it; 0 otherwise.
	phash uint64
}

// lineScanner yields the records of one physical line in order. A record's
// message runs until the next record's envelope, which is what splits folded
// pastes and torn interleavings into their parts.
type lineScanner struct {
	b       []byte
	next    rawRecord
	hasNext bool
	noCR    bool     // the block this line is in has no carriage return (set per block by lineParser)
	first   int      // the line's first "NCCL " (resetAt); -1: not known
	envMemo *envMemo // recent envelopes; nil reads every one
}

func (s *lineScanner) reset(b []byte) {
	s.b, s.first = b, -1
	s.hasNext = findRecord(b, 0, -1, &s.next)
	if !s.hasNext {
		s.hasNext = findLegacy(b, &s.next)
	}
}

// resetAt is reset for a line whose first "NCCL " is at i (-1: it has
// none), which the caller has found.
func (s *lineScanner) resetAt(b []byte, i int) {
	s.b, s.first = b, i
	if i < 0 {
		s.hasNext = false
	} else {
		s.hasNext = findRecordFrom(b, i, i, -1, &s.next)
	}
	if !s.hasNext {
		s.hasNext = findLegacy(b, &s.next)
	}
}

var (
	markInfo22 = []byte("] INFO ")
	markWarn22 = []byte(" WARN ")
)

// indexAnchored is bytes.Index(b, pat), looking for pat[a:] and then at
// the a bytes before it. bytes.Index steps from one occurrence of its
// pattern's first byte to the next: where that byte is common in the
// text searched (the blank of " WARN " in the foreign lines that reach
// findLegacy, a step per word) and pat[a] is rare, the steps are fewer. The first occurrence of pat[a:] with pat[:a]
// before it is where the first pat starts, a bytes on. TestIndexAnchored
// holds it to bytes.Index.
func indexAnchored(b, pat []byte, a int) int {
	off := a
	for off < len(b) {
		j := bytes.Index(b[off:], pat[a:])
		if j < 0 {
			return -1
		}
		if off += j; string(b[off-a:off]) == string(pat[:a]) {
			return off - a
		}
		off++
	}
	return -1
}

// findLegacy looks for an NCCL 2.2 record in a line without NCCL's
// marker: "host:pid:tid [dev] INFO msg" or "host:pid:tid [dev] file:line
// WARN msg" (NCCL 2.2 left out the word NCCL). Only a full envelope makes
// it a record, so "2025-11-12 20:41:43,851 - INFO - …" stays foreign.
func findLegacy(b []byte, r *rawRecord) bool {
	if i := bytes.Index(b, markInfo22); i >= 0 {
		at := i + 2 // the I of INFO
		*r = rawRecord{level: levelInfo, marker: at, start: at, msgStart: min(at+len(markInfo)+1, len(b)), legacy: true}
		parseEnvelope(b, at, false, r)
		r.parsed = true
		return r.prefixed
	}
	if i := indexAnchored(b, markWarn22, 1); i >= 0 {
		at := i + 1
		*r = rawRecord{level: levelWarn, marker: at, start: at, msgStart: min(at+len(markWarn)+1, len(b)), legacy: true}
		parseEnvelope(b, at, true, r)
		r.parsed = true
		return r.prefixed && len(r.tag) > 0
	}
	return false
}

// scan fills r with the next record of the line and reports whether there
// was one. It does as little as it can: most records are dropped after a
// look at the first bytes of their message, so the envelope is read and
// the message end trimmed only for those that are kept (finish). The next
// record's envelope is read at once when there is one, since it ends this
// record's message.
func (s *lineScanner) scan(r *rawRecord) bool {
	if !s.hasNext {
		return false
	}
	*r = s.next
	s.hasNext = findRecord(s.b, r.msgStart, r.msgStart, &s.next)
	end := len(s.b)
	if s.hasNext {
		s.envelope(&s.next)
		end, r.cut = max(s.next.start, r.msgStart), true
	}
	lo := r.msgStart
	for lo < end && (s.b[lo] == ' ' || s.b[lo] == '\t') {
		lo++
	}
	r.msg = s.b[lo:end]
	return true
}

// envelope reads the record's envelope if that has not been done.
func (s *lineScanner) envelope(r *rawRecord) {
	if !r.parsed {
		r.parsed = true
		if r.level != levelVersion {
			if s.envMemo != nil {
				s.envMemo.parse(s.b, r.marker, r.level == levelWarn, r.marker == s.first, r)
			} else {
				parseEnvelope(s.b, r.marker, r.level == levelWarn, r)
			}
		}
	}
}

// finish reads the envelope and trims what follows the message: a
// carriage return and anything after it (progress bars redraw with CR),
// trailing blanks, and when another record follows on the same line, the
// separator a collector put between them (" | " in CloudWatch exports).
// It may be called twice.
func (s *lineScanner) finish(r *rawRecord) {
	s.envelope(r)
	m := r.msg
	if !s.noCR {
		if i := bytes.IndexByte(m, '\r'); i >= 0 {
			m = m[:i]
		}
	}
	m = trimRightBlank(m)
	if r.cut {
		for len(m) > 0 && m[len(m)-1] == '|' {
			m = trimRightBlank(m[:len(m)-1])
		}
	}
	r.msg = m
	// m is a subslice of s.b: its end, as an index into s.b, is where the
	// record's key ends.
	r.key = s.b[r.start : cap(s.b)-cap(m)+len(m)]
}

func trimRightBlank(m []byte) []byte {
	for len(m) > 0 && (m[len(m)-1] == ' ' || m[len(m)-1] == '\t') {
		m = m[:len(m)-1]
	}
	return m
}

// findRecord looks for the first record whose marker is at or after pos.
// skipVersionAt is the message start of the record being completed: an
// "NCCL version" found exactly there is that record's message (NCCL >= 2.22
// prints the version as an INFO line), not a bare version line.
func findRecord(b []byte, pos, skipVersionAt int, r *rawRecord) bool {
	return findRecordFrom(b, pos, -1, skipVersionAt, r)
}

// findRecordFrom is findRecord when the caller may already know where the
// first "NCCL " at or after pos is: at (-1: not known).
func findRecordFrom(b []byte, pos, at, skipVersionAt int, r *rawRecord) bool {
	for pos < len(b) {
		i := at
		if at < 0 {
			if i = bytes.Index(b[pos:], markNCCL); i < 0 {
				return false
			}
			i += pos
		}
		at = -1
		pos = i + len(markNCCL)
		if i > 0 && isWordByte(b[i-1]) {
			continue // "ProcessGroupNCCL ", "myNCCL " …: not NCCL's marker
		}
		rest := b[pos:]
		switch {
		case len(rest) >= 4 && string(rest[:4]) == "INFO" && (len(rest) == 4 || rest[4] == ' ' || rest[4] == '\t'):
			*r = rawRecord{level: levelInfo, marker: i, start: i, msgStart: min(pos+len(markInfo)+1, len(b))}
			return true
		case hasWord(rest, markWarn):
			*r = rawRecord{level: levelWarn, marker: i, start: i, msgStart: min(pos+len(markWarn)+1, len(b))}
			return true
		case bytes.HasPrefix(rest, markVersion):
			if i == skipVersionAt {
				continue
			}
			if i >= 2 && b[i-2] == ',' && b[i-1] == ' ' {
				// The tail of a sentence, not NCCL's bare version line:
				// PyTorch's "NCCL error in: …, NCCL version 2.28.9"
				// names the version without its "+cudaX.Y" build.
				continue
			}
			*r = rawRecord{level: levelVersion, marker: i, start: i, msgStart: i, parsed: true}
			return true
		}
	}
	return false
}

// hasWord reports whether b starts with w followed by a blank or the end.
func hasWord(b, w []byte) bool {
	if !bytes.HasPrefix(b, w) {
		return false
	}
	return len(b) == len(w) || b[len(w)] == ' ' || b[len(w)] == '\t'
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseEnvelope reads "host:pid:tid [dev] " (and for WARN the source tag)
// backwards from the marker at i. When the envelope is missing or damaged
// the record is kept without one: a user who stripped the prefixes still
// has records worth reading.
func parseEnvelope(b []byte, i int, warn bool, r *rawRecord) {
	parseEnvelopeHost(b, i, warn, r, nil)
}

// parseEnvelopeHost is parseEnvelope with the hosts read last (hcs; nil:
// none), which the envelope memo keeps for its misses.
func parseEnvelopeHost(b []byte, i int, warn bool, r *rawRecord, hcs *hostCaches) {
	r.start = i
	sp := i - 1
	if sp < 0 || b[sp] != ' ' {
		return
	}
	var closeBr int
	if warn {
		lo := max(0, sp-maxTagLen)
		k := bytes.LastIndex(b[lo:sp], []byte("] "))
		if k < 0 {
			return
		}
		closeBr = lo + k
		r.tag = bytes.TrimSpace(b[closeBr+2 : sp])
	} else {
		closeBr = sp - 1
		if closeBr < 0 || b[closeBr] != ']' {
			return
		}
	}
	// [dev]
	j := closeBr - 1
	for j >= 0 && isDigit(b[j]) {
		j--
	}
	if j == closeBr-1 {
		return
	}
	if j >= 0 && b[j] == '-' {
		j--
	}
	if j < 0 || b[j] != '[' {
		return
	}
	openBr := j
	// host:pid:tid, then one blank
	if openBr < 1 || b[openBr-1] != ' ' {
		return
	}
	tidEnd := openBr - 1
	k := tidEnd - 1
	for k >= 0 && isDigit(b[k]) {
		k--
	}
	if k == tidEnd-1 || k < 0 || b[k] != ':' {
		return
	}
	pidEnd := k
	k--
	for k >= 0 && isDigit(b[k]) {
		k--
	}
	if k == pidEnd-1 || k < 0 || b[k] != ':' || pidEnd-k > 19 {
		return
	}
	hostEnd := k
	var hc *hostCache
	if hcs != nil {
		hc = &hcs[hostSlot(b, hostEnd)]
	}
	if hc != nil && int(hc.end) == hostEnd+1 && string(b[:hostEnd]) == string(hc.text[:hostEnd]) {
		r.start, r.host = int(hc.start), sub(b, hc.host)
		if hc.glued {
			r.glued = true
		}
	} else {
		readHost(b, hostEnd, r)
		hc.remember(b, hostEnd, r)
	}
	r.prefixed = true
	r.pid = b[hostEnd+1 : pidEnd]
	r.prefix = b[r.start : closeBr+1]
}

// hostCache is the host part of an envelope parseEnvelopeHost read, in one
// of hostSlots slots picked by the host's end: in a log where processes
// come and go (the real shape brings a new envelope every 2.9 records), a
// new envelope most often differs from one read shortly before only in its
// pid or tid, and the backwards host scan was half of a miss's cost
// (docs/nccl.md). A hit compares the whole text before the host. Invariant: readHost reads
// nothing at or after hostEnd (the backwards scan, cleanHostStart,
// bracketTag, blankedHost and the glued look all stay before it), so two
// texts equal up to hostEnd get the same start, host and glued flag, at the
// same offsets. TestMemosMatchParsing (every fixture line, the memo's
// misses on its first pass) and TestHostCacheMatchesParsing hold it.
type hostCache struct {
	end   uint8 // hostEnd+1; 0: empty
	start uint8
	glued bool
	host  [3]uint8 // as an envMemoEntry's
	text  [envMemoText]byte
}

type hostCaches [hostSlots]hostCache

const hostSlots = 16

// hostSlot picks a hostCache by the host's end and its last byte.
func hostSlot(b []byte, hostEnd int) int {
	if hostEnd == 0 {
		return 0
	}
	return (hostEnd*7 + int(b[hostEnd-1])*3) % hostSlots
}

// remember keeps what readHost made of b[:hostEnd]; hc may be nil.
func (hc *hostCache) remember(b []byte, hostEnd int, r *rawRecord) {
	if hc == nil {
		return
	}
	hc.end = 0
	host, ok := span(b, hostEnd, r.host)
	if hostEnd >= envMemoText || !ok || r.start > hostEnd {
		return
	}
	hc.end, hc.start, hc.glued, hc.host = uint8(hostEnd+1), uint8(r.start), r.glued, host
	copy(hc.text[:], b[:hostEnd])
}

// readHost reads the host name that ends at hostEnd (its ':') backwards,
// and sets r's start, host and glued flag.
func readHost(b []byte, hostEnd int, r *rawRecord) {
	// At most maxHostLen bytes back, over a slice the loop cannot leave.
	lo := max(0, hostEnd-maxHostLen)
	w := b[lo:hostEnd]
	n := len(w)
	for n > 0 && !hostStop[w[n-1]] {
		n--
	}
	h := cleanHostStart(b, lo+n, hostEnd)
	r.start = h
	r.host = b[h:hostEnd]
	switch {
	case h == hostEnd:
		// NCCL prints an empty host name when gethostname fails; a
		// launcher's "[pod-name] " or "[pod-name]:" tag then names the
		// machine, as the host name would have (a pod's host name is its
		// name). Rank and job-step tags ("[rank3]:", "[1,0]", "[155]") do
		// not name one.
		// The tag joins the envelope, so that two pods' identical lines are
		// neither one thread nor duplicates.
		if tag, open := bracketTag(b, h); tag != nil {
			r.host = tag
			r.start = open
		} else if w, at := blankedHost(b, h); w != nil {
			r.host = w
			r.start = at
		}
	case h > 0 && !hostSep[b[h-1]]:
		r.glued = true
	}
}

// hostStop marks the bytes that end a backwards scan over a host name.
// ':' matters most: it separates the host from launcher tags glued to it
// ("[1,0]<stdout>:host", "[rank3]:host"). '/' ends it too: host names have
// none, and what precedes one is a path the scan would otherwise take in
// ("logs/run/host"). Invariant: the scan then stops right after the
// last '/' before the ':', where cutting at that '/' afterwards put the
// start (the scan's length limit counts from the ':', so it cannot stop
// first at a different place); the glued flag sees the same '/' before the
// host. TestGluedConnectionHost and TestParseLineEnvelopes hold it.
var hostStop = func() (t [256]bool) {
	for _, c := range []byte(" \t:|\r\n\x00])\"'/") {
		t[c] = true
	}
	return t
}()

// hostSep marks the bytes that may separate a host name from what precedes
// it on a line. A host right after anything else is glued to it.
var hostSep = func() (t [256]bool) {
	for _, c := range []byte(" \t:|])\"'*`Zm\r") {
		t[c] = true
	}
	return t
}()

// bracketTag returns the name in a "[name]" or "[name] " right before
// position h and the index of its '[', or nil when there is none or it is
// a rank or job-step tag.
func bracketTag(b []byte, h int) ([]byte, int) {
	e := h - 1
	if e >= 0 && b[e] == ' ' {
		e--
	}
	if e < 1 || b[e] != ']' {
		return nil, 0
	}
	lo := max(0, e-maxHostLen)
	o := bytes.LastIndexByte(b[lo:e], '[')
	if o < 0 {
		return nil, 0
	}
	open := lo + o
	tag := b[open+1 : e]
	// kubectl logs --prefix: "[pod/NAME/CONTAINER]".
	if rest, ok := bytes.CutPrefix(tag, []byte("pod/")); ok {
		if k := bytes.IndexByte(rest, '/'); k > 0 {
			tag = rest[:k]
		}
	}
	letter := false
	for _, c := range tag {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_':
		default:
			return nil, 0 // "[1,0]", "[pod/x/y]", spaces: not a host name
		}
	}
	if !letter || bytes.HasPrefix(tag, []byte("rank")) && len(tag) > 4 && isDigit(tag[4]) {
		return nil, 0
	}
	return tag, open
}

// blankedHost returns the word right before "NAME :pid", a host name
// that a poster replaced by hand leaving a blank before the ':' (posted/136:
// "NAME :70918:70918 [0] …" beside "NAME:70918:70927 [0] …"), and the index
// where it starts; nil when the empty host has no such word. NCCL prints
// gethostname's name with no blank (a host name holds none), so a blank
// there is an editor's, and without this the same process read as two on
// two hosts, one of them empty. The word must start the line or follow a
// separator (hostSep) and look like a host name (hostLike), so that a
// launcher tag ("[1,0]<stdout>: :1:2 …") or other text is not taken.
func blankedHost(b []byte, h int) ([]byte, int) {
	e := h - 1
	if e < 1 || b[e] != ' ' {
		return nil, 0
	}
	s := e
	for s > 0 && e-s < maxHostLen && !hostStop[b[s-1]] {
		s--
	}
	if s == e || s > 0 && !hostSep[b[s-1]] || !hostLike(b[s:e]) {
		return nil, 0
	}
	return b[s:e], s
}

// hostLike reports whether w could be a host name: letters, digits, '-',
// '.' and '_', starting with a letter or digit.
func hostLike(w []byte) bool {
	if len(w) == 0 || !(isDigit(w[0]) || w[0]|0x20 >= 'a' && w[0]|0x20 <= 'z') {
		return false
	}
	for _, c := range w {
		if !(isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// cleanHostStart skips what sticks to the front of a host name without a
// separator: markdown emphasis, the "->" of a connection line a torn write
// cut off ("0[0] ->3837134f4773:4529:…"; host names start with a letter or
// digit), ANSI colour codes or their residue once ESC is lost ("\x1b[0m",
// "[0m"), and the tail of an ISO-8601 timestamp that CloudWatch exports
// glue to the line ("…T05:27:39.074Zalgo-1:…" leaves "39.074Z" before the
// host once the scan stops at the last ':').
// (A path before the host stops the scan already: hostStop.)
func cleanHostStart(b []byte, h, end int) int {
	for {
		for h < end && (b[h] == '*' || b[h] == '`' || b[h] == '>' || b[h] == '-') {
			h++
		}
		if n := ansiResidue(b[h:end]); n > 0 {
			h += n
			continue
		}
		break
	}
	if end-h > 3 && isDigit(b[h]) && isDigit(b[h+1]) {
		k := h + 2
		if k < end && b[k] == '.' {
			k++
			for k < end && isDigit(b[k]) {
				k++
			}
		}
		if k < end-1 && b[k] == 'Z' {
			return k + 1
		}
	}
	return h
}

// atoi parses a non-negative decimal number; it gives up on more than 18
// digits rather than overflow.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// ansiResidue returns the length of an ANSI SGR code at the start of b
// ("\x1b[36m", "\x1b[0m", or "[0m" once the ESC was lost), or 0.
func ansiResidue(b []byte) int {
	i := 0
	if i < len(b) && b[i] == 0x1b {
		i++
	}
	if i >= len(b) || b[i] != '[' {
		return 0
	}
	i++
	j := i
	for j < len(b) && (isDigit(b[j]) || b[j] == ';') {
		j++
	}
	if j == i || j >= len(b) || b[j] != 'm' {
		return 0
	}
	return j + 1
}

// trimANSI removes ANSI SGR codes (or their residue) from both ends of a
// name: colour codes wrap words in coloured launcher output.
func trimANSI(b []byte) []byte {
	for {
		if n := ansiResidue(b); n > 0 {
			b = b[n:]
			continue
		}
		break
	}
	for k := len(b) - 1; k >= 0; k-- {
		if b[k] == 0x1b || b[k] == '[' {
			if ansiResidue(b[k:]) == len(b)-k {
				b = b[:k]
				k = len(b)
				continue
			}
		}
	}
	return b
}

// envMemo remembers the envelopes read last. parseEnvelope reads only the
// text before the marker, and in a log that text repeats: one envelope
// per thread, a few hundred threads, millions of lines. An entry keeps
// that text, what parseEnvelope made of it as offsets (so that a hit
// rebuilds the slices over the current line) and the prefix's hash64 for
// the merger. A line whose text before the marker changes every time (a
// timestamp) misses and costs one hash and one copy more.
const (
	envMemoSlots = 1 << 11
	envMemoText  = 64 // longer texts before the marker are read every time
)

type envMemo struct {
	slots [envMemoSlots]envMemoEntry
	host  hostCaches // for the misses
}

type envMemoEntry struct {
	n     uint8 // text length; 0: empty slot
	warn  bool
	flags uint8 // envPrefixed, envGlued
	start uint8
	// host, pid, prefix, tag: offsets lo, hi and 1 when the slice is not nil
	host, pid, prefix, tag [3]uint8
	phash                  uint64
	// token names this entry's text among all texts any memo ever held
	// (envTokens): two lines with one token have the same envelope, so
	// the merger can find the thread by token without comparing bytes.
	token uint64
	text  [envMemoText]byte
}

// envTokens hands out envelope memo tokens; 0 is none.
var envTokens atomic.Uint64

const (
	envPrefixed = 1 << iota
	envGlued
	envNoMarker // the text holds no "NCCL " (a glued line's second envelope can)
)

// parse reads the envelope before the marker at i, from the memo when it
// holds the text b[:i]. first tells that i is b's first "NCCL " (so b[:i]
// holds none, which envNoMarker records): the callers know it from their
// own search (lineScanner.first, predictMarker), and a look over the text
// is spared. With first false the text is searched.
// TestPredictMarkerDistrustsMemo fails when a line's second envelope is
// taken for a first.
func (mm *envMemo) parse(b []byte, i int, warn, first bool, r *rawRecord) {
	if i == 0 || i > envMemoText {
		parseEnvelope(b, i, warn, r)
		return
	}
	key := b[:i]
	set := mm.set(key)
	if e := set.find(key, warn); e != nil {
		e.fill(b, r)
		return
	}
	parseEnvelopeHost(b, i, warn, r, &mm.host)
	var flags uint8
	var phash uint64
	if r.prefixed {
		flags |= envPrefixed
		phash = hash64(r.prefix)
		r.phash = phash
	}
	if r.glued {
		flags |= envGlued
	}
	if first || indexMarker(key) < 0 { // an envelope: an 'N' is rare (see indexMarker)
		flags |= envNoMarker
	}
	// In place: the older entry of the set (the smaller token; an empty
	// slot's is 0) falls out, and the newer stays where it is. The text
	// past n is not cleared: matches reads text[:n] only.
	x := &set[0]
	if set[1].token < x.token {
		x = &set[1]
	}
	x.n, x.warn, x.flags, x.start = uint8(i), warn, flags, uint8(r.start)
	// parseEnvelopeHost slices only b[:i] (the envelope precedes the
	// marker), and i <= envMemoText, so the offsets fit in a byte.
	// TestMemosMatchParsing rebuilds every fixture envelope from them.
	x.host, x.pid, x.prefix, x.tag = offsets(b, r.host), offsets(b, r.pid), offsets(b, r.prefix), offsets(b, r.tag)
	x.phash, x.token = phash, envTokens.Add(1)
	copy(x.text[:], key)
}

// envMemoSet is one set of the memo: two ways, since a log's few hundred
// envelopes collide in a direct-mapped table often enough to show.
type envMemoSet []envMemoEntry

func (mm *envMemo) set(key []byte) envMemoSet {
	return envMemoSet(mm.slots[memoHash(key)%(envMemoSlots/2)*2:][:2])
}

// find is the set's entry for exactly this text before a marker, or nil.
func (set envMemoSet) find(key []byte, warn bool) *envMemoEntry {
	if e := &set[0]; e.matches(key, warn) {
		return e
	}
	if e := &set[1]; e.matches(key, warn) {
		return e
	}
	return nil
}

// fill sets r's envelope from the entry, for the line b it matched.
func (e *envMemoEntry) fill(b []byte, r *rawRecord) {
	r.start = int(e.start)
	r.prefixed = e.flags&envPrefixed != 0
	r.glued = e.flags&envGlued != 0
	r.host = sub(b, e.host)
	r.pid = sub(b, e.pid)
	r.prefix = sub(b, e.prefix)
	r.tag = sub(b, e.tag)
	r.phash = e.phash
}

func (e *envMemoEntry) matches(key []byte, warn bool) bool {
	return int(e.n) == len(key) && e.warn == warn && string(e.text[:len(key)]) == string(key)
}

// span is the position of s, a subslice of b[:i] or nil, as offsets.
func span(b []byte, i int, s []byte) ([3]uint8, bool) {
	if s == nil {
		return [3]uint8{}, true
	}
	lo := cap(b) - cap(s)
	if lo < 0 || lo+len(s) > i {
		return [3]uint8{}, false
	}
	return [3]uint8{uint8(lo), uint8(lo + len(s)), 1}, true
}

// offsets is span's result for a subslice s of b whose end is below 256,
// or nil.
func offsets(b, s []byte) [3]uint8 {
	if s == nil {
		return [3]uint8{}
	}
	lo := cap(b) - cap(s)
	return [3]uint8{uint8(lo), uint8(lo + len(s)), 1}
}

func sub(b []byte, s [3]uint8) []byte {
	if s[2] == 0 {
		return nil
	}
	return b[s[0]:s[1]] // the full capacity: offsets are computed from it (ParseLine, finish)
}

// memoHash picks an envelope memo set: three words of the text (its start,
// middle and end, where launcher tags, host names and pid:tid differ) and
// its length. A collision only costs a miss, since a hit compares the text.
func memoHash(b []byte) uint64 {
	n := len(b)
	if n < 8 {
		return hash64(b)
	}
	const m1, m2 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db
	x := binary.LittleEndian.Uint64(b) ^ uint64(n)*m2
	y := binary.LittleEndian.Uint64(b[n-8:]) ^ binary.LittleEndian.Uint64(b[n/2-4:])*m1
	return mix(x^m1, y^m2)
}
