package nccl

import (
	"fmt"
	"strings"
	"testing"
)

// TestWarnMemo: warnClass answers from its memo (warnMemo) what it would
// make of the message afresh, whatever came before: messages that share
// a slot, that are too long for the memo, empty, IB completion errors
// with different keys, every rule.
func TestWarnMemo(t *testing.T) {
	msgs := []string{"", "x", "NET/IB : oops", strings.Repeat("y", warnMemoText+1) + " Bootstrap", strings.Repeat("z", warnMemoText)}
	for _, r := range warnRules {
		msgs = append(msgs, "a "+string(r.match)+" b", "NET/IBext : "+string(r.match))
	}
	for i := range 200 {
		msgs = append(msgs, fmt.Sprintf("NET/IB : Got completion from peer 10.0.0.%d<1> with status=%d opcode=0 len=0 vendor err %d (Recv)", i, i%13, i%7))
		msgs = append(msgs, fmt.Sprintf("some warning %d", i))
	}
	a := NewAnalyzer()
	for round := range 3 {
		for i := range msgs {
			m := msgs[(i*7+round*31)%len(msgs)]
			got := *a.warnClass([]byte(m))
			want := *new(Analyzer).warnClass([]byte(m))
			if fmt.Sprint(got.rule, got.ib, string(got.key)) != fmt.Sprint(want.rule, want.ib, string(want.key)) {
				t.Fatalf("round %d %q: memo %d %v %q, afresh %d %v %q", round, m, got.rule, got.ib, got.key, want.rule, want.ib, want.key)
			}
		}
	}
}

// TestNetClassMemo: netClass answers from its memo what classifyNet says,
// whatever came before: names that share a slot, too long for the memo,
// empty, with blanks.
func TestNetClassMemo(t *testing.T) {
	names := []string{"", " ", "IB", "IBext_v8", "Socket", " Socket ", "AWS Libfabric", "OFI", "aws-ofi-nccl", "FastSocket",
		"NCCL RDMA Plugin", "Sock", "IC", "JB", strings.Repeat("I", netMemoText+3), strings.Repeat("S", netMemoText-1)}
	for i := range 64 {
		names = append(names, fmt.Sprintf("mod%c%d", 'A'+i%26, i))
	}
	a := NewAnalyzer()
	for round := range 4 {
		for i := range names {
			n := names[(i*5+round*17)%len(names)]
			if got, want := a.netClass([]byte(n)), classifyNet([]byte(n)); got != want {
				t.Fatalf("round %d %q: memo %v, classifyNet %v", round, n, got, want)
			}
		}
	}
}
