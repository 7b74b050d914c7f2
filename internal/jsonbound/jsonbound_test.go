package jsonbound

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		in, err string
	}{
		{`{"gpus":[{},{},{}]}`, ""},
		{`{"gpus":[{},{},{},{}]}`, "more than 3 elements"},
		{`[1,2,3]`, ""},
		{`[[[[1]]]]`, "nested deeper than 3"},
		{`{"a" 1}`, "not JSON"},
	} {
		err := Check([]byte(c.in), 3, 3)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: got %v, want %q", c.in, err, c.err)
		}
	}
}
