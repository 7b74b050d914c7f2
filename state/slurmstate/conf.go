package slurmstate

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
)

// ConfError is a problem in a config file, named by file and line so an
// admin can go straight to it.
type ConfError struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

func (e ConfError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// KV is one Key=Value pair. Key keeps the spelling of the file; Slurm keys
// are case-insensitive, so compare with Is.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Is compares the key case-insensitively.
func (kv KV) Is(key string) bool { return strings.EqualFold(kv.Key, key) }

// Line is one logical line of a Slurm-style config file.
type Line struct {
	File  string `json:"file"`
	Num   int    `json:"line"`
	Pairs []KV   `json:"pairs,omitempty"`
	// Include is the target of an "Include PATH" line (Pairs is then empty).
	Include string `json:"include,omitempty"`
}

// Where names the line for messages ("gres.conf:12").
func (l Line) Where() string { return fmt.Sprintf("%s:%d", filepath.Base(l.File), l.Num) }

// Get returns the value of key (case-insensitive) and whether it is present.
func (l Line) Get(key string) (string, bool) {
	for _, kv := range l.Pairs {
		if kv.Is(key) {
			return kv.Value, true
		}
	}
	return "", false
}

// ParseConf splits data into lines of Key=Value pairs: '#' starts a comment,
// a trailing '\' continues a line, double quotes keep blanks inside a value,
// "Include PATH" becomes a Line with Include set.
func ParseConf(name string, data []byte) ([]Line, []ConfError) {
	var out []Line
	var errs []ConfError
	raw := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	for i := 0; i < len(raw); i++ {
		num := i + 1
		text := stripComment(raw[i])
		for strings.HasSuffix(text, "\\") && i+1 < len(raw) {
			i++
			text = text[:len(text)-1] + " " + stripComment(raw[i])
		}
		fields, err := splitFields(text)
		if err != nil {
			errs = append(errs, ConfError{File: name, Line: num, Msg: err.Error()})
			continue
		}
		if len(fields) == 0 {
			continue
		}
		if strings.EqualFold(fields[0], "include") {
			if len(fields) != 2 {
				errs = append(errs, ConfError{File: name, Line: num, Msg: "Include wants exactly one path"})
				continue
			}
			out = append(out, Line{File: name, Num: num, Include: unquote(fields[1])})
			continue
		}
		l := Line{File: name, Num: num}
		pairs, rest := splitPairs(text)
		if strings.TrimLeft(rest, spaceChars) != "" {
			bad := strings.FieldsFunc(rest, func(r rune) bool { return strings.ContainsRune(spaceChars, r) })[0]
			errs = append(errs, ConfError{File: name, Line: num, Msg: fmt.Sprintf("%q is not Key=Value", safetext.Clip(bad, 60))})
			continue
		}
		if len(pairs) == 0 {
			continue // blanks slurmd's isspace() knows and splitFields does not ("\v")
		}
		l.Pairs = pairs
		out = append(out, l)
	}
	return out, errs
}

// spaceChars is what POSIX's [[:space:]] matches in the C locale.
const spaceChars = " \t\n\v\f\r"

// keyValueRe is slurmd's own pattern for one pair (src/common/parse_config.c,
// keyvalue_pattern, unchanged since 2015): a key of letters, digits, '_' and
// '.', blanks allowed on either side of '=' (an optional operator
// [-*+/] before it), and a value that is either double-quoted (blanks
// inside) or runs to the next blank. slurmd reads "ConstrainDevices = yes"
// and "Name= gpu" as any other pair, and "Type= File=/dev/x" as Type whose
// value is "File=/dev/x"; a "Key=" with nothing after it matches nothing
// and is slurmd's "Parse error in file ... line N" (slurmd -G 22.05).
// Compiled on first use: a check that reads no Slurm file pays nothing.
var keyValueRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[ \t\n\v\f\r]*([[:alnum:]_.]+)[ \t\n\v\f\r]*([-*+/]?)=[ \t\n\v\f\r]*(?:"([^"]*)"|([^ \t\n\v\f\r]+))(?:[ \t\n\v\f\r]|$)`)
})

// splitPairs takes pairs from the start of s as slurmd's s_p_parse_line does
// (_keyvalue_regex in a loop, each match resuming after the value) and
// returns them with what no pair matched; slurmd fails a line whose rest is
// not blank. A key written with an operator ("Key+=1") keeps it ("Key+"), so
// it is no known key rather than silently the plain one.
func splitPairs(s string) ([]KV, string) {
	var out []KV
	for {
		m := keyValueRe().FindStringSubmatchIndex(s)
		if m == nil {
			return out, s
		}
		key := s[m[2]:m[3]] + s[m[4]:m[5]]
		var value string
		end := 0
		if m[6] >= 0 {
			value, end = s[m[6]:m[7]], m[7]+1 // past the closing quote
		} else {
			value, end = s[m[8]:m[9]], m[9]
		}
		out = append(out, KV{Key: key, Value: strings.ReplaceAll(value, `\#`, "#")})
		s = s[end:]
	}
}

func stripComment(s string) string {
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			inQuote = !inQuote
		case '\\':
			if i+1 < len(s) && s[i+1] == '#' {
				i++
			}
		case '#':
			if !inQuote {
				return strings.TrimRight(s[:i], " \t")
			}
		}
	}
	return strings.TrimRight(s, " \t")
}

// splitFields splits on blanks outside double quotes.
func splitFields(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for _, c := range s {
		switch {
		case c == '"':
			inQuote = !inQuote
			cur.WriteRune(c)
			have = true
		case (c == ' ' || c == '\t') && !inQuote:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(c)
			have = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated double quote")
	}
	if have {
		out = append(out, cur.String())
	}
	return out, nil
}

func unquote(v string) string {
	v = strings.ReplaceAll(v, `\#`, "#")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	return v
}
