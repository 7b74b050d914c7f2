package xidcatalog

import (
	"os"
	"strings"
	"testing"
)

// seedFile adds a pinned vendor file and a few cut-down variants of it.
func seedFile(f *testing.F, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	s := string(raw)
	f.Add(s)
	f.Add(s[:len(s)/2])
	f.Add(s[:len(s)/3])
	f.Add(strings.ReplaceAll(s, " |", ""))
}

// FuzzParse feeds the XID catalogue page parser (tools/xidgen) arbitrary
// text: never a panic, no more rows than lines, and an error says something.
func FuzzParse(f *testing.F) {
	seedFile(f, "../../third_party/nvidia-xid-catalog/xids.txt")
	for _, s := range []string{"", "h\n----\n", "h\n----\nXID |\n", "h\n----\nXID |\n79 |\n|\n||\n", "h\n----\n|||\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := Parse(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if n := strings.Count(s, "\n") + 1; len(rows) > n {
			t.Fatalf("%d rows from %d lines", len(rows), n)
		}
	})
}

// FuzzParseDecode feeds the Xid 144-150 decode sheet parser arbitrary text:
// never a panic, bounded rows, each row's code one of 144-150 and each
// mask's value within its care bits.
func FuzzParseDecode(f *testing.F) {
	seedFile(f, "../../third_party/nvidia-xid-catalog/xid144-150-decode.txt")
	for _, s := range []string{"", "144 |\n", "150 |\n|\n", "144 |\n" + strings.Repeat("x |\n", 13)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rows, guidance, err := ParseDecode(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if n := strings.Count(s, "\n") + 1; len(rows) > n || len(guidance) > n {
			t.Fatalf("%d rows, %d guidance from %d lines", len(rows), len(guidance), n)
		}
		for _, r := range rows {
			if r.Code < 144 || r.Code > 150 {
				t.Fatalf("row code %d", r.Code)
			}
			for _, m := range []Mask{r.V1, r.V2, r.V1Action2, r.V2Action2} {
				if m.Value&^m.Care != 0 {
					t.Fatalf("mask %+v has value bits it does not care about", m)
				}
			}
		}
	})
}

// FuzzParseMask: a mask that parses has its value within its care bits,
// and matches its own value.
func FuzzParseMask(f *testing.F) {
	for _, s := range []string{"00000000000000000000000000000000", "--------------------------------", "0000—0000000000000000000000000001", "1", "0000-1x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMask(s)
		if err != nil {
			return
		}
		if m.Value&^m.Care != 0 || !m.Match(m.Value) {
			t.Fatalf("mask %q: %+v", s, m)
		}
	})
}

// FuzzParseSXID feeds the SXid table parser (NVSentinel's CSV) arbitrary
// text: never a panic, no more rows than lines, codes rising, and an error
// names its line (or says there were no rows).
func FuzzParseSXID(f *testing.F) {
	seedFile(f, "../../"+SXIDSource)
	for _, s := range []string{"", "# x\n\n", "1,a,IGNORE,FATAL\n", "2,a,IGNORE,NONFATAL\n1,b,RESET_GPU,FATAL\n", "x,y,z\n", "1,a,NOPE,FATAL"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ParseSXID(s)
		if err != nil {
			if !strings.Contains(err.Error(), "line ") && err.Error() != "no rows" {
				t.Fatalf("error names no line: %v", err)
			}
			return
		}
		if n := strings.Count(s, "\n") + 1; len(rows) > n {
			t.Fatalf("%d rows from %d lines", len(rows), n)
		}
		for i := 1; i < len(rows); i++ {
			if rows[i].Code <= rows[i-1].Code {
				t.Fatalf("codes not rising: %d then %d", rows[i-1].Code, rows[i].Code)
			}
		}
		for _, r := range rows {
			if _, ok := SXIDActionConst[r.Action]; !ok {
				t.Fatalf("unknown action %q", r.Action)
			}
		}
	})
}
