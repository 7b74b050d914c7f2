package topo

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// maxCPU bounds a parsed CPU list: real machines stay far below it, and a
// corrupt "0-4294967295" must not allocate gigabytes.
const maxCPU = 1 << 16

// ParseCPUList reads the kernel's list format ("0-55,112-167", "3", "", with
// an optional ":stride" as bitmap_parselist accepts) into sorted, distinct
// CPU numbers.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	set := map[int]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		rng, strideStr, hasStride := strings.Cut(item, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		first, err := cpuNumber(lo, s)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if last, err = cpuNumber(hi, s); err != nil {
				return nil, err
			}
		}
		if last < first {
			return nil, fmt.Errorf("CPU list %q: range %q runs backwards", s, item)
		}
		stride := 1
		if hasStride {
			// bitmap_parselist spells it "first-last:used/group"; only the
			// plain step form is seen in sysfs, so accept "N" and "N/N".
			used, _, _ := strings.Cut(strideStr, "/")
			st, err := strconv.Atoi(used)
			if err != nil || st < 1 {
				return nil, fmt.Errorf("CPU list %q: bad stride in %q", s, item)
			}
			stride = st
		}
		for c := first; c <= last; c += stride {
			set[c] = true
		}
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

func cpuNumber(s, all string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n >= maxCPU {
		return 0, fmt.Errorf("CPU list %q: bad CPU number %q", all, s)
	}
	return n, nil
}

// FormatCPUList writes sorted CPU numbers back in the kernel's list format.
func FormatCPUList(cpus []int) string {
	var sb strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			sb.WriteByte('-')
			sb.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return sb.String()
}
