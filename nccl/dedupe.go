package nccl

// dedupe recognises exact duplicate records: the same record reached the
// log twice (CloudWatch exports that glue a second copy to each line, a
// NCCL_DEBUG_FILE concatenated with captured stdout, one file given twice).
// It remembers 64-bit hashes of recent records in a fixed table of 4-way
// buckets, so its memory does not grow with the log. Two copies of a record
// are one when fewer than about 50,000 distinct records came between them
// (TestDedupeWindow: a log of 20,000 records given twice counts 0.3% of
// its copies again, one of 50,000 counts 7% again): a record whose bucket overflowed is counted
// twice. A false match needs a 64-bit hash collision.
//
// The table is fixed on purpose: a table that grows evicts most of what
// it holds while it grows, and one read at a random place per record must
// stay small enough for the CPU's caches (the sizes tried, and what they
// cost, are in docs/nccl.md). TestDedupeWindow holds the window.
const (
	dedupeWays    = 4
	dedupeBuckets = 1 << 15
	dedupeSlots   = dedupeWays * dedupeBuckets
)

// The bucket shift in dupHash is written out for 4 ways.
var _ [dedupeWays - 4]struct{} = [0]struct{}{}

// The table is an array of buckets of fixed size, not a slice: the masked
// bucket index needs no bounds check, and the four ways are compared
// unrolled, which brings dupHash within the compiler's inlining budget
// (the merger calls it for every record it applies). The slice, its
// bounds checks and the call were a third of what de-duplicating a record
// cost the merger: −1.0% of all instructions on the real shape
// (docs/nccl.md). Invariant: a key's bucket is (hk>>32) masked, the same
// slots as the slice held, so touch and dupHash read one bucket and the
// window is unchanged; TestDedupeWindow holds the window, TestDedupe and
// TestDedupeKeepsOtherCommunicators what counts as a duplicate.
type dedupe struct {
	tab *[dedupeBuckets][dedupeWays]uint64
}

func newDedupe() dedupe {
	return dedupe{tab: new([dedupeBuckets][dedupeWays]uint64)}
}

// dup reports whether key, in the context salt, was seen recently, and
// remembers it.
func (d *dedupe) dup(key []byte, salt uint64) bool {
	return d.dupHash(hash64(key), salt)
}

// keyHash is the hash de-duplication remembers a record by: hash64 of its
// key, except that for a record with an envelope the envelope's part is
// its prefix's hash64 (phash, which the envelope memo keeps), mixed with
// hash64 of the rest. The split is read from the key's own bytes, so
// equal keys hash equal on every path; and the parser's common line
// hashes 60 bytes instead of 100.
func keyHash(r *rawRecord) uint64 {
	if !r.prefixed || len(r.key) < len(r.prefix) {
		return hash64(r.key)
	}
	ph := r.phash
	if ph == 0 {
		ph = hash64(r.prefix)
	}
	return keyHashParts(ph, r.key[len(r.prefix):])
}

// keyHashParts is keyHash of a key made of a prefix whose hash64 is ph and
// the rest.
func keyHashParts(ph uint64, rest []byte) uint64 {
	const m1, m2 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db
	return mix(ph^m1, hash64(rest)^m2) | 1
}

// dupHash is dup for a key whose hash the caller has (hash64, or keyHash
// for a record). The bucket comes
// from the key alone and the salt only changes the fingerprint stored, so
// that touch can bring a bucket into the cache before the salt is known.
func (d *dedupe) dupHash(hk, salt uint64) bool {
	// The salt goes into the low half only: the high half picks the bucket.
	h := hk ^ uint64(uint32(salt*0x9e3779b97f4a7c15)) | 1 // 0 marks an empty slot
	b := &d.tab[(hk>>32)&(dedupeBuckets-1)]
	if b[0] == h || b[1] == h || b[2] == h || b[3] == h {
		return true
	}
	// The new hash goes first; the oldest falls out. Element by element,
	// since copy() of the three calls memmove: correct for dedupeWays ==
	// 4 only, which the declaration before the type enforces. (The
	// literal costs the inliner less than a four-way assignment.)
	*b = [dedupeWays]uint64{h, b[0], b[1], b[2]}
	return false
}

func (d *dedupe) bucket(hk uint64) *[dedupeWays]uint64 {
	return &d.tab[(hk>>32)&(dedupeBuckets-1)]
}

// touch reads the bucket of a key hash. The merger touches the buckets of a
// whole block before it looks them up one by one: independent loads
// overlap their cache misses, the lookups then hit the cache. It changes
// no state, so it cannot change a verdict; the bucket depends on the key
// hash alone, not the salt (dupHash), so that the touch finds the bucket
// the lookup reads. It pays on connection-heavy logs (docs/nccl.md).
func (d *dedupe) touch(hk uint64) uint64 {
	return d.bucket(hk)[0]
}
