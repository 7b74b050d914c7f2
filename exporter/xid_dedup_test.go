package exporter

import (
	"testing"
	"time"
)

func xidTotal(c *XIDCounter) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0.0
	for _, x := range c.counts {
		t += x.n
	}
	return t
}

// The bug: the de-duplication set was cleared at 65,536 records, so the next
// re-read of the ring buffer counted every XID still in it again.
func TestXIDDedupSurvivesOverflow(t *testing.T) {
	c := NewXIDCounter()
	g := GPU{Index: "0", PCIBusID: "0000:19:00.0"}
	at := time.Unix(1700000000, 0)
	const n = 70000
	for seq := uint64(1); seq <= n; seq++ {
		c.Add(g, 79, at, seq)
	}
	if got := xidTotal(c); got != n {
		t.Fatalf("counted %v, want %d", got, n)
	}
	// A re-read of the ring buffer: its last 6,000 records again.
	for seq := uint64(n - 6000 + 1); seq <= n; seq++ {
		c.Add(g, 79, at, seq)
	}
	if got := xidTotal(c); got != n {
		t.Fatalf("after re-reading the last 6,000 records: counted %v, want %d", got, n)
	}
	if len(c.seen.in) != maxSeen {
		t.Errorf("remembers %d sequence numbers, want the bound %d", len(c.seen.in), maxSeen)
	}
}
