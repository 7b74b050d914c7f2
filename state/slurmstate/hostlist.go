package slurmstate

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxExpand bounds every list expansion (hostlists, File= ranges, CPU lists,
// SLURM_TASKS_PER_NODE): a typo such as gpu[1-99999999] must be an error, not
// an out-of-memory kill of a health check.
const MaxExpand = 1 << 20

// ExpandHostlist expands a Slurm hostlist expression into host names, in
// order: "gpu[001-003,010],login1" gives gpu001 gpu002 gpu003 gpu010 login1.
// Several bracket groups multiply ("r[1-2]n[1-2]" gives r1n1 r1n2 r2n1 r2n2),
// and a range keeps the zero padding of its lower bound, as Slurm does.
//
// The result is capped at MaxHosts names and MaxHostlistBytes bytes: a 1 KB
// hostlist ("a"×1000 + "[0-1048575]") used to expand to 1.1 GB in 5 s.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	items, err := splitTopLevel(s)
	if err != nil {
		return nil, fmt.Errorf("hostlist %s: %w", quoteShort(s), err)
	}
	bytes := 0
	for _, item := range items {
		if item == "" {
			continue
		}
		hosts, err := expandOne(item, MaxHosts-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %s: %w", quoteShort(s), err)
		}
		for _, h := range hosts {
			bytes += len(h)
		}
		if bytes > MaxHostlistBytes {
			return nil, fmt.Errorf("hostlist %s: expands to more than %d bytes of names (the limit; a typo?)", quoteShort(s), MaxHostlistBytes)
		}
		out = append(out, hosts...)
	}
	return out, nil
}

// MaxHosts bounds the names one hostlist expands to: 65,536, the most
// nodes a Slurm cluster runs with (MAX_SLURM_NODES-sized), and far more
// than any gres.conf File= range. MaxHostlistBytes bounds their total size.
const (
	MaxHosts         = 1 << 16
	MaxHostlistBytes = 4 << 20
)

// quoteShort quotes s for an error, cut to 200 bytes: the expression
// itself may be the oversized input.
func quoteShort(s string) string {
	if len(s) > 200 {
		return fmt.Sprintf("%q... (%d bytes)", s[:200], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// splitTopLevel splits on commas outside brackets and checks that brackets
// balance and do not nest.
func splitTopLevel(s string) ([]string, error) {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			if depth > 0 {
				return nil, fmt.Errorf("nested '[' at offset %d", i)
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, fmt.Errorf("unmatched ']' at offset %d", i)
			}
			depth--
		case ',':
			if depth == 0 {
				items = append(items, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unclosed '['")
	}
	return append(items, strings.TrimSpace(s[start:])), nil
}

// expandOne expands one comma-free (outside brackets) item.
func expandOne(item string, budget int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, " \t") {
			return nil, fmt.Errorf("blank inside host name %q", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("unclosed '[' in %q", item)
	}
	end += open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	nums, err := expandRanges(body, budget)
	if err != nil {
		return nil, err
	}
	tails, err := expandOne(rest, budget)
	if err != nil {
		return nil, err
	}
	if len(nums)*len(tails) > budget {
		return nil, fmt.Errorf("expands to more than %d names (the limit; a typo?)", MaxHosts)
	}
	size := 0
	for _, n := range nums {
		size += (len(prefix) + len(n)) * len(tails)
	}
	for _, t := range tails {
		size += len(t) * len(nums)
	}
	if size > MaxHostlistBytes {
		return nil, fmt.Errorf("expands to more than %d bytes of names (the limit; a typo?)", MaxHostlistBytes)
	}
	out := make([]string, 0, len(nums)*len(tails))
	for _, n := range nums {
		for _, t := range tails {
			out = append(out, prefix+n+t)
		}
	}
	return out, nil
}

// expandRanges expands "001-003,7" into zero-padded strings.
func expandRanges(body string, budget int) ([]string, error) {
	if strings.TrimSpace(body) == "" {
		return nil, fmt.Errorf("empty brackets")
	}
	var out []string
	for _, part := range strings.Split(body, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		if !isDigits(lo) || (isRange && !isDigits(hi)) {
			return nil, fmt.Errorf("bad range %q: want N or N-M with decimal numbers", part)
		}
		if !isRange {
			out = append(out, lo)
			continue
		}
		a, errA := strconv.ParseUint(lo, 10, 63)
		b, errB := strconv.ParseUint(hi, 10, 63)
		if errA != nil || errB != nil {
			return nil, fmt.Errorf("bad range %q: number too large", part)
		}
		if b < a {
			return nil, fmt.Errorf("bad range %q: end before start", part)
		}
		if b-a >= uint64(budget-len(out)) {
			return nil, fmt.Errorf("range %q expands to more than %d names (the limit; a typo?)", part, MaxHosts)
		}
		width := len(lo)
		for n := a; n <= b; n++ {
			out = append(out, pad(n, width))
		}
	}
	return out, nil
}

func pad(n uint64, width int) string {
	s := strconv.FormatUint(n, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ExpandTasksPerNode expands SLURM_TASKS_PER_NODE ("2(x3),1") into one count
// per node, in node order.
func ExpandTasksPerNode(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		count, rep := part, "1"
		if i := strings.IndexByte(part, '('); i >= 0 {
			if !strings.HasPrefix(part[i:], "(x") || !strings.HasSuffix(part, ")") {
				return nil, fmt.Errorf("tasks per node %q: bad repeat %q, want N(xM)", s, part)
			}
			count, rep = part[:i], part[i+2:len(part)-1]
		}
		n, err1 := strconv.Atoi(count)
		r, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || n < 0 || r < 1 {
			return nil, fmt.Errorf("tasks per node %q: bad entry %q", s, part)
		}
		if r > MaxExpand-len(out) {
			return nil, fmt.Errorf("tasks per node %q: more than %d nodes", s, MaxExpand)
		}
		for i := 0; i < r; i++ {
			out = append(out, n)
		}
	}
	return out, nil
}
