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

// fixtureMessages is every message of the fixture logs, the issue 13 logs
// and the fuzz corpus, with a few whose parse fails after their words
// matched.
func fixtureMessages(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, g := range []string{"testdata/logs/*.log", "testdata/posted/*.log", "testdata/issue13/*.log", "testdata/fuzz/*/*"} {
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
		// parseGDR's forms (netline.go), which the fixtures lack in part.
		"NET/IB : GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)",
		"GPU Direct RDMA Enabled for GPU ca000 / HCA 0 (distance 4 <= 4), read 1",
		"NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)",
		"NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
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
	return msgs
}

// TestPackedFieldsApplyAlike holds the parser's hand-over to the merger
// (packFields, fields.unpack) to the event classify made: every message of
// the fixtures is applied to one analyzer from its event and to another
// from the event rebuilt out of its packed fields, over a stale event (the
// merger reuses one), and the two must end with the same facts. Every kind
// that needsFields must occur, so that the test covers it.
func TestPackedFieldsApplyAlike(t *testing.T) {
	// The merger reuses one event: unpack must set every field apply
	// reads, whatever the event held. Over a zero event a field left out
	// shows where the record's value is not zero; over one full of other
	// values, where it is.
	var full event
	classify([]byte("NET/IB : GPU Direct RDMA Enabled for GPU 1 / HCA 7 (distance 1 <= 4) (no module)"), &full)
	full.net, full.version, full.env = []byte("stale"), []byte("9.9.9"), envLine{name: []byte("NCCL_STALE"), value: []byte("1")}
	full.dev, full.collnet, full.nvls, full.listed = devList{n: 9, loopback: true}, 9, 9, 99
	full.trace = traceInfo{loc: []byte("stale.cc:1"), rc: 5, thread: []byte("Stale Thread")}
	bases := []event{{}, full}
	direct := NewAnalyzer()
	direct.source("t")
	packed := make([]*Analyzer, len(bases))
	for j := range packed {
		packed[j] = NewAnalyzer()
		packed[j].source("t")
	}
	var seen [numKinds]int
	for i, m := range fixtureMessages(t) {
		var ev event
		k := classify([]byte(m), &ev)
		if !needsFields(k) {
			continue
		}
		seen[k]++
		// From a process of its own, so that the facts show what apply
		// kept per process too.
		host := "h" + strconv.Itoa(i%7)
		r := rawRecord{level: levelInfo, prefixed: true, host: []byte(host), pid: []byte("1"),
			prefix: []byte(host + ":1:1 [0]"), msg: []byte(m), key: []byte(m)}
		at := loc{src: 0, line: int64(i + 1)}
		f := packFields(k, &ev)
		for j, a := range append([]*Analyzer{direct}, packed...) {
			a.cur = at
			th := a.thread(&r)
			if j == 0 {
				a.apply(k, &r, &ev, th, th.proc)
				continue
			}
			e := bases[j-1]
			f.unpack(k, &e)
			a.apply(k, &r, &e, th, th.proc)
		}
	}
	for _, k := range []Kind{KindVersion, KindNetDevices, KindNoDevice, KindNetSelected, KindNetPlugin, KindNetMention,
		KindEnv, KindGDR, KindBootstrap, KindChannels, KindTrace, KindRingOrder} {
		if !needsFields(k) {
			t.Errorf("needsFields(%v) = false", k)
		}
		if seen[k] == 0 {
			t.Errorf("no message of kind %v: the fixtures do not test its fields", k)
		}
	}
	d := direct.Facts()
	for j, a := range packed {
		if p := a.Facts(); !reflect.DeepEqual(d, p) {
			t.Errorf("over base event %d, facts differ:\n direct %+v\n packed %+v", j, d, p)
		}
	}
}
