package fstree

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ParseFlat reads the "flattened tree" text format that the captured sysfs
// fixtures use, one entry per line:
//
//	path: contents          a file; " | " inside contents separates lines
//	path -> target          a symlink
//	path/ (dir)             a directory
//
// Lines starting with '#' (the fixtures' "# source:" provenance) and blank
// lines are skipped. prefix is put before every path, so a capture of
// /sys/class/infiniband taken relative to that directory can be placed at
// "sys/class/infiniband". name is used in error messages.
func ParseFlat(r io.Reader, name, prefix string) (*Tree, error) {
	t := New()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		p, kindOf, value, err := splitFlat(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		full := p
		if prefix != "" {
			full = strings.TrimSuffix(prefix, "/") + "/" + p
		}
		if _, err := clean(full); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		switch kindOf {
		case dirKind:
			t.Dir(full)
		case linkKind:
			t.Link(full, value)
		default:
			t.Attr(full, strings.ReplaceAll(value, " | ", "\n"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line, err)
	}
	return t, nil
}

// splitFlat splits one line. Paths hold colons (PCI addresses), so a file
// is recognised by ": " (or a trailing ':' for an empty file), never by a
// bare ':'.
func splitFlat(text string) (string, kind, string, error) {
	if p, ok := strings.CutSuffix(text, "/ (dir)"); ok && p != "" {
		return p, dirKind, "", nil
	}
	if p, target, ok := strings.Cut(text, " -> "); ok {
		if p == "" || strings.TrimSpace(target) == "" {
			return "", 0, "", fmt.Errorf("symlink line %q lacks a path or a target", text)
		}
		return p, linkKind, strings.TrimSpace(target), nil
	}
	if p, value, ok := strings.Cut(text, ": "); ok && p != "" {
		return p, fileKind, value, nil
	}
	if p, ok := strings.CutSuffix(text, ":"); ok && p != "" {
		return p, fileKind, "", nil
	}
	return "", 0, "", fmt.Errorf("line %q is not 'path: contents', 'path -> target' or 'path/ (dir)'", text)
}
