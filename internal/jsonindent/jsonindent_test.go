package jsonindent

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// encoder is what Marshal must equal: the standard Encoder's output.
func encoder(t testing.TB, v any, indent string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestMatchesEncoder(t *testing.T) {
	type peer struct {
		Peer  int64  `json:"peer"`
		Chans string `json:"channels,omitempty"`
	}
	cases := map[string]any{
		"scalars":      []any{1, -2.5e10, true, false, nil, "x"},
		"empty":        map[string]any{"o": map[string]int{}, "a": []int{}, "s": "", "n": nil},
		"nested":       map[string]any{"a": []any{[]any{}, []any{map[string]any{}}, []any{[]int{1}}}, "b": map[string]any{"c": map[string]any{"d": 1}}},
		"escapes":      []string{`quote " and \ backslash`, "a,b:c{d}[e]", "<html>&", "tab\tnl\nNUL\x00", "\u2028 ✓ \xff"},
		"struct":       []peer{{Peer: 1, Chans: "0-7,16"}, {Peer: 2}},
		"top string":   `{"not": "an object"}`,
		"deep":         [][][][]int{{{{1, 2}, {}}}},
		"keys escaped": map[string]int{`k"ey`: 1, `a\b`: 2, "": 3},
	}
	for name, v := range cases {
		for _, ind := range []string{"  ", "\t", ""} {
			var got bytes.Buffer
			if err := Encode(&got, v, ind); err != nil {
				t.Fatal(err)
			}
			if want := encoder(t, v, ind); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s, indent %q:\ngot  %q\nwant %q", name, ind, got.Bytes(), want)
			}
		}
	}
}

// indentAll is the Writer's output for src written whole.
func indentAll(t *testing.T, src []byte) []byte {
	var b bytes.Buffer
	w := NewWriter(&b, "  ")
	if _, err := w.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzWriter: for any valid JSON, the Writer over its compact form writes
// json.Indent's output; for any input at all it returns without a panic.
func FuzzWriter(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"c\"]"}],"d":{}}`, `"x"`, `[[[]]]`, `{"a":"\\"}`, `]]}`, `"unterminated\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		indentAll(t, src) // any input: no panic
		if !json.Valid(src) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, src); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indentAll(t, compact.Bytes()); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("indenting %q:\ngot  %q\nwant %q", compact.Bytes(), got, want.Bytes())
		}
	})
}

// FuzzWriterSplits: the Writer writes the same however the input is cut
// into writes (a cut may fall inside a string or an escape).
func FuzzWriterSplits(f *testing.F) {
	f.Add([]byte(`{"a":"x\\\"y","b":[1,{"c":[]}],"d":{}}`), uint8(3))
	f.Add([]byte(`["\\","\"",{}]`), uint8(1))
	f.Fuzz(func(t *testing.T, src []byte, step uint8) {
		want := indentAll(t, src)
		var got bytes.Buffer
		w := NewWriter(&got, "  ")
		for rest, k := src, max(int(step), 1); len(rest) > 0; {
			n := min(k, len(rest))
			if m, err := w.Write(rest[:n]); m != n || err != nil {
				t.Fatalf("Write = %d, %v", m, err)
			}
			rest = rest[n:]
			k = k*7%97 + 1 // uneven pieces
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("split by %d:\ngot  %q\nwant %q", step, got.Bytes(), want)
		}
	})
}

// TestWriterError: the underlying writer's error comes back from Encode.
func TestWriterError(t *testing.T) {
	big := make([]int, 100000)
	if err := Encode(failWriter{}, big, "  "); err == nil || err.Error() != "disk full" {
		t.Fatalf("Encode to a failing writer: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
