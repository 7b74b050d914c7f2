package nvsmi

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Bounds on what a capture may hold, far above any real one: 8 GPUs of
// nvidia-smi -q are about 1,700 lines; -q -x with every supported clock
// listed, some 40,000 elements.
const (
	maxLineBytes = 4096
	maxNodes     = 1 << 20
	maxDepth     = 32
)

// item is one entry of either format, as a tree: a text line "Key : value"
// or a section heading with the lines indented under it; an XML element with
// its text and child elements.
type item struct {
	key  string
	val  string
	line int
	kids []*item
}

// child is the first child whose key is k, in any case (older drivers spell
// "Replays since reset"), or nil.
func (it *item) child(k string) *item {
	if it == nil {
		return nil
	}
	for _, c := range it.kids {
		if strings.EqualFold(c.key, k) {
			return c
		}
	}
	return nil
}

// at follows a "/"-separated path of keys.
func (it *item) at(path string) *item {
	for _, k := range strings.Split(path, "/") {
		it = it.child(k)
		if it == nil {
			return nil
		}
	}
	return it
}

// find is the first item named k anywhere under it (depth first): the
// nested "HW Thermal Slowdown" lines sit under "HW Slowdown" in the text.
func (it *item) find(k string) *item {
	if it == nil {
		return nil
	}
	for _, c := range it.kids {
		if strings.EqualFold(c.key, k) {
			return c
		}
		if f := c.find(k); f != nil {
			return f
		}
	}
	return nil
}

// ParseError is bad input: the file, the line and what is wrong.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// keyValue splits "Key<spaces>: value". The separator is the first colon
// preceded by a space: keys never hold one, while values (times, bus IDs)
// and section headings ("GPU 00000000:19:00.0") hold bare colons.
var keyValue = regexp.MustCompile(`^(.*?\S)\s+:(?:\s(.*))?$`)

// parseText builds the tree of nvidia-smi -q's text. Lines starting with
// '#' (a corpus file's "# source:" header; nvidia-smi prints none) and the
// "====NVSMI LOG====" banner are skipped.
func parseText(file string, data []byte) (*item, error) {
	root := &item{}
	type level struct {
		indent int
		it     *item
	}
	stack := []level{{-1, root}}
	nodes := 0
	lines := bytes.Split(data, []byte("\n"))
	for i, raw := range lines {
		n := i + 1
		if len(raw) > maxLineBytes {
			return nil, &ParseError{file, n, fmt.Sprintf("line longer than %d bytes: not nvidia-smi -q output", maxLineBytes)}
		}
		if !utf8.Valid(raw) || bytes.IndexByte(raw, 0) >= 0 {
			return nil, &ParseError{file, n, "binary data: not nvidia-smi -q output"}
		}
		line := strings.TrimRight(string(raw), " \t\r")
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(trimmed, "=====") {
			continue
		}
		if strings.HasPrefix(trimmed, "\t") {
			return nil, &ParseError{file, n, "indented with a tab: nvidia-smi -q indents with spaces"}
		}
		indent := len(line) - len(trimmed)
		it := &item{line: n}
		if m := keyValue.FindStringSubmatch(trimmed); m != nil {
			it.key, it.val = strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
		} else {
			it.key = trimmed
		}
		if nodes++; nodes > maxNodes {
			return nil, &ParseError{file, n, fmt.Sprintf("more than %d lines", maxNodes)}
		}
		for stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > maxDepth {
			return nil, &ParseError{file, n, fmt.Sprintf("nested deeper than %d levels", maxDepth)}
		}
		parent := stack[len(stack)-1].it
		parent.kids = append(parent.kids, it)
		stack = append(stack, level{indent, it})
	}
	return root, nil
}

// parseXML builds the tree of nvidia-smi -q -x's XML: one item per element,
// its text trimmed. The DTD line is ignored; no entity is expanded.
func parseXML(file string, data []byte) (*item, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	root := &item{}
	stack := []*item{root}
	var text []strings.Builder
	text = append(text, strings.Builder{})
	nodes := 0
	line := func() int { l, _ := dec.InputPos(); return l }
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) && se.Msg == "unexpected EOF" && len(stack) > 1 {
				return nil, &ParseError{file, se.Line, fmt.Sprintf("the XML ends inside <%s>: truncated", stack[len(stack)-1].key)}
			}
			if errors.As(err, &se) {
				return nil, &ParseError{file, se.Line, "not well-formed XML: " + se.Msg}
			}
			return nil, &ParseError{file, line(), "not well-formed XML: " + err.Error()}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if nodes++; nodes > maxNodes {
				return nil, &ParseError{file, line(), fmt.Sprintf("more than %d elements", maxNodes)}
			}
			if len(stack) > maxDepth {
				return nil, &ParseError{file, line(), fmt.Sprintf("nested deeper than %d levels", maxDepth)}
			}
			it := &item{key: t.Name.Local, line: line()}
			for _, a := range t.Attr {
				if a.Name.Local == "id" {
					it.val = a.Value // <gpu id="00000000:19:00.0">
				}
			}
			parent := stack[len(stack)-1]
			parent.kids = append(parent.kids, it)
			stack = append(stack, it)
			text = append(text, strings.Builder{})
		case xml.EndElement:
			it := stack[len(stack)-1]
			if s := strings.TrimSpace(text[len(text)-1].String()); s != "" {
				it.val = s
			}
			stack, text = stack[:len(stack)-1], text[:len(text)-1]
		case xml.CharData:
			if len(bytes.TrimSpace(t)) == 0 {
				continue // the indentation between elements
			}
			if text[len(text)-1].Len()+len(t) > maxLineBytes {
				return nil, &ParseError{file, line(), fmt.Sprintf("an element's text is longer than %d bytes", maxLineBytes)}
			}
			text[len(text)-1].Write(t)
		}
	}
	if len(stack) != 1 {
		return nil, &ParseError{file, line(), fmt.Sprintf("the XML ends inside <%s>: truncated", stack[len(stack)-1].key)}
	}
	return root, nil
}
