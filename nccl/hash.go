package nccl

import (
	"encoding/binary"
	"math/bits"
)

// hash64 is a fast, deterministic, non-cryptographic hash (multiply-mix in
// the style of wyhash). Determinism matters: the same log must give the
// same report on every run, and a seeded hash would make de-duplication
// evict differently each time. A collision costs at most one record
// wrongly taken for a duplicate; it cannot crash or grow anything.
func hash64(b []byte) uint64 {
	const m1, m2, m3 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db, 0x8ebc6af09c88c6e3
	le := binary.LittleEndian
	n := len(b)
	switch {
	case n >= 16:
		// Two lanes of 16 bytes per step, so that two multiplies run at
		// once, and the last 16 bytes read in one go, overlapping what the
		// lanes took: a record's key (~60 bytes) costs three steps, where
		// one lane and a byte loop for the tail cost five and up to 7
		// loads. TestHash64 holds the value of every length to the
		// reference; BenchmarkHash64 measures it.
		h1 := uint64(n)*m1 ^ m2
		h2 := uint64(n)*m3 ^ m1
		p := b
		for len(p) > 32 {
			h1 = mix(le.Uint64(p)^m1^h1, le.Uint64(p[8:])^m2)
			h2 = mix(le.Uint64(p[16:])^m3^h2, le.Uint64(p[24:])^m1)
			p = p[32:]
		}
		if len(p) > 16 {
			h1 = mix(le.Uint64(p)^m1^h1, le.Uint64(p[8:])^m2)
		}
		h2 = mix(le.Uint64(b[n-16:])^m3^h2, le.Uint64(b[n-8:])^m1)
		return mix(h1^m2, h2^m3) | 1 // never 0, which marks an empty slot
	case n >= 8:
		h := mix(le.Uint64(b)^m1^uint64(n)*m2, le.Uint64(b[n-8:])^m3)
		return mix(h, m1) | 1
	default:
		var t uint64
		for i, c := range b {
			t |= uint64(c) << (8 * uint(i))
		}
		h := mix(t^m1^uint64(n)*m2, m3)
		return mix(h, m1) | 1
	}
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
