package nccl

// dedupe recognises exact duplicate records: the same record reached the
// log twice (CloudWatch exports that glue a second copy to each line, a
// NCCL_DEBUG_FILE concatenated with captured stdout, one file given twice).
// It remembers 64-bit hashes of recent records in a table of 4-way
// buckets that starts small and doubles up to dedupeSlots entries, so its
// memory does not grow with the log: a duplicate is caught when fewer than
// about dedupeSlots distinct records came between the two copies. A false
// match needs a 64-bit hash collision.
const (
	dedupeWays       = 4
	dedupeMinBuckets = 1 << 10
	dedupeSlots      = dedupeWays << 16
)

type dedupe struct {
	tab     []uint64
	inserts int // since the table last grew
}

func newDedupe() dedupe {
	return dedupe{tab: make([]uint64, dedupeWays*dedupeMinBuckets)}
}

// dup reports whether key, in the context salt, was seen recently, and
// remembers it.
func (d *dedupe) dup(key []byte, salt uint64) bool {
	return d.dupHash(hash64(key), salt)
}

// dupHash is dup for a key whose hash64 the caller has. The bucket comes
// from the key alone and the salt only changes the fingerprint stored, so
// that touch can bring a bucket into the cache before the salt is known.
func (d *dedupe) dupHash(hk, salt uint64) bool {
	// The salt goes into the low half only: the high half picks the
	// bucket, and grow must find it again from what is stored.
	h := hk ^ uint64(uint32(salt*0x9e3779b97f4a7c15)) | 1 // 0 marks an empty slot
	b := d.bucket(hk)
	for _, x := range b {
		if x == h {
			return true
		}
	}
	d.insert(b, h)
	if d.inserts++; d.inserts > len(d.tab) && len(d.tab) < dedupeSlots {
		d.grow()
	}
	return false
}

func (d *dedupe) bucket(hk uint64) []uint64 {
	n := uint64(len(d.tab) / dedupeWays) // a power of two
	return d.tab[(hk>>32)&(n-1)*dedupeWays:][:dedupeWays]
}

// touch reads the bucket of a key hash. The merger touches the buckets of a
// whole block before it looks them up one by one: independent loads
// overlap their cache misses, the lookups then hit the cache. The table is
// megabytes, and a miss per record was half the merger's time.
func (d *dedupe) touch(hk uint64) uint64 {
	return d.bucket(hk)[0]
}

// insert puts h first in its bucket; the oldest entry falls out.
func (d *dedupe) insert(b []uint64, h uint64) {
	copy(b[1:], b[:dedupeWays-1])
	b[0] = h
}

// grow doubles the table and keeps what it held, oldest first so that
// recency survives.
func (d *dedupe) grow() {
	old := d.tab
	d.tab = make([]uint64, 2*len(old))
	d.inserts = 0
	for i := 0; i < len(old); i += dedupeWays {
		for w := dedupeWays - 1; w >= 0; w-- {
			if h := old[i+w]; h != 0 {
				d.insert(d.bucket(h), h)
			}
		}
	}
}
