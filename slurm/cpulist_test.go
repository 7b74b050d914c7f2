package slurm

import (
	"reflect"
	"testing"
)

func TestParseIntList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "", want: nil},
		{in: "0-3,8", want: []int{0, 1, 2, 3, 8}},
		{in: "[0-3]", want: []int{0, 1, 2, 3}},
		{in: "3,1,1,2", want: []int{1, 2, 3}},
		{in: " 0 - 1", bad: true},
		{in: "0-", bad: true},
		{in: "3-1", bad: true},
		{in: "-1", bad: true},
		{in: "a", bad: true},
		{in: "0-99999999", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseIntList(tt.in)
		if tt.bad != (err != nil) || !tt.bad && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseIntList(%q) = %v, %v; want %v (error: %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
	if s := FormatIntList([]int{8, 0, 1, 2, 3, 10, 11}); s != "0-3,8,10,11" {
		t.Errorf("FormatIntList = %q", s)
	}
	if got := Intersect([]int{0, 1, 2, 5}, []int{2, 5, 7}); !reflect.DeepEqual(got, []int{2, 5}) {
		t.Errorf("Intersect = %v", got)
	}
	if got := Subtract([]int{0, 1, 2, 5}, []int{2, 5, 7}); !reflect.DeepEqual(got, []int{0, 1}) {
		t.Errorf("Subtract = %v", got)
	}
}

func FuzzParseIntList(f *testing.F) {
	for _, s := range []string{"0-55,112-167", "[0-3]", "1,2,3", "0-", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseIntList(s)
		if err != nil {
			return
		}
		// Formatting and parsing again gives the same set.
		again, err := ParseIntList(FormatIntList(l))
		if err != nil || !reflect.DeepEqual(again, l) && len(l) > 0 {
			t.Fatalf("%q: round trip %v -> %q -> %v, %v", s, l, FormatIntList(l), again, err)
		}
	})
}
