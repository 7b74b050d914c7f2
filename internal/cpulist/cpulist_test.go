package cpulist

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"", nil, false},
		{"3", []int{3}, false},
		{"0-3,8", []int{0, 1, 2, 3, 8}, false},
		{"[0-1,5]", []int{0, 1, 5}, false},
		{"5,1,1,0", []int{0, 1, 5}, false},
		{"0-7:2", []int{0, 2, 4, 6}, false},
		{"0-7:2/4", []int{0, 1, 4, 5}, false},
		{"3-1", nil, true},
		{"0-4294967295", nil, true},
		{"-1", nil, true},
		{"a", nil, true},
		{"0-7:0", nil, true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v, err %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0, 1}, "0,1"},
		{[]int{112, 0, 1, 2, 113, 5}, "0-2,5,112,113"},
		{[]int{4, 4, 4}, "4"},
	} {
		if got := Format(tc.in); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSets(t *testing.T) {
	if got := Intersect([]int{0, 1, 2, 3}, []int{3, 1, 9}); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("Intersect = %v", got)
	}
	if got := Subtract([]int{0, 1, 2, 3}, []int{3, 1, 9}); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("Subtract = %v", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0-55,112-167", "[0-3]", "0-7:2/4", "", "1-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(Format(l))
		if err != nil || !slices.Equal(again, l) {
			t.Fatalf("%q -> %v -> %q does not round-trip", s, l, Format(l))
		}
	})
}
