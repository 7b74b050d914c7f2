package nccl

import "hash/maphash"

// dedupe recognises exact duplicate records: the same record reached the
// log twice (CloudWatch exports that glue a second copy to each line, a
// NCCL_DEBUG_FILE concatenated with captured stdout, one file given twice).
// It remembers 64-bit hashes of recent records in a fixed table of 4-way
// buckets, so its memory does not grow with the log: a duplicate is caught
// when fewer than about dedupeSlots distinct records came between the two
// copies. A false match needs a 64-bit hash collision.
const (
	dedupeWays    = 4
	dedupeBuckets = 1 << 16
	dedupeSlots   = dedupeWays * dedupeBuckets
)

type dedupe struct {
	seed maphash.Seed
	tab  []uint64
}

func newDedupe() dedupe {
	return dedupe{seed: maphash.MakeSeed(), tab: make([]uint64, dedupeSlots)}
}

// dup reports whether key was seen recently, and remembers it.
func (d *dedupe) dup(key []byte) bool {
	h := maphash.Bytes(d.seed, key) | 1 // 0 marks an empty slot
	b := d.tab[(h>>40)%dedupeBuckets*dedupeWays:][:dedupeWays]
	for _, x := range b {
		if x == h {
			return true
		}
	}
	// Most recent first; the oldest falls out.
	copy(b[1:], b[:dedupeWays-1])
	b[0] = h
	return false
}
