package nccl

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	gen "github.com/gpuprobe/gpuprobe/sim/nccllog"
)

// TestMemosMatchParsing: the parser's envelope and transport memos give
// what parsing gives, on every line of the fixtures, when they miss (first
// pass) and when they hit (second pass, the line copied to another buffer
// so that the slices must be rebuilt over it).
func TestMemosMatchParsing(t *testing.T) {
	var paths []string
	for _, g := range []string{"testdata/logs/*.log", "testdata/issue13/*.log", "testdata/realgpu/*.log"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	em, tm := new(envMemo), new(trMemo)
	n := 0
	for pass := 0; pass < 2; pass++ {
		for _, path := range paths {
			for _, line := range readLines(t, path) {
				b := append([]byte(nil), line...)
				var plain, memo lineScanner
				plain.reset(b)
				memo.envMemo = em
				memo.reset(b)
				var want, got rawRecord
				for plain.scan(&want) {
					if !memo.scan(&got) {
						t.Fatalf("%s: %q: the memo scanner found fewer records", path, line)
					}
					plain.finish(&want)
					memo.finish(&got)
					got.phash = 0
					if !sameRecord(&want, &got) {
						t.Errorf("%s: %q:\n got %+v\nwant %+v", path, line, got, want)
					}
					n++
					var cw, cg connInfo
					okw := parseConn(want.msg, &cw)
					okg := parseConnMemo(got.msg, &cg, tm)
					if okw != okg || okw && !sameConn(&cw, &cg) {
						t.Errorf("%s: %q: conn\n got %v %+v\nwant %v %+v", path, line, okg, cg, okw, cw)
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d records compared", n)
	}
}

func sameRecord(a, b *rawRecord) bool {
	return a.marker == b.marker && a.start == b.start && a.msgStart == b.msgStart && a.level == b.level &&
		a.prefixed == b.prefixed && a.glued == b.glued && a.legacy == b.legacy && a.cut == b.cut &&
		sameSlice(a.host, b.host) && sameSlice(a.pid, b.pid) && sameSlice(a.prefix, b.prefix) &&
		sameSlice(a.tag, b.tag) && sameSlice(a.msg, b.msg) && sameSlice(a.key, b.key)
}

// sameSlice: equal text, both nil or neither, and the same capacity (the
// parser finds offsets from capacities).
func sameSlice(a, b []byte) bool {
	return bytes.Equal(a, b) && (a == nil) == (b == nil) && cap(a) == cap(b)
}

func sameConn(a, b *connInfo) bool {
	ta, tb := a.tr, b.tr
	return a.channel == b.channel && a.connIdx == b.connIdx && a.from == b.from && a.to == b.to && a.dir == b.dir &&
		bytes.Equal(ta.name, tb.name) && bytes.Equal(ta.net, tb.net) && (ta.net == nil) == (tb.net == nil) &&
		ta.class == tb.class && ta.netDev == tb.netDev && ta.gdr == tb.gdr && ta.gdrPCI == tb.gdrPCI &&
		ta.shared == tb.shared && ta.proxy == tb.proxy && ta.ncls == tb.ncls
}

// TestFastPathMatches: fastConn emits what the general path emits, on every
// fixture line, on both synthetic shapes and on lines made to trip it.
func TestFastPathMatches(t *testing.T) {
	var lines [][]byte
	for _, g := range []string{"testdata/logs/*.log", "testdata/issue13/*.log", "testdata/realgpu/*.log"} {
		m, _ := filepath.Glob(g)
		for _, path := range m {
			for _, l := range readLines(t, path) {
				lines = append(lines, []byte(l))
			}
		}
	}
	for _, mix := range []string{"train", "init"} {
		var buf bytes.Buffer
		if _, err := gen.Write(&buf, gen.Options{Size: 1 << 20, Seed: 5, Mix: mix, Ranks: 64, Hosts: 8}); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(buf.Bytes(), []byte("\n"))...)
	}
	for _, l := range []string{
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		// NCCL 2.4's ring connections, and its ring listing (not a connection).
		"h:1:1 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC",
		"h:1:1 [0] NCCL INFO Ring 01 : 1 -> 0 [send] via NET/Socket/0",
		"h:1:1 [0] NCCL INFO Ring 00 :    0   1",
		"h:1:1 [0] NCCL INFO Ring 0 : 7 -> 0 -> 1 comm 0x55 nRanks 08 busId 3000",
		"h:1:1 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via",
		"Ring 00 : 0[0] -> 1[1] via NET/IB/0 h:1:1 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC",
		// Hosts that start like a transport, a fragment that is one.
		"Sgpu:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"NETHOST:1:1 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC",
		"dgx1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"\u00a0NET/IB/0 h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0",
		"SHM/direct h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read  \t",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read | x:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC/read",
		"NET/IB/0 h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0",
		"P2P/IPC h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
		" h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"[1,0]<stdout>:h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		":1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"[pod/a/b] :1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"x->h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"h:1:1 [0] myNCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> via P2P/IPC/read",
		"h:1:1 [0] NCCL INFO Channel 00/0 :    0   1   2   3",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read NCCL WARN x",
		"h:1:1 [0] NCCL INFO\tChannel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		// The same first 8 bytes as the lines above, the marker elsewhere or
		// after another envelope: predictMarker must not trust the place.
		"h:1:1 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC/read",
		"h:1:1 [0]  NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"h:1:1 [0]NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"h:1:1 [0]XNCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		// Another marker where the connection parse passes over it: in a
		// bracket, or glued into the transport text by a torn write. The
		// parse, not a search, must send these to the general path.
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[a NCCL INFO] -> 1[1] via P2P/IPC/read",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[x NCCL WARN] via P2P/IPC/read",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/readh:2:2 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/IPC/read",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA:2:2 [1] NCCL INFO Init COMPLETE",
	} {
		lines = append(lines, []byte(l))
	}
	fast, slow := newLineParser(DefaultMaxLineBytes), newLineParser(DefaultMaxLineBytes)
	slow.slowOnly = true
	slow.seed = fast.seed             // firstSight's lossy cache then forgets alike
	for pass := 0; pass < 2; pass++ { // the second pass hits the memos
		for _, l := range lines {
			compareFastSlow(t, fast, slow, l)
		}
	}
}

// FuzzFastPath: on any line, fastConn and the general path emit the same
// items, with the memos filled by the lines before.
func FuzzFastPath(f *testing.F) {
	for _, l := range []string{
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA",
		"0: gpu-a000-node00:4242:4300 [3] NCCL INFO Channel 07/0 : 3[3] -> 11[3] [receive] via NET/IB/3/GDRDMA",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read NCCL INFO x",
		"[pod/a/b] :1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[a NCCL INFO] -> 1[1] via P2P/IPC/read",
		"h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/readh:2:2 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/IPC/read",
	} {
		f.Add([]byte(l))
	}
	fast, slow := newLineParser(DefaultMaxLineBytes), newLineParser(DefaultMaxLineBytes)
	slow.slowOnly = true
	slow.seed = fast.seed // firstSight's lossy cache then forgets alike
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		compareFastSlow(t, fast, slow, line)
		compareFastSlow(t, fast, slow, line) // memos warm
	})
}

func compareFastSlow(t *testing.T, fast, slow *lineParser, l []byte) {
	t.Helper()
	var fb, sb batch
	for _, noCR := range []bool{true, false} {
		fb.reset()
		sb.reset()
		fast.out, slow.out = &fb, &sb
		fast.sc.noCR, slow.sc.noCR = noCR, noCR
		fast.line(append([]byte(nil), l...), 1)
		slow.line(append([]byte(nil), l...), 1)
		fi, si := inOrder(&fb), inOrder(&sb)
		if fb.records != sb.records || len(fi) != len(si) {
			t.Fatalf("%q: fast %d records %d items, slow %d records %d items", l, fb.records, len(fi), sb.records, len(si))
		}
		for i := range fi {
			f, s := &fi[i], &si[i]
			f.rec.phash, s.rec.phash = 0, 0
			if f.kind != s.kind || f.line != s.line || f.cls != s.cls || f.hash != s.hash ||
				f.phash != s.phash || !sameRecord(&f.rec, &s.rec) || !bytes.Equal(f.text, s.text) ||
				f.cls == KindConnection && !sameConn(&f.conn, &s.conn) {
				t.Errorf("%q item %d:\nfast %+v\nslow %+v", l, i, *f, *s)
			}
		}
	}
}

// inOrder is a batch's items with its connItems made items again, in the
// order the merger applies them.
func inOrder(b *batch) []item {
	var out []item
	c := 0
	conn := func(c *connItem) item {
		return item{kind: itRecord, line: c.line, cls: KindConnection, hash: c.hash, phash: c.phash, conn: c.conn, rec: c.record()}
	}
	for _, it := range b.items {
		for ; c < int(it.conns); c++ {
			out = append(out, conn(&b.conns[c]))
		}
		out = append(out, it)
	}
	for ; c < len(b.conns); c++ {
		out = append(out, conn(&b.conns[c]))
	}
	return out
}

// TestPredictMarkerDistrustsMemo: a line with two records puts its second
// envelope, "NCCL " and all, in the envelope memo. A later line whose
// predicted marker place lands on that envelope's end (the prediction
// slot is a hash, so any line's place can be tried) must not take it for
// the first marker. Without envNoMarker the fast path saw no record in
// "NCCL NCCL INFO NCCL " after fuzzing had filled the slots.
func TestPredictMarkerDistrustsMemo(t *testing.T) {
	fast, slow := newLineParser(DefaultMaxLineBytes), newLineParser(DefaultMaxLineBytes)
	slow.slowOnly = true
	slow.seed = fast.seed
	glued := []byte("h:1:1 [0] NCCL INFO a h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read")
	compareFastSlow(t, fast, slow, glued)
	second := bytes.LastIndex(glued, markNCCL)
	line := []byte("h:1:1 [0] NCCL INFO a h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC/read")
	// The slot without an entry (the memo is searched), then with the
	// memo's entry for that envelope (it is taken as it is).
	entry := fast.sc.envMemo.set(glued[:second]).find(glued[:second], false)
	if entry == nil {
		t.Fatal("the glued line's second envelope is not in the memo")
	}
	for _, e := range []*envMemoEntry{nil, entry} {
		for i := range fast.mpred {
			fast.mpred[i].q, fast.mpred[i].e = uint8(second), e
		}
		compareFastSlow(t, fast, slow, glued)
		compareFastSlow(t, fast, slow, line)
	}
}

// TestEnvTokensNameOnePrefix: a connItem's envelope token stands for one
// envelope text, so the merger may take the thread it found for a token
// without comparing bytes. Four lines in five come from 500 envelopes and
// the rest from 20,000 others, which overflow the memo (2,048 entries):
// entries are overwritten in either way while tokens are handed
// out. Every token must still map to one prefix, and tokens must be
// reused (the memo hits).
func TestEnvTokensNameOnePrefix(t *testing.T) {
	p := newLineParser(DefaultMaxLineBytes)
	var b batch
	p.out = &b
	p.sc.noCR = true
	byToken := map[uint64]string{}
	hits := 0
	rng := uint64(1)
	for n := int64(1); n <= 200_000; n++ {
		rng = rng*6364136223846793005 + 1442695040888963407
		h := rng >> 33 % 20_000
		if rng>>20%5 != 0 {
			h %= 500
		}
		line := fmt.Sprintf("%d: node%d:%d:%d [%d] NCCL INFO Channel %02d/0 : 0[0] -> 1[1] via P2P/IPC/read", h%7, h, 1000+h, 2000+h, h%8, n%32)
		b.reset()
		p.line([]byte(line), n)
		if len(b.conns) != 1 {
			t.Fatalf("%q: %d connItems", line, len(b.conns))
		}
		c := &b.conns[0]
		if c.token == 0 {
			continue
		}
		prefix := string(c.prefix())
		if old, ok := byToken[c.token]; ok {
			hits++
			if old != prefix {
				t.Fatalf("token %d named %q and now %q", c.token, old, prefix)
			}
		}
		byToken[c.token] = prefix
	}
	if hits < 50_000 {
		t.Fatalf("only %d lines reused a token", hits)
	}
}

// TestIndexMarker holds indexMarker to bytes.Index over every line of the
// fixtures and the edge cases of a marker at either end or cut short.
func TestIndexMarker(t *testing.T) {
	var lines []string
	for _, g := range []string{"testdata/logs/*.log", "testdata/issue13/*.log", "testdata/realgpu/*.log"} {
		m, _ := filepath.Glob(g)
		for _, path := range m {
			lines = append(lines, readLines(t, path)...)
		}
	}
	lines = append(lines, "", "N", "NCCL", "NCCL ", "NNCCL ", "xNCCL", "NCC NCCL x", "NCCLNCCL ", "a NCCL INFO b NCCL WARN")
	for _, l := range lines {
		if got, want := indexMarker([]byte(l)), bytes.Index([]byte(l), markNCCL); got != want {
			t.Fatalf("indexMarker(%q) = %d, bytes.Index %d", l, got, want)
		}
	}
}

// TestHostCacheMatchesParsing: the envelope memo's misses take the host
// from the hostCache when the text before it is the same as a recent
// miss's (parseEnvelopeHost). Lines whose texts share the host's end, its
// last byte or its whole text with different starts, pids, tids, devices
// and levels must read as parsing reads them.
func TestHostCacheMatchesParsing(t *testing.T) {
	heads := []string{"", "h", "node-a", "node-b", "[pod-a] ", "[pod-b] ", "[pod-a]:", "[rank3]:", "x ", "y ",
		"*h", "`h", "->h", "39.074Zh", "\x1b[0mh", "[0mh", "NAME ", "a/b/h", "a|h", "ab", "zb", "[1,0]<stdout>:h"}
	em := new(envMemo)
	n := 0
	for pass := 0; pass < 3; pass++ {
		for i, h := range heads {
			for _, j := range []int{0, 1, 12, 345} {
				for _, lvl := range []string{"NCCL INFO a", "f.cc:12 NCCL WARN b"} {
					line := fmt.Sprintf("%s:%d:%d [%d] %s", h, 1000*pass+j, 7+i, j%3, lvl)
					for _, pre := range []string{"", "0: ", "q"} {
						b := []byte(pre + line)
						var plain, memo lineScanner
						plain.reset(b)
						memo.envMemo = em
						memo.reset(b)
						var want, got rawRecord
						for plain.scan(&want) {
							if !memo.scan(&got) {
								t.Fatalf("%q: the memo scanner found fewer records", b)
							}
							plain.finish(&want)
							memo.finish(&got)
							got.phash = 0
							if !sameRecord(&want, &got) {
								t.Errorf("%q:\n got %+v\nwant %+v", b, got, want)
							}
							n++
						}
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d records compared", n)
	}
}

// TestItemSetRecordSetsAll: setRecord writes an item the parser reuses
// from an earlier batch field by field, so it must set every field, as the
// literal it replaces did. A field added to item fails the count.
func TestItemSetRecordSetsAll(t *testing.T) {
	if n := reflect.TypeOf(item{}).NumField(); n != 10 {
		t.Fatalf("item has %d fields, setRecord sets 10: set the new one there and update this test", n)
	}
	r := rawRecord{marker: 3, start: 1, msg: []byte("x"), prefixed: true, phash: 7}
	it := item{kind: itPlain, conns: 9, line: 9, cls: KindComm, ev: 4, hash: 1, phash: 2,
		conn: connInfo{channel: 3, marker: true}, rec: rawRecord{host: []byte("h"), cut: true}, text: []byte("t")}
	it.setRecord(5, 6, KindGDR, &r)
	if want := (item{kind: itRecord, conns: 5, line: 6, cls: KindGDR, rec: r}); !reflect.DeepEqual(it, want) {
		t.Fatalf("got %+v\nwant %+v", it, want)
	}
}
