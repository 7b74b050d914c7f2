// Package safetext makes untrusted text (process and user names, NCCL log
// lines, a daemon's report, environment values) safe to print on a terminal
// or put in a Slurm drain reason. A process's arguments are chosen by any
// user on the node: printed raw, an ESC sequence can clear the screen or draw
// a fake PASS line, and a bidi override (U+202E) or a zero-width space
// (U+200B) makes a reason read differently from what it says.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns s with every control character (C0, DEL, C1), every Unicode
// format character (bidi embeddings, overrides and isolates, zero-width
// spaces and joiners, the BOM, soft hyphen...), line and paragraph
// separators and every invalid UTF-8 byte written as a visible escape
// (\x1b, \u202e). Escaping rather than dropping shows a reader that the text
// was tampered with. Tabs become one space; everything else is unchanged.
func Clean(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteByte(' ')
		case unsafe(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Lines is Clean for text that may hold several lines: newlines stay, every
// line is cleaned.
func Lines(s string) string {
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = Clean(strings.TrimSuffix(p, "\r"))
	}
	return strings.Join(parts, "\n")
}

func isClean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 {
			return isCleanSlow(s)
		}
	}
	return true
}

func isCleanSlow(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return false
			}
		}
		if r == '\t' || unsafe(r) {
			return false
		}
	}
	return true
}

// unsafe: Cc (controls), Cf (format: U+200B..U+200F, U+202A..U+202E,
// U+2060..U+2069, U+FEFF, U+061C, U+00AD...), Zl/Zp (U+2028, U+2029, which
// some terminals and editors treat as line breaks), Co/Cs (private use and
// surrogates: no meaning a reader could check).
func unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs)
}

// Ellipsis is the marker Clip appends to text it cut.
const Ellipsis = "…"

// Clip bounds s for a message or a kept field: s itself when it is at most
// n bytes, else its longest prefix of at most n bytes that does not split a
// UTF-8 sequence, followed by Ellipsis. The result is therefore at most
// n+len(Ellipsis) bytes, the part before the marker is a prefix of s at
// most utf8.UTFMax-1 bytes shorter than n, and it is valid UTF-8 whenever s
// is (an invalid byte of s is kept as it is, never cut through a valid
// sequence beside it). A negative n counts as 0. Clip does not clean: text
// that is untrusted still goes through Clean (or %q) where it is printed.
func Clip(s string, n int) string {
	return ClipWith(s, n, Ellipsis)
}

// ClipWith is Clip with marker appended in place of Ellipsis ("..." where
// a message keeps to ASCII).
func ClipWith(s string, n int, marker string) string {
	if n < 0 {
		n = 0
	}
	if len(s) <= n {
		return s
	}
	return s[:cutAt(s, n)] + marker
}

// cutAt returns the largest i <= n (0 <= n < len(s)) such that s[:i] ends
// on a rune boundary: n itself unless a valid UTF-8 sequence starts before
// n and ends after it, in which case its start.
func cutAt(s string, n int) int {
	for j := n; j >= 0 && j > n-utf8.UTFMax; j-- {
		if !utf8.RuneStart(s[j]) {
			continue
		}
		if j == n {
			return n
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if (r != utf8.RuneError || size > 1) && j+size > n {
			return j
		}
		return n
	}
	return n
}
