package nccl

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
)

// TestThreadHashCollisions: hash64 is unseeded and a multiply-mix, so an
// envelope whose second word is the constant it is xored with hashes the
// same whatever its first word. Two such envelopes alternating replaced
// each other in the thread table while each took a thread of the slab:
// past maxThreads lines the analyzer indexed past the slab and panicked on
// a log its writer chose.
func TestThreadHashCollisions(t *testing.T) {
	var m2 [8]byte
	binary.LittleEndian.PutUint64(m2[:], 0xe7037ed1a0b428db)
	host := func(c byte) string {
		return string(bytes.Repeat([]byte{c}, 8)) + string(m2[:]) + "hostnamexyz:123:456 [0]"
	}
	a, b := host('a'), host('b')
	if hash64([]byte(a)) != hash64([]byte(b)) {
		t.Skip("the envelopes no longer collide: find another pair")
	}
	var buf bytes.Buffer
	for i := 0; i < maxThreads+10; i++ {
		fmt.Fprintf(&buf, "%s NCCL INFO comm 0x%x rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n", a, i)
		fmt.Fprintf(&buf, "%s NCCL INFO comm 0x%x rank 1 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n", b, i)
	}
	if _, err := Analyze(context.Background(), Input{Name: "collide", Reader: &buf}); err != nil {
		t.Fatal(err)
	}
}
