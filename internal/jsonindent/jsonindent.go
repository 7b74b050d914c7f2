// Package jsonindent writes JSON indented as encoding/json's Encoder does
// with SetIndent("", indent), in one pass over the compact output of an
// Encoder without indentation. The Encoder indents by re-reading its
// compact output with its validating scanner into a second buffer that
// grows as it goes; for the NCCL analyzer's largest verdicts (3 MB, a peer
// table per rank), written on one core after the log is read, that second
// pass and the fresh memory it touched were most of the time spent
// writing (BenchmarkWriteJSON in check/ncclverdict).
package jsonindent

import (
	"encoding/json"
	"io"
)

// Encode writes v to w as json.Encoder with SetIndent("", indent) does:
// the same bytes (TestMatchesEncoder), streamed through a small buffer. An
// empty indent, as for the Encoder, means no indentation.
func Encode(w io.Writer, v any, indent string) error {
	if indent == "" {
		return json.NewEncoder(w).Encode(v)
	}
	iw := NewWriter(w, indent)
	if err := json.NewEncoder(iw).Encode(v); err != nil {
		return err
	}
	return iw.Flush()
}

// Writer indents the compact JSON written to it (as json.Marshal or
// json.Compact produce it) and writes the result to the underlying writer
// in pieces of about flushAt bytes. Writes may split the document
// anywhere, inside strings and escapes included. It does not validate its
// input: any other input gives some output, never a panic.
type Writer struct {
	w   io.Writer
	s   state
	buf []byte
	err error
}

const flushAt = 64 << 10

// NewWriter returns a Writer that indents by indent per level.
func NewWriter(w io.Writer, indent string) *Writer {
	return &Writer{w: w, s: newState(indent), buf: make([]byte, 0, flushAt+flushAt/2)}
}

// Write indents p. It reports len(p) unless the underlying writer failed.
func (x *Writer) Write(p []byte) (int, error) {
	if x.err != nil {
		return 0, x.err
	}
	n := len(p)
	for len(p) > 0 && x.err == nil {
		// Input in pieces of flushAt/4, flushed between pieces, keeps the
		// buffer near flushAt unless the nesting is very deep.
		k := min(len(p), flushAt/4)
		x.buf = x.s.append(x.buf, p[:k])
		p = p[k:]
		if len(x.buf) >= flushAt {
			x.flush()
		}
	}
	if x.err != nil {
		return 0, x.err
	}
	return n, nil
}

// Flush writes what is buffered.
func (x *Writer) Flush() error {
	if x.err == nil && len(x.buf) > 0 {
		x.flush()
	}
	return x.err
}

func (x *Writer) flush() {
	_, x.err = x.w.Write(x.buf)
	x.buf = x.buf[:0]
}

// state is where the indenter is in a document: it carries over from one
// piece of input to the next.
type state struct {
	indent string
	nl     []byte // a newline and the indent of up to 16 levels
	depth  int
	open   bool // the last byte opened an object or array
	str    bool // inside a string
	esc    bool // inside a string, right after a backslash
}

func newState(indent string) state {
	nl := make([]byte, 0, 1+16*len(indent))
	nl = append(nl, '\n')
	for range 16 {
		nl = append(nl, indent...)
	}
	return state{indent: indent, nl: nl}
}

// newline appends a line break and the indent of the current depth: one
// copy out of nl, deeper levels (rare) built on it.
func (s *state) newline(dst []byte) []byte {
	if s.depth <= 16 {
		return append(dst, s.nl[:1+s.depth*len(s.indent)]...)
	}
	dst = append(dst, s.nl...)
	for range s.depth - 16 {
		dst = append(dst, s.indent...)
	}
	return dst
}

func (s *state) append(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		if s.str {
			j := i
			for ; j < len(src); j++ {
				c := src[j]
				if s.esc {
					s.esc = false
				} else if c == '\\' {
					s.esc = true
				} else if c == '"' {
					s.str = false
					j++
					break
				}
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		c := src[i]
		if s.open {
			s.open = false
			if c == '}' || c == ']' {
				dst = append(dst, c) // empty: "{}", "[]" as the Encoder writes them
				i++
				continue
			}
			s.depth++
			dst = s.newline(dst)
		}
		switch c {
		case '"':
			dst = append(dst, c)
			s.str = true
		case '{', '[':
			dst = append(dst, c)
			s.open = true
		case '}', ']':
			s.depth = max(s.depth-1, 0)
			dst = s.newline(dst)
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			dst = s.newline(dst)
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
