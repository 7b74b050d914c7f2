package nccl

import (
	"bytes"
	"testing"

	gen "github.com/gpuprobe/gpuprobe/sim/nccllog"
)

// TestHash64: every byte of an input of any length up to 130 changes the
// hash (a lane or the tail that skipped a byte would not notice), inputs
// of different lengths that pad with zeros differ, and the keys of a real
// shaped log do not collide.
func TestHash64(t *testing.T) {
	base := []byte("gpu-a006-node01:377810:378022 [5] NCCL INFO Channel 05/0 : 397[5] -> 405[5] [send] via NET/IB/5/GDRDMA and then some more text to pass 130 bytes")
	for n := 0; n <= 130; n++ {
		b := append([]byte(nil), base[:n]...)
		h := hash64(b)
		if h == 0 {
			t.Fatalf("hash64 of %d bytes is 0, the empty slot", n)
		}
		for i := range b {
			b[i] ^= 0x01
			if hash64(b) == h {
				t.Errorf("length %d: flipping byte %d leaves the hash unchanged", n, i)
			}
			b[i] ^= 0x01
		}
		if n > 0 && hash64(append(b[:n:n], 0)) == h {
			t.Errorf("length %d: a trailing zero byte leaves the hash unchanged", n)
		}
	}
	seen := map[uint64][]byte{}
	for _, r := range benchKeys(t) {
		h := hash64(r)
		if o, ok := seen[h]; ok && !bytes.Equal(o, r) {
			t.Fatalf("collision: %q and %q", o, r)
		}
		seen[h] = r
	}
	if len(seen) < 10000 {
		t.Fatalf("only %d distinct keys", len(seen))
	}
}

// benchKeys is what keyHashParts hashes for each connection line of 4 MiB
// of the init shape: the text after the envelope prefix.
func benchKeys(t testing.TB) [][]byte {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Options{Size: 4 << 20, Seed: 1, Mix: "init"}); err != nil {
		t.Fatal(err)
	}
	log := buf.Bytes()
	var keys [][]byte
	for len(log) > 0 {
		line := log
		if i := bytes.IndexByte(log, '\n'); i >= 0 {
			line, log = log[:i], log[i+1:]
		} else {
			log = nil
		}
		if i := bytes.Index(line, []byte(infoMark)); i > 0 {
			keys = append(keys, line[i:])
		}
	}
	return keys
}

var hashSink uint64

func BenchmarkHash64(b *testing.B) {
	keys := benchKeys(b)
	for b.Loop() {
		for _, k := range keys {
			hashSink += hash64(k)
		}
	}
}
