package nccl

import (
	"bytes"
	"path/filepath"
	"testing"
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
