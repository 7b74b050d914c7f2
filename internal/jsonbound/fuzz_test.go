package jsonbound

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCheck: never a panic; a single valid JSON value within the bounds
// passes; and passing is monotone (what passes tight bounds passes looser).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,3]}`, `[[[[]]]]`, `[` + strings.Repeat(`1,`, 20) + `1]`, `{"a":`, `]`, `{"a":1}{"b":2}`, `"x"`, ``, `{"a":[{"b":[]}],"c":{}}`} {
		f.Add([]byte(s), 3, 3)
	}
	f.Fuzz(func(t *testing.T, data []byte, maxArray, maxDepth int) {
		if maxArray < 0 || maxArray > 1<<10 || maxDepth < 0 || maxDepth > 1<<10 {
			return
		}
		err := Check(data, maxArray, maxDepth)
		if err == nil {
			if Check(data, maxArray+1, maxDepth+1) != nil {
				t.Fatalf("passes %d/%d but not %d/%d", maxArray, maxDepth, maxArray+1, maxDepth+1)
			}
		}
		if json.Valid(data) && Check(data, 1<<30, 1<<30) != nil {
			t.Fatalf("valid JSON refused without bounds: %v", Check(data, 1<<30, 1<<30))
		}
	})
}
