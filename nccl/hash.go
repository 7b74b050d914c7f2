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
	const m1, m2 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db
	h := uint64(len(b))*m1 ^ m2
	// 16 bytes per multiply: records are ~100 bytes and every kept one
	// is hashed.
	for len(b) >= 16 {
		h = mix(binary.LittleEndian.Uint64(b)^m1^h, binary.LittleEndian.Uint64(b[8:])^m2)
		b = b[16:]
	}
	if len(b) >= 8 {
		h = mix(h^binary.LittleEndian.Uint64(b), m2)
		b = b[8:]
	}
	if len(b) > 0 {
		var t uint64
		for i, c := range b {
			t |= uint64(c) << (8 * uint(i))
		}
		h = mix(h^t, m1)
	}
	return mix(h, m1) | 1 // never 0, which marks an empty slot
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
