// Package cpulist reads and writes the kernel's list format ("0-55,112-167"),
// which sysfs (local_cpulist), cgroups (cpuset.cpus), Slurm (Cores=,
// SLURM_STEP_GPUS, SLURM_CPU_BIND lists) and nvidia-smi all use.
package cpulist

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Max bounds a parsed list: real machines and GPU counts stay far below it,
// and a corrupt "0-4294967295" must not allocate gigabytes.
const Max = 1 << 16

// Parse reads "0-3,8,10-11" into sorted, distinct numbers. It accepts Slurm's
// bracketed form "[0-3]" and the kernel's stride form "0-15:2" (bitmap_parselist;
// "N/M" takes the first N of each M). Empty input is an empty list.
func Parse(s string) ([]int, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		t = t[1 : len(t)-1]
	}
	if t == "" {
		return nil, nil
	}
	set := map[int]bool{}
	for _, item := range strings.Split(t, ",") {
		item = strings.TrimSpace(item)
		rng, strideStr, hasStride := strings.Cut(item, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		first, err := number(lo, s)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if last, err = number(hi, s); err != nil {
				return nil, err
			}
		}
		if last < first {
			return nil, fmt.Errorf("list %q: range %q runs backwards", s, item)
		}
		used, group := 1, 1
		if hasStride {
			u, g, hasGroup := strings.Cut(strideStr, "/")
			if used, err = strconv.Atoi(u); err != nil || used < 1 {
				return nil, fmt.Errorf("list %q: bad stride in %q", s, item)
			}
			group = used
			if hasGroup {
				if group, err = strconv.Atoi(g); err != nil || group < used {
					return nil, fmt.Errorf("list %q: bad stride in %q", s, item)
				}
			} else {
				// "0-15:2" means every second one.
				used, group = 1, used
			}
		}
		for c := first; c <= last; c += group {
			for k := 0; k < used && c+k <= last; k++ {
				set[c+k] = true
			}
		}
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}

func number(s, all string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n >= Max {
		return 0, fmt.Errorf("list %q: bad number %q (want 0..%d)", all, s, Max-1)
	}
	return n, nil
}

// Format writes numbers in the compact list form ("0-3,8"; a pair as "0,1").
// The input need not be sorted or distinct.
func Format(list []int) string {
	l := slices.Clone(list)
	slices.Sort(l)
	l = slices.Compact(l)
	var sb strings.Builder
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] == l[j]+1 {
			j++
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(l[i]))
		switch {
		case j > i+1:
			sb.WriteByte('-')
			sb.WriteString(strconv.Itoa(l[j]))
		case j == i+1:
			// Two in a row read better as "0,1" (GPU lists are short).
			sb.WriteByte(',')
			sb.WriteString(strconv.Itoa(l[j]))
		}
		i = j + 1
	}
	return sb.String()
}

// Intersect returns the members of a that are also in b, in a's order.
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

// Subtract returns the members of a that are not in b, in a's order.
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
