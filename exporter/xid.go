package exporter

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
)

// XIDCounter counts XID events for the life of the daemon, so an XID between
// two scrapes is never lost (dcgm-exporter exports only the last value).
// Events from the kernel log carry a sequence number and are counted once
// however often the ring buffer is re-read.
type XIDCounter struct {
	// Config is the daemon's XID configuration (xid.critical, xid.ignore).
	// The severity label is check.XIDSeverityFor under the configuration
	// the latest snapshot was judged with, so it agrees with the gpu.xid
	// verdict; Config stands in for it only before the first snapshot (an
	// NVML event can arrive before the first collection ends).
	Config check.XIDConfig
	// NVMLEvents is set while NVML's event watcher feeds the counter; kernel
	// log events are then ignored, or every XID would count twice.
	NVMLEvents atomic.Bool
	mu         sync.Mutex
	// gen moves whenever a series changes, so the scrape cache knows to
	// re-render between collections (NVML events arrive at any time).
	gen    atomic.Uint64
	counts map[xidKey]*xidCount
	seen   seqSet
}

type xidKey struct {
	gpu, uuid, bus string
	code           int
}

type xidCount struct {
	n    float64
	last time.Time
}

// maxSeen bounds the memory of kernel sequence numbers; the ring buffer
// holds far fewer NVRM lines than this.
const maxSeen = 1 << 16

// NewXIDCounter returns an empty counter.
func NewXIDCounter() *XIDCounter {
	return &XIDCounter{counts: map[xidKey]*xidCount{}, seen: newSeqSet(maxSeen)}
}

// seqSet remembers the most recent n sequence numbers: when full it forgets
// the oldest one, never all at once. (Clearing the whole set at 65,536 made
// the next re-read of the ring buffer count every XID in it again.)
type seqSet struct {
	in   map[uint64]struct{}
	ring []uint64
	next int
	full bool
}

func newSeqSet(n int) seqSet {
	return seqSet{in: make(map[uint64]struct{}, n), ring: make([]uint64, n)}
}

// add records seq and reports whether it was new.
func (s *seqSet) add(seq uint64) bool {
	if _, dup := s.in[seq]; dup {
		return false
	}
	if s.full {
		delete(s.in, s.ring[s.next])
	}
	s.ring[s.next] = seq
	s.in[seq] = struct{}{}
	s.next++
	if s.next == len(s.ring) {
		s.next, s.full = 0, true
	}
	return true
}

// GPU identifies the device an event belongs to (empty when unknown).
type GPU struct{ Index, UUID, PCIBusID string }

// Add counts one event. seq is the kernel record number (0 when the event
// came from NVML, which delivers each event once).
func (c *XIDCounter) Add(g GPU, code int, at time.Time, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq != 0 && !c.seen.add(seq) {
		return
	}
	k := xidKey{g.Index, g.UUID, g.PCIBusID, code}
	x := c.counts[k]
	if x == nil {
		x = &xidCount{}
		c.counts[k] = x
	}
	x.n++
	if at.After(x.last) {
		x.last = at
	}
	c.gen.Add(1)
}

// collect emits the counts, each labelled with the severity gpu.xid gives
// its code under cfg (the latest snapshot's configuration; nil: none yet).
func (c *XIDCounter) collect(em emitter, cfg *check.Config) {
	xc := c.Config
	if cfg != nil {
		xc = cfg.XID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, x := range c.counts {
		sev := string(check.XIDSeverityFor(k.code, xc))
		labels := []string{k.gpu, k.uuid, k.bus, strconv.Itoa(k.code), sev}
		em.counter(dXIDs, x.n, labels...)
		if !x.last.IsZero() {
			em.gauge(dXIDLast, float64(x.last.UnixNano())/1e9, labels...)
		}
	}
}
