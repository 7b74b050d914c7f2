// Package benchout reads saved outputs of the benchmarks operators already
// run (nccl-tests, nvbandwidth, dcgmi diag) into *state.Verify, so that
// `gpuprobe verify --from FILE` judges them with the same checks as a
// measured run. It is a collector: it records what the output says, as
// printed, and judges nothing; check/verifyfrom.go is the judge.
//
// Which tool wrote the output is told by its content, not its name: an
// nccl-tests header or size table, nvbandwidth's "Running NAME." blocks,
// dcgmi's result box or its JSON document. Every error is a *ParseError
// naming the file and, where it helps, the line; input is bounded
// (MaxInput) before it is read.
package benchout

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/gpuprobe/gpuprobe/state"
)

// Sources, as state.Verify.Source records them.
const (
	SourceNcclTests   = "nccl-tests"
	SourceNvbandwidth = "nvbandwidth"
	SourceDcgmiDiag   = "dcgmi-diag"
)

// MaxInput bounds what Parse reads: a 512-rank nccl-tests run with
// NCCL_DEBUG=INFO is a few MB; 64 MiB is far past any real output.
const MaxInput = 64 << 20

// maxLine bounds one line; a longer one is not a tool's output.
const maxLine = 1 << 20

// ParseError is an input that is not a readable tool output.
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

// ErrUnknownFormat is wrapped when no tool's output is recognised.
var ErrUnknownFormat = errors.New("not an nccl-tests, nvbandwidth or dcgmi diag output")

// Parse reads r (at most MaxInput bytes) and returns what it says. name
// names the input in errors and in Verify.File; it also breaks a tie no
// content can: an nccl-tests output that never names its test.
func Parse(name string, r io.Reader) (*state.Verify, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, &ParseError{File: name, Msg: "read: " + err.Error()}
	}
	if len(data) > MaxInput {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("over %d MiB: not a benchmark output", MaxInput>>20)}
	}
	return ParseBytes(name, data)
}

// ParseBytes is Parse on bytes already read.
func ParseBytes(name string, data []byte) (*state.Verify, error) {
	lines, err := splitLines(name, data)
	if err != nil {
		return nil, err
	}
	var v *state.Verify
	switch detect(data, lines) {
	case SourceDcgmiDiag + "-json":
		v, err = parseDcgmiJSON(name, data)
	case SourceDcgmiDiag:
		v, err = parseDcgmiText(name, lines)
	case SourceNvbandwidth:
		v, err = parseNvbandwidth(name, lines)
	case SourceNcclTests:
		v, err = parseNcclTests(name, lines)
	default:
		return nil, &ParseError{File: name, Msg: ErrUnknownFormat.Error() +
			" (no '# nThread' header or size table, no 'Running <testcase>.' block, no dcgmi result table or JSON)"}
	}
	if err != nil {
		return nil, err
	}
	v.File = name
	return v, nil
}

// splitLines splits data into lines without their line ends, refusing a
// line over maxLine and text that is not text (a NUL byte).
func splitLines(name string, data []byte) ([]string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &ParseError{File: name, Msg: "empty: no benchmark output"}
	}
	var out []string
	for i, n := 0, 1; i < len(data); n++ {
		j := bytes.IndexByte(data[i:], '\n')
		var line []byte
		if j < 0 {
			line, i = data[i:], len(data)
		} else {
			line, i = data[i:i+j], i+j+1
		}
		if len(line) > maxLine {
			return nil, &ParseError{File: name, Line: n, Msg: fmt.Sprintf("line of %d bytes: not a benchmark output", len(line))}
		}
		if bytes.IndexByte(line, 0) >= 0 {
			return nil, &ParseError{File: name, Line: n, Msg: "NUL byte: binary data, not a benchmark output"}
		}
		out = append(out, strings.TrimRight(string(line), "\r"))
	}
	return out, nil
}

// detect names the tool by content. JSON is dcgmi's only when it holds a
// diagnostic document; a dcgmi table is its box; nvbandwidth is its
// "Running <testcase>." line followed by a matrix title or SUM; nccl-tests
// is its header or a size-table heading.
func detect(data []byte, lines []string) string {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return SourceDcgmiDiag + "-json"
	}
	var dcgm, nvbw, nccl bool
	for _, l := range lines {
		t := strings.TrimSpace(stripTag(l))
		switch {
		case strings.HasPrefix(t, "| Diagnostic") && strings.Contains(t, "| Result"):
			dcgm = true
		case strings.HasPrefix(t, "{") && strings.Contains(t, "\"DCGM"):
			return SourceDcgmiDiag + "-json"
		case strings.HasPrefix(t, "Running ") && strings.HasSuffix(t, ".") && isTestcaseName(strings.TrimSuffix(strings.TrimPrefix(t, "Running "), ".")):
			nvbw = true
		case strings.HasPrefix(t, "nvbandwidth Version"):
			nvbw = true
		case strings.HasPrefix(t, "# nThread") || strings.HasPrefix(t, "#nThread"),
			strings.HasPrefix(t, "#") && strings.Contains(t, "out-of-place") && strings.Contains(t, "in-place"),
			strings.HasPrefix(t, "# Avg bus bandwidth"):
			nccl = true
		case !nccl:
			// A size-table row without its header (a log cut at the top).
			_, ok, _ := ncclRow(ncclInlineTagRe().ReplaceAllString(t, " "), false)
			nccl = ok
		}
	}
	if !dcgm && !nvbw && !nccl {
		// dcgmi table rows pasted without the table's head.
		for _, l := range lines {
			if dcgmTestRowRe().MatchString(strings.TrimSpace(stripTag(l))) {
				dcgm = true
				break
			}
		}
	}
	switch {
	case dcgm:
		return SourceDcgmiDiag
	case nvbw:
		return SourceNvbandwidth
	case nccl:
		return SourceNcclTests
	}
	if i := bytes.IndexByte(data, '{'); i >= 0 && bytes.Contains(data[i:], []byte("\"test_categories\"")) {
		return SourceDcgmiDiag + "-json"
	}
	return ""
}

// isTestcaseName: nvbandwidth's test cases are lower_snake_case words.
func isTestcaseName(s string) bool {
	if s == "" || !strings.Contains(s, "_") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// stripTag removes the prefix a launcher puts before each line of a
// process's output: Open MPI's --tag-output "[1,0]<stdout>:", "[0] " and
// srun --label's "0: ". Lines without one are returned as they are.
func stripTag(l string) string {
	s := strings.TrimLeft(l, " \t")
	if strings.HasPrefix(s, "[") {
		if j := strings.IndexByte(s, ']'); j > 1 && allDigitsOrComma(s[1:j]) {
			rest := s[j+1:]
			if strings.HasPrefix(rest, "<stdout>:") || strings.HasPrefix(rest, "<stderr>:") {
				rest = rest[len("<stdout>:"):]
			}
			return rest
		}
	}
	if j := strings.IndexByte(s, ':'); j > 0 && j <= 6 && allDigitsOrComma(s[:j]) && (len(s) == j+1 || s[j+1] == ' ') {
		return s[j+1:]
	}
	return l
}

func allDigitsOrComma(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r == ',') {
			return false
		}
	}
	return true
}

// lazyRE compiles a pattern on first use: a gpuprobe process that never
// reads a saved benchmark output (every daemon) does not hold the compiled
// programs (200 KB at start-up, GODEBUG=inittrace=1).
func lazyRE(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
