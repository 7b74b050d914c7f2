package nccl

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestQuickClassify holds the invariant of event.quick over every record
// of the fixture logs, the issue 13 logs and the fuzz corpus, and a few
// messages whose parse fails after their words matched: a quick kind is
// KindOther only where the full one is, and a connection is the same
// connection either way.
func TestQuickClassify(t *testing.T) {
	var files []string
	for _, g := range []string{"testdata/logs/*.log", "testdata/issue13/*.log", "testdata/fuzz/*/*"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 40 {
		t.Fatalf("found %d files", len(files))
	}
	msgs := []string{
		"comm 0x1 rank x nranks", "comm ", "rank nope", "nranks ", "ncclCommInitRank comm 0xzz",
		"NCCL_IB_DISABLE", "NCCL_IB_DISABLE maybe", "GPU Direct RDMA", "NET/IB : GPU Direct RDMA",
		"Bootstrap : Using ", "NET/IB : Using [", "DMA-BUF is available on GPU device 2", "16 coll channels", "Channel 00 : 0", "Channel 00/02 :    0   1   2",
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(f, "fuzz") {
			// "go test fuzz v1" files hold Go string literals.
			for _, l := range strings.Split(string(raw), "\n") {
				if s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(l, "[]byte("), ")")); err == nil {
					raw = append(raw, s...)
					raw = append(raw, '\n')
				}
			}
		}
		for _, line := range bytes.Split(raw, []byte("\n")) {
			msgs = append(msgs, string(bytes.TrimSpace(line)))
			for _, r := range ParseLine(line) {
				msgs = append(msgs, r.Message)
			}
		}
	}
	var kinds [numKinds]int
	for _, m := range msgs {
		var full, quick event
		quick.quick = true
		kf, kq := classify([]byte(m), &full), classify([]byte(m), &quick)
		kinds[kf]++
		if kf != KindOther && kq == KindOther {
			t.Errorf("%q: quick kind other, full kind %v", m, kf)
		}
		if (kf == KindConnection) != (kq == KindConnection) || kf == KindConnection && !reflect.DeepEqual(full.conn, quick.conn) {
			t.Errorf("%q: connection %v/%+v in full, %v/%+v quick", m, kf, full.conn, kq, quick.conn)
		}
	}
	for k, n := range kinds {
		if n == 0 && Kind(k) != KindWarn { // WARN is a level, not a message
			t.Errorf("no message of kind %v: the corpus does not test it", Kind(k))
		}
	}
}
