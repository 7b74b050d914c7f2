// Package jsonindent writes JSON indented as encoding/json's Encoder does
// with SetIndent("", indent), in one pass over json.Marshal's compact
// output. The Encoder marshals compactly too and then re-reads the result
// with its validating scanner to indent it; for the NCCL analyzer's
// largest verdicts (3 MB, a peer table per rank) that second pass and the
// buffer it grows took 80% of the time spent writing, on one core, after
// the log was read (BenchmarkMarshal).
package jsonindent

import (
	"bytes"
	"encoding/json"
)

// Marshal returns v as json.Marshal would, indented by indent per level
// with a trailing newline: the bytes json.Encoder with SetIndent("",
// indent) writes (TestMatchesEncoder, FuzzAppend). An empty indent, as for
// the Encoder, means no indentation.
func Marshal(v any, indent string) ([]byte, error) {
	compact, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if indent == "" {
		return append(compact, '\n'), nil
	}
	// Indentation adds about one byte in two to a deep document.
	out := Append(make([]byte, 0, len(compact)*2+1), compact, indent)
	return append(out, '\n'), nil
}

// Append appends src, which must be compact JSON as json.Marshal or
// json.Compact produce it, to dst with one value or member per line, and
// returns the extended slice. It does not validate src: any other input
// gives some output, never a panic.
func Append(dst, src []byte, indent string) []byte {
	// Every line break is one copy out of nl: a newline and the indent of
	// up to 16 levels; deeper ones (rare) are built on it.
	nl := make([]byte, 0, 1+16*len(indent))
	nl = append(nl, '\n')
	for range 16 {
		nl = append(nl, indent...)
	}
	newline := func(dst []byte, depth int) []byte {
		if depth <= 16 {
			return append(dst, nl[:1+depth*len(indent)]...)
		}
		dst = append(dst, nl...)
		for range depth - 16 {
			dst = append(dst, indent...)
		}
		return dst
	}
	depth := 0
	open := false // the last byte copied opened an object or array
	for i := 0; i < len(src); {
		c := src[i]
		if open {
			open = false
			if c == '}' || c == ']' {
				dst = append(dst, c) // empty: "{}", "[]" as the Encoder writes them
				i++
				continue
			}
			depth++
			dst = newline(dst, depth)
		}
		switch c {
		case '"':
			j := stringEnd(src, i)
			dst = append(dst, src[i:j]...)
			i = j
			continue
		case '{', '[':
			dst = append(dst, c)
			open = true
		case '}', ']':
			depth = max(depth-1, 0)
			dst = newline(dst, depth)
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			dst = newline(dst, depth)
		case ':':
			dst = append(dst, c, ' ')
		default: // a number, true, false, null: up to the next structural byte
			j := i + 1
			for j < len(src) && !structural[src[j]] {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		i++
	}
	return dst
}

var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true, ',': true, ':': true}

// stringEnd returns the index just past the string that starts with the
// quote at src[i], or len(src) when it does not end.
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); {
		k := bytes.IndexByte(src[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		n := 0
		for q-1-n > i && src[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return len(src)
}
