package nccl

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// looksLikeTransportParse is looksLikeTransport without its prefix check:
// the parse alone decides.
func looksLikeTransportParse(f []byte) bool {
	if len(f) < 4 {
		return false
	}
	switch f[0] {
	case 'N', 'P', 'S', 'C', 'd', '*', '`':
	default:
		return false
	}
	var t transport
	parseTransport(f, &t)
	return t.class != trOther
}

// TestLooksLikeTransportPrefix holds looksLikeTransport's prefix check
// to the parse alone: on the text before every line's first "NCCL " and
// after every " via " in the fixture logs, whole and cut short, and on
// transports and host names behind the noise trimNoise drops.
func TestLooksLikeTransportPrefix(t *testing.T) {
	var texts [][]byte
	words := []string{"NET/IB/0/GDRDMA", "NET/Socket/1", "COLLNET/IB/0", "P2P/IPC/read", "P2P/CUMEM", "SHM/direct/direct",
		"direct shared memory", "NET/", "COLLNET/", "P2P/", "SHM/", "dire", "direct", "CollNet 0", "NET", "P2P",
		"dgx-01:123:456 [0]", "SuperPod-3:1:1 [7]", "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "NCCL INFO", "COLL/IB",
		"NET/IB  [x]", "NET/IB comm 0x1 nRanks 2", "SHM/ NCCL x", ""}
	for _, noise := range []string{"", " ", "\t", "*", "`", "**", " `", "*` \t", "\u00a0"} {
		for _, w := range words {
			texts = append(texts, []byte(noise+w), []byte(noise+w+noise))
		}
	}
	paths, _ := filepath.Glob("testdata/*/*.log")
	for _, p := range paths {
		for _, l := range readLines(t, p) {
			b := []byte(l)
			if i := bytes.Index(b, markNCCL); i > 0 {
				texts = append(texts, bytes.TrimSpace(b[:i]))
			}
			if i := bytes.Index(b, []byte(" via ")); i >= 0 {
				texts = append(texts, b[i+5:], b[i+1:])
			}
		}
	}
	n := 0
	for _, f := range texts {
		for k := 0; k <= len(f) && k <= 24; k++ {
			g := f[:k]
			if k == 24 {
				g = f
			}
			got, want := looksLikeTransport(g), looksLikeTransportParse(g)
			if got != want {
				t.Errorf("looksLikeTransport(%q) = %v, the parse says %v", g, got, want)
			}
			if want {
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no transport among the texts: the test tries nothing")
	}
}

// TestIndexAnchored holds indexAnchored to bytes.Index over texts where
// the pattern comes late, early, glued, twice, or not at all, at every
// anchor of " WARN " and of the foreign rules' patterns.
func TestIndexAnchored(t *testing.T) {
	texts := []string{"", " ", "WARN ", " WARN ", "x WARN y", "WARN x WARN y", "xWARN WARN ", "xWARN  WARN ",
		"a b c WARNWARN  WARN", "host:1:2 [0] enqueue.cc:42 NCCL WARN x", "host:1:2 [0] f.c:1 WARN Cuda failure",
		"WARN", " WARN", "  WARN  WARN ", "WARN WARN WARN  WARN ", "torch nccl==2.18.1", "ncl==nccl=nccl===",
		"==nccl==", "nccl nccl= nccl==", "<warn <warn>", "NCCL errorNCCL error"}
	paths, _ := filepath.Glob("testdata/*/*.log")
	for _, p := range paths {
		texts = append(texts, readLines(t, p)...)
	}
	pats := [][]byte{markWarn22}
	for _, r := range foreignRules {
		pats = append(pats, r.match)
	}
	for _, pat := range pats {
		for a := 0; a < len(pat); a++ {
			for _, s := range texts {
				for k := 0; k <= len(s) && k < 64; k++ {
					b := []byte(s[k:])
					if got, want := indexAnchored(b, pat, a), bytes.Index(b, pat); got != want {
						t.Fatalf("indexAnchored(%q, %q, %d) = %d, bytes.Index %d", b, pat, a, got, want)
					}
				}
			}
		}
	}
}

// TestPlainMemo holds keepPlain to the look it remembers: every line of the
// fixture logs, trimmed, three times over (first sight, a hit, and after
// other texts took the slot), with texts that differ from each other only
// in one byte or in their length, so that a hit that compared less than
// the whole text would answer for the wrong one.
func TestPlainMemo(t *testing.T) {
	texts := []string{"NCCL error in: x", "NCCL error in: y", "NCCL errorX", "Caught signal 11", "Caught signal 1",
		"xxxxxxxx nccl==2.18", "xxxxxxxx nccl=-2.18", "<warn> a", "<warm> a", "NET/IB/0", "NET/IB/0 ", "MET/IB/0"}
	// Pairs alike in the bytes memoHash reads (the first, middle and last
	// eight) and in length, one kept, one not: the same slot.
	pad := strings.Repeat("z", 40)
	for _, w := range []string{"NCCL error", "<warn>", "nccl==", "Caught signal "} {
		cut := []byte(w)
		cut[len(cut)-2] = '#'
		texts = append(texts, "ab "+w+pad, "ab "+string(cut)+pad, "ab "+w+pad)
	}
	paths, _ := filepath.Glob("testdata/*/*.log")
	for _, p := range paths {
		texts = append(texts, readLines(t, p)...)
	}
	p := newLineParser(1 << 20)
	var ev event
	ev.trMemo = new(trMemo)
	kept := 0
	for round := 0; round < 3; round++ {
		for _, s := range texts {
			b := bytes.TrimSpace([]byte(s))
			if len(b) == 0 {
				continue
			}
			for _, v := range [][]byte{b, append(append([]byte{}, b...), 'x'), append([]byte{'x'}, b[1:]...)} {
				want := plainLook(v, &ev)
				if got := p.keepPlain(v); got != want {
					t.Fatalf("round %d: keepPlain(%q) = %v, the look says %v", round, v, got, want)
				}
				if want {
					kept++
				}
			}
		}
	}
	if kept == 0 {
		t.Fatal("no text kept: the test tries nothing")
	}
}

// TestConnMemoMatches holds connMemo to parseConnMemo: every connection
// message of the fixture logs, and copies of it with one digit changed
// (most in bytes connHash does not read, so that they share a slot and
// only the text compare tells them apart), three rounds over, each answer
// compared field by field, the transport's name and net by content and
// as slices of the message parsed.
func TestConnMemoMatches(t *testing.T) {
	var msgs [][]byte
	paths, _ := filepath.Glob("testdata/*/*.log")
	for _, p := range paths {
		for _, l := range readLines(t, p) {
			i := strings.Index(l, "NCCL INFO ")
			if i < 0 {
				continue
			}
			m := trimRightBlank([]byte(l[i+len("NCCL INFO "):]))
			if !hasPrefix(m, "Channel ") && !hasPrefix(m, "Ring ") && !hasPrefix(m, "CollNet ") {
				continue
			}
			msgs = append(msgs, m)
			for k, c := range m {
				if isDigit(c) {
					v := append([]byte{}, m...)
					v[k] = '0' + (c-'0'+1)%10
					msgs = append(msgs, v)
				}
			}
		}
	}
	var mm connMemo
	var rest int32
	var tr1, tr2 trMemo
	hits := 0
	for round := 0; round < 3; round++ {
		for _, m := range msgs {
			m = append([]byte{}, m...) // a new buffer: a hit must point into it
			var got, want connInfo
			okWant := parseConnMemo(m, &want, &tr1)
			before := mm.hits
			okGot := mm.parse(m, &got, &tr2, &rest)
			if mm.hits != before {
				hits++
			}
			if okGot != okWant {
				t.Fatalf("%q: memo %v, parse %v", m, okGot, okWant)
			}
			if !okWant {
				continue
			}
			if !bytes.Equal(got.tr.name, want.tr.name) || !bytes.Equal(got.tr.net, want.tr.net) ||
				(got.tr.name == nil) != (want.tr.name == nil) || (got.tr.net == nil) != (want.tr.net == nil) {
				t.Fatalf("%q: memo name %q net %q, parse %q %q", m, got.tr.name, got.tr.net, want.tr.name, want.tr.net)
			}
			for _, s := range [][]byte{got.tr.name, got.tr.net} {
				if _, _, ok := subOffsets(m, s); s != nil && !ok {
					t.Fatalf("%q: a slice %q outside the message", m, s)
				}
			}
			got.tr.name, got.tr.net, want.tr.name, want.tr.net = nil, nil, nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: memo %+v, parse %+v", m, got, want)
			}
		}
	}
	if hits == 0 {
		t.Fatal("no hit: the test tries only the parse")
	}
}

// TestKindMemoMatches holds the parser's kind memo to classify: every
// message of the fixture logs and copies of it with one digit changed
// (sharing a slot where the digit lies outside what connHash reads), three
// rounds over, each in a new buffer: the kind, and what line passes on of
// it (the commInfo, the packed fields), compared by content, their slices
// lying in the message.
func TestKindMemoMatches(t *testing.T) {
	var msgs [][]byte
	paths, _ := filepath.Glob("testdata/*/*.log")
	for _, p := range paths {
		for _, l := range readLines(t, p) {
			i := strings.Index(l, "NCCL INFO ")
			if i < 0 {
				continue
			}
			m := []byte(l[i+len("NCCL INFO "):])
			msgs = append(msgs, m)
			for k, c := range m {
				if isDigit(c) && k < 48 {
					v := append([]byte{}, m...)
					v[k] = '0' + (c-'0'+1)%10
					msgs = append(msgs, v)
				}
			}
		}
	}
	p := newLineParser(1 << 20)
	ev := event{trMemo: new(trMemo)}
	// A slice classify took from the message must come back from the
	// message; one it did not (a constant) only equal.
	inside := func(m, got, want []byte) bool {
		_, _, sub := subOffsets(m, want)
		_, _, gsub := subOffsets(m, got)
		return sub == gsub
	}
	hits := 0
	for round := 0; round < 3; round++ {
		for _, m := range msgs {
			m = append([]byte{}, m...)
			want := classify(m, &ev)
			before := int32(0)
			if p.kmemo != nil {
				p.kmemo.rest = 0 // every message through the memo
				before = p.kmemo.hits
			}
			got := p.classify(m)
			if p.kmemo != nil && p.kmemo.hits != before {
				hits++
			}
			if got != want {
				t.Fatalf("%q: memo %v, classify %v", m, got, want)
			}
			switch {
			case want == KindComm:
				if !reflect.DeepEqual(p.ev.comm, ev.comm) || !inside(m, p.ev.comm.busID, ev.comm.busID) || !inside(m, p.ev.comm.api, ev.comm.api) {
					t.Fatalf("%q: memo %+v, classify %+v", m, p.ev.comm, ev.comm)
				}
			case want == KindBootstrap:
				// apply reads only the device list (its net is what
				// ev.net held before, which hits need not keep).
				if p.ev.dev != ev.dev {
					t.Fatalf("%q: memo %+v, classify %+v", m, p.ev.dev, ev.dev)
				}
			case needsFields(want):
				g, w := packFields(want, &p.ev), packFields(want, &ev)
				if !reflect.DeepEqual(g, w) || !inside(m, g.s0, w.s0) || !inside(m, g.s1, w.s1) {
					t.Fatalf("%q: memo %+v, classify %+v", m, g, w)
				}
			}
		}
	}
	if hits == 0 {
		t.Fatal("no hit: the test tries only classify")
	}
	t.Logf("%d messages, %d hits", 3*len(msgs), hits)
}
