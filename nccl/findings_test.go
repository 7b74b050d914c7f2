package nccl

import "testing"

// TestFindingsRepeat holds add and repeat to one count: a repeat is
// counted (with its line, up to maxFindingLines) and allocates nothing, a
// new finding is left to add, and a full table counts the line as dropped.
func TestFindingsRepeat(t *testing.T) {
	var f findings
	if f.repeat("nccl_warn", []byte("net_ib.cc:1"), loc{line: 1}) {
		t.Fatal("repeat reported a finding that was never added")
	}
	f.add("nccl_warn", "net_ib.cc:1", "text", "h:1", loc{line: 1})
	for i := 2; i <= 8; i++ {
		if !f.repeat("nccl_warn", []byte("net_ib.cc:1"), loc{line: int64(i)}) {
			t.Fatalf("repeat %d: not counted", i)
		}
	}
	if f.repeat("nccl_warn", []byte("net_ib.cc:2"), loc{line: 9}) {
		t.Fatal("another key counted as a repeat")
	}
	l := f.list()
	if len(l) != 1 || l[0].Count != 8 || len(l[0].Lines) != maxFindingLines || l[0].Message != "text" {
		t.Fatalf("findings = %+v", l)
	}
	key := []byte("net_ib.cc:1")
	if n := testing.AllocsPerRun(100, func() { f.repeat("nccl_warn", key, loc{line: 10}) }); n != 0 {
		t.Errorf("a repeat allocated %v times", n)
	}
	var full findings
	for i := range maxFindings {
		full.add("c", itoa(int64(i)), "m", "", loc{line: 1})
	}
	if !full.repeat("c", []byte("new"), loc{line: 2}) || full.dropped != 1 {
		t.Errorf("a new finding in a full table: dropped = %d, want 1", full.dropped)
	}
}
