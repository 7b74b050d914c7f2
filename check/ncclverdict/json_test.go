package ncclverdict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
)

func readVerdict(t testing.TB, name string) ([]byte, *Verdict) {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	v := new(Verdict)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return data, v
}

// TestWriteJSONBytes holds WriteJSON to the bytes the Encoder wrote for
// the same verdicts before WriteJSON stopped using it (testdata/README.md):
// scripts that diff or hash the JSON see no change.
func TestWriteJSONBytes(t *testing.T) {
	for _, name := range []string{"verdict-005.json", "verdict-ncclgen.json"} {
		want, v := readVerdict(t, name)
		var got bytes.Buffer
		if err := v.WriteJSON(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			i := 0
			for i < got.Len() && i < len(want) && got.Bytes()[i] == want[i] {
				i++
			}
			t.Errorf("%s: WriteJSON differs from byte %d of %d:\n%q", name, i, len(want), got.Bytes()[max(0, i-60):min(got.Len(), i+60)])
		}
	}
}

// bigVerdict is the shape of the verdict `make bench-nccl` writes for its
// 512-rank init log (3 MB): two communicators of 512 ranks with 15-16
// peers each, here the ncclgen verdict's 16 ranks repeated.
func bigVerdict(b *testing.B) *Verdict {
	_, v := readVerdict(b, "verdict-ncclgen.json")
	c := &v.Communicators[0]
	ranks := c.Ranks
	for len(c.Ranks) < 512 {
		for _, r := range ranks {
			r.Rank = int64(len(c.Ranks))
			r.Host = fmt.Sprintf("gpu-a000-node%02d", r.Rank/8)
			c.Ranks = append(c.Ranks, r)
		}
	}
	v.Communicators = append(v.Communicators, *c)
	return v
}

func BenchmarkWriteJSON(b *testing.B) {
	v := bigVerdict(b)
	var size bytes.Buffer
	if err := v.WriteJSON(&size); err != nil {
		b.Fatal(err)
	}
	b.Run("jsonindent", func(b *testing.B) {
		b.SetBytes(int64(size.Len()))
		for b.Loop() {
			if err := v.WriteJSON(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoder", func(b *testing.B) {
		b.SetBytes(int64(size.Len()))
		for b.Loop() {
			enc := json.NewEncoder(io.Discard)
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
