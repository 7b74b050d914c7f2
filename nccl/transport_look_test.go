package nccl

import (
	"bytes"
	"path/filepath"
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
