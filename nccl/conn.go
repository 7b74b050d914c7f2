package nccl

import (
	"bytes"
	"encoding/binary"
)

// Connection lines are the only direct evidence of which transport carries
// traffic between two ranks. Their grammar changed five times; one parser
// with optional parts reads all of them:
//
//	Ring 00 : 0 -> 1 [send] via NET/Socket/0                       2.4, NET: bare ranks
//	Ring 00 : 3[3] -> 1[1] via P2P/IPC                             2.2-2.4
//	Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC                 2.5-2.6, bus ids
//	Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA 2.7-2.11
//	Channel 03/0 : 19[201d0] -> 26[201c0] [send] via NET/AWS Libfabric/0/GDRDMA  2.12+
//	Channel 07/0 : 15[7] -> 7[7] [receive] via NET/IBext_v8/7/GDRDMA             2.18.3+, device index
//	Channel 07 : 2[6] -> 3[7] via SHM/direct/direct                SHM never got /connIdx
//	CollNet 00/0 : 3 [send] via COLLNET/SHARP/0/GDRDMA             no peer
//
// "Ring NN : prev -> me -> next" (2.10+ ring neighbours) and
// "Channel NN/MM :    0   1   2" (ring order) look alike but have no "via".

// Transport classes of a connection.
type trClass uint8

const (
	trOther trClass = iota
	trP2P
	trSHM
	trNET
	trCollNet
)

// connDir says which side printed a NET connection line. NCCL prints
// P2P and SHM lines from the sending side only.
type connDir uint8

const (
	dirNone connDir = iota
	dirSend
	dirRecv
)

type connInfo struct {
	channel int64
	connIdx int64 // -1 when the line has no "/connIdx"
	from    int64
	to      int64 // -1 for CollNet lines, which name no peer
	dir     connDir
	// marker: the message may hold another "NCCL " (in a bracket or the
	// transport text), where the general path would see a second record.
	marker bool
	tr     transport
}

// transport is the text after "via", split into what matters.
type transport struct {
	class  trClass
	name   []byte // P2P/SHM/other: the transport text without a trailing note
	net    []byte // NET and CollNet: the network module name ("IB", "AWS Libfabric")
	netDev int64
	gdr    bool     // "/GDRDMA": the NIC reads and writes GPU memory directly
	gdrPCI bool     // "/GDRDMA(PCI)": GDR through the PCI BAR (2.26+)
	shared bool     // "/Shared": p2p channels share buffers
	proxy  bool     // "NET/x/N(proxyRank)": PXN, the send goes through another local GPU's NIC
	marker bool     // the text holds "NCCL " (a torn line glued another record to it)
	ncls   netClass // classifyNet(net) for NET and CollNet
}

var (
	wordRing    = []byte("Ring ")
	wordChannel = []byte("Channel ")
	wordCollNet = []byte("CollNet ")
	sepColon    = []byte(" : ")
	sepArrow    = []byte(" -> ")
	tagSend     = []byte(" [send]")
	tagRecv     = []byte(" [receive]")
	sepVia      = []byte(" via ")
)

// parseConn parses a connection line. m must start with "Ring ",
// "Channel " or "CollNet ".
func parseConn(m []byte, c *connInfo) bool { return parseConnMemo(m, c, nil) }

// parseConnMemo is parseConn with a memo of recent transports: a log names
// a handful of them ("NET/IB/3/GDRDMA", "P2P/IPC/read") on millions of
// lines, so the text after "via" is compared with the last one seen in its
// slot instead of being parsed again. memo may be nil.
func parseConnMemo(m []byte, c *connInfo, memo *trMemo) bool {
	var p int
	collnet := false
	switch {
	case len(m) >= 8 && string(m[:8]) == "Channel ":
		p = len(wordChannel)
	case len(m) >= 5 && string(m[:5]) == "Ring ":
		p = len(wordRing)
	case hasPrefix(m, "CollNet "):
		p = len(wordCollNet)
		collnet = true
	default:
		return false
	}
	var n int
	// Field by field, not "*c = connInfo{...}": every path that reports
	// true sets the transport whole, and zeroing 112 bytes first showed.
	c.connIdx, c.to, c.dir, c.marker = -1, -1, dirNone, false
	if c.channel, n = leadingInt(m[p:]); n == 0 {
		return false
	}
	p += n
	if p < len(m) && m[p] == '/' {
		if c.connIdx, n = leadingInt(m[p+1:]); n == 0 {
			return false
		}
		p += 1 + n
	}
	if len(m) < p+3 || string(m[p:p+3]) != " : " {
		return false
	}
	p += len(sepColon)
	if c.from, n = leadingInt(m[p:]); n == 0 {
		return false
	}
	p += n
	p, c.marker = skipBracket(m, p)
	if len(m) >= p+4 && string(m[p:p+4]) == " -> " {
		p += len(sepArrow)
		if c.to, n = leadingInt(m[p:]); n == 0 {
			return false
		}
		p += n
		var spaced bool
		p, spaced = skipBracket(m, p)
		c.marker = c.marker || spaced
	} else if !collnet {
		return false
	}
	switch {
	case len(m) >= p+7 && string(m[p:p+7]) == " [send]":
		c.dir = dirSend
		p += len(tagSend)
	case len(m) >= p+10 && string(m[p:p+10]) == " [receive]":
		c.dir = dirRecv
		p += len(tagRecv)
	}
	switch {
	case len(m) >= p+5 && string(m[p:p+5]) == " via ":
		// The marker flag comes back as a value: read from c.tr right
		// after the memo copied the transport there, it stalled on store
		// forwarding.
		var marker bool
		if memo != nil {
			marker = memo.parse(m[p+len(sepVia):], &c.tr)
		} else {
			marker = parseTransport(m[p+len(sepVia):], &c.tr)
		}
		c.marker = c.marker || marker
	case bytes.Equal(m[p:], sepVia[:len(sepVia)-1]):
		// A paste broke the line after "via": the ranks are still worth
		// having, the transport is unknown.
		c.tr = transport{netDev: -1}
	default:
		return false
	}
	return true
}

// skipBracket skips a "[busId]" or "[dev]" right at p. Brackets are a few
// bytes: a loop beats a call to IndexByte. It also reports whether the
// bracket holds a blank: only then can it hold an "NCCL " marker.
func skipBracket(m []byte, p int) (int, bool) {
	spaced := false
	if p < len(m) && m[p] == '[' {
		for k := 1; k <= 20 && p+k < len(m); k++ {
			switch m[p+k] {
			case ']':
				return p + k + 1, spaced
			case ' ':
				spaced = true
			}
		}
	}
	return p, false
}

// leadingInt parses the decimal number at the start of b and returns it
// with the number of bytes it used (0: none).
func leadingInt(b []byte) (int64, int) {
	// One pass: at most 18 digits, which cannot overflow.
	var v int64
	n := 0
	for n < len(b) && n < 18 {
		d := b[n] - '0'
		if d > 9 {
			break
		}
		v = v*10 + int64(d)
		n++
	}
	return v, n
}

var (
	trNETp     = []byte("NET/")
	trCollNetp = []byte("COLLNET/")
	flagGDR    = []byte("GDRDMA")
	flagShared = []byte("Shared")
	flagPCI    = []byte("(PCI)")
)

// parseTransport splits the text after "via". The text runs to the end of
// the message and may contain spaces ("NET/AWS Libfabric/0/GDRDMA",
// "P2P/direct pointer/read"); what a paste appended after it (a tmux
// "[22/1819]", markdown "**", a wide gap before the next folded record) is
// cut off first.
//
// It returns tr.marker.
func parseTransport(t []byte, tr *transport) bool {
	marker := bytes.Contains(t, markNCCL)
	t = cutTransportNoise(t)
	*tr = transport{name: t, netDev: -1, marker: marker}
	switch {
	case len(t) >= 4 && string(t[:4]) == "NET/":
		tr.class = trNET
		parseNetTransport(t[len(trNETp):], tr)
		tr.ncls = classifyNet(tr.net)
	case hasPrefix(t, "COLLNET/"):
		tr.class = trCollNet
		parseNetTransport(t[len(trCollNetp):], tr)
		tr.ncls = classifyNet(tr.net)
	case len(t) >= 4 && string(t[:4]) == "P2P/":
		tr.class = trP2P
	case hasPrefix(t, "SHM/"), hasPrefix(t, "direct shared memory"):
		tr.class = trSHM
	}
	return marker
}

func cutTransportNoise(t []byte) []byte {
	t = trimNoise(t)
	// One pass over the (short) text for the first blank that starts
	// noise: a wide gap, " [", or the " comm 0x… nRanks N" NCCL >= 2.19
	// appends ("via P2P/IPC comm 0x5609976f9470 nRanks 32"). Most
	// transports have no blank at all.
	for i := 0; i+1 < len(t); i++ {
		if t[i] != ' ' {
			continue
		}
		if c := t[i+1]; c == ' ' || c == '[' || c == 'c' && hasPrefix(t[i+1:], "comm 0x") {
			t = t[:i]
			break
		}
	}
	return trimNoise(t)
}

// trimNoise trims blanks and the markdown a paste adds around a token.
func trimNoise(t []byte) []byte {
	isNoise := func(c byte) bool { return c == ' ' || c == '\t' || c == '*' || c == '`' }
	for len(t) > 0 && isNoise(t[0]) {
		t = t[1:]
	}
	for len(t) > 0 && isNoise(t[len(t)-1]) {
		t = t[:len(t)-1]
	}
	return t
}

// parseNetTransport reads "<name>/<dev>[(<proxyRank>)][/GDRDMA[(PCI)]][/Shared]".
// The name may contain spaces but not "/<digit>", which starts the device.
func parseNetTransport(t []byte, tr *transport) {
	k := -1
	for i := 0; i+1 < len(t); i++ {
		if t[i] == '/' && isDigit(t[i+1]) {
			k = i
			break
		}
	}
	if k < 0 {
		if j := bytes.IndexByte(t, '/'); j >= 0 {
			t = t[:j]
		}
		tr.net = t
		return
	}
	tr.net = t[:k]
	rest := t[k+1:]
	var n int
	tr.netDev, n = leadingInt(rest)
	rest = rest[n:]
	if len(rest) > 0 && rest[0] == '(' {
		tr.proxy = true
		if j := bytes.IndexByte(rest, ')'); j > 0 {
			rest = rest[j+1:]
		}
	}
	for len(rest) > 0 && rest[0] == '/' {
		rest = rest[1:]
		switch {
		case len(rest) >= 6 && string(rest[:6]) == "GDRDMA":
			tr.gdr = true
			rest = rest[len(flagGDR):]
			if hasPrefix(rest, "(PCI)") {
				tr.gdrPCI = true
				rest = rest[len(flagPCI):]
			}
		case hasPrefix(rest, "Shared"):
			tr.shared = true
			rest = rest[len(flagShared):]
		default:
			return
		}
	}
}

// trMemo remembers the transports parsed last, by their text: a
// direct-mapped table of trMemoSlots entries. An entry keeps the parse
// with its slices as offsets into the text, so that a hit rebuilds them
// over the current line (the table outlives the block buffers).
const (
	trMemoSlots = 64
	trMemoText  = 48 // longer transport texts are parsed every time
)

type trMemo [trMemoSlots]trMemoEntry

type trMemoEntry struct {
	n              uint8 // text length; 0: empty slot
	text           [trMemoText]byte
	tr             transport // name and net nil
	nameLo, nameHi uint8
	netLo, netHi   uint8
	hasNet         bool
}

// parse is parseTransport through the memo; it returns tr.marker.
func (mm *trMemo) parse(t []byte, tr *transport) bool {
	if len(t) == 0 || len(t) > trMemoText {
		return parseTransport(t, tr)
	}
	// The slot: length and the last bytes (the device digit and the flags
	// differ between a log's transports; the start is "NET/" or "P2P/").
	n := len(t)
	h := uint(n)*7 ^ uint(t[n-1])*13 ^ uint(t[n/2])*31 ^ uint(t[min(n-1, 7)])*5
	e := &mm[h%trMemoSlots]
	if int(e.n) == n && string(e.text[:n]) == string(t) {
		*tr = e.tr
		tr.name = t[e.nameLo:e.nameHi]
		if e.hasNet {
			tr.net = t[e.netLo:e.netHi]
		}
		return e.tr.marker
	}
	marker := parseTransport(t, tr)
	// Offsets of the slices into t (both are subslices of t).
	off := func(s []byte) (uint8, uint8, bool) {
		if s == nil {
			return 0, 0, false
		}
		lo := cap(t) - cap(s)
		if lo < 0 || lo+len(s) > n {
			return 0, 0, false
		}
		return uint8(lo), uint8(lo + len(s)), true
	}
	nameLo, nameHi, okName := off(tr.name)
	netLo, netHi, okNet := off(tr.net)
	if !okName || tr.net != nil && !okNet {
		e.n = 0
		return marker
	}
	*e = trMemoEntry{n: uint8(n), tr: *tr, nameLo: nameLo, nameHi: nameHi, netLo: netLo, netHi: netHi, hasNet: tr.net != nil}
	copy(e.text[:], t)
	e.tr.name, e.tr.net = nil, nil
	return marker
}

// connMemo remembers recent connection messages that parseConnMemo read,
// one a slot by memoHash, the text compared whole on a hit and the
// transport's name and net kept as offsets into it, as trMemo does: a log
// gathered from many ranks (and the real shape, whose replicas repeat
// their logs) prints the same connection message again and again, and a
// hit costs about a fifth of the parse. A log whose connection lines are
// all distinct (init) would pay a miss on each, so the memo watches its
// hits and rests when they are rare (see parse). TestConnMemoMatches
// holds it to parseConnMemo.
type connMemo struct {
	slots [connMemoSlots]connMemoEntry
	// Of the look-ups since the count was reset: hits and all; backoff:
	// the last rest, doubled on each window in a row with few hits.
	hits, looks, backoff int32
}

type connMemoEntry struct {
	n              uint8 // text length; 0: empty slot
	nameLo, nameHi uint8
	netLo, netHi   uint8
	hasName        bool
	hasNet         bool
	conn           connInfo // tr.name and tr.net nil
	text           [connMemoText]byte
}

const (
	connMemoSlots = 1 << 10
	connMemoText  = 96
	// Every connMemoWindow look-ups, a memo with fewer than one hit in
	// four rests for connMemoRest messages, twice as many after each
	// such window in a row, up to connMemoMaxRest.
	connMemoWindow  = 256
	connMemoRest    = 4096
	connMemoMaxRest = 1 << 20
)

// connHash picks a connMemo slot for m, 24 bytes or more: the words where
// a log's connection messages differ (after "Channel ", the channel and
// the ranks; the middle; the transport at the end) and the length. A
// collision costs a miss only: a hit compares the text.
func connHash(m []byte) uint64 {
	const m1, m2 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db
	n := len(m)
	le := binary.LittleEndian
	x := le.Uint64(m[8:]) ^ le.Uint64(m[16:])*m2 ^ uint64(n)
	y := le.Uint64(m[n-8:]) ^ le.Uint64(m[n/2-4:])*m1
	return mix(x^m1, y^m2)
}

// parse is parseConnMemo(m, c, tr) through the memo. It sets *rest, the
// number of messages the caller is to parse without the memo, when hits
// were rare among the last connMemoWindow look-ups.
func (mm *connMemo) parse(m []byte, c *connInfo, tr *trMemo, rest *int32) bool {
	n := len(m)
	if n < 24 || n > connMemoText {
		return parseConnMemo(m, c, tr)
	}
	if mm.looks++; mm.looks == connMemoWindow {
		if mm.hits < connMemoWindow/4 {
			mm.backoff = min(max(2*mm.backoff, connMemoRest), connMemoMaxRest)
			*rest = mm.backoff
		} else {
			mm.backoff = 0
		}
		mm.hits, mm.looks = 0, 0
	}
	e := &mm.slots[connHash(m)%connMemoSlots]
	if int(e.n) == n && string(e.text[:n]) == string(m) {
		mm.hits++
		*c = e.conn
		if e.hasName {
			c.tr.name = m[e.nameLo:e.nameHi]
		}
		if e.hasNet {
			c.tr.net = m[e.netLo:e.netHi]
		}
		return true
	}
	if !parseConnMemo(m, c, tr) {
		return false
	}
	var okName, okNet bool
	e.n = 0
	if c.tr.name != nil {
		if e.nameLo, e.nameHi, okName = subOffsets(m, c.tr.name); !okName {
			return true
		}
	}
	if c.tr.net != nil {
		if e.netLo, e.netHi, okNet = subOffsets(m, c.tr.net); !okNet {
			return true
		}
	}
	e.n, e.hasName, e.hasNet, e.conn = uint8(n), c.tr.name != nil, c.tr.net != nil, *c
	e.conn.tr.name, e.conn.tr.net = nil, nil
	copy(e.text[:], m)
	return true
}

// subOffsets returns where s lies in m, when s is a slice of m's own bytes
// (offsets below 256): the capacities place it, and the address of its
// first byte (of its capacity, for an empty s) confirms it, since a slice
// of another array (a constant) can have any capacity.
func subOffsets(m, s []byte) (lo, hi uint8, ok bool) {
	l := cap(m) - cap(s)
	if s == nil || cap(s) == 0 || l < 0 || l+len(s) > len(m) || len(m) > 255 || &s[:1][0] != &m[l:][:1][0] {
		return 0, 0, false
	}
	return uint8(l), uint8(l + len(s)), true
}
