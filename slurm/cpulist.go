package slurm

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParseIntList reads the kernel/Slurm list form "0-3,8,10-11" (as in
// local_cpulist, Cores=, SLURM_STEP_GPUS). Slurm's bracketed form "[0-3]" is
// accepted too. The result is sorted and free of duplicates.
func ParseIntList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	if s == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("list %q: bad entry %q", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("list %q: bad range %q", s, part)
			}
		}
		if b-a >= MaxExpand-len(out) {
			return nil, fmt.Errorf("list %q: more than %d entries", s, MaxExpand)
		}
		for n := a; n <= b; n++ {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// FormatIntList writes a sorted list back in the compact "0-3,8,10,11" form.
func FormatIntList(list []int) string {
	l := append([]int(nil), list...)
	sort.Ints(l)
	var b strings.Builder
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] <= l[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(l[i]))
		switch {
		case j > i+1:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(l[j]))
		case j == i+1:
			// Two in a row read better as "0,1" than as a range.
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(l[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Intersect returns the members of a that are also in b.
func Intersect(a, b []int) []int {
	in := make(map[int]bool, len(b))
	for _, x := range b {
		in[x] = true
	}
	var out []int
	for _, x := range a {
		if in[x] {
			out = append(out, x)
		}
	}
	return out
}

// Subtract returns the members of a that are not in b.
func Subtract(a, b []int) []int {
	in := make(map[int]bool, len(b))
	for _, x := range b {
		in[x] = true
	}
	var out []int
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
