package jobperf

import (
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
)

// MaxPyFrames bounds the Python frames kept of a rank's main thread (the
// innermost: where it waits).
const MaxPyFrames = 12

// PyThread is one thread of a `py-spy dump`: its header line's id, status
// and name, and its frames innermost first ("all_reduce
// (torch/distributed/distributed_c10d.py:2501)"). Every string is the
// dumped process's own text (function and file names): untrusted.
type PyThread struct {
	ID, Status, Name string
	Frames           []string
	// More counts the frames past MaxPyFrames.
	More int
}

// ParsePySpyDump reads the text `py-spy dump --pid PID` prints (py-spy
// src/dump.rs, write_traces and write_trace): a "Process PID: cmdline" and
// a "Python vX.Y.Z (exe)" line, a blank line, then for each thread a
// header, `Thread 4121 (active+gil): "MainThread"` (the OS thread id in
// decimal on Linux, else the pthread id as 0x...; the status is idle,
// active or active+gil; the name is absent when py-spy found none), and
// its frames innermost first, each indented four spaces: `    func
// (file.py:123)`, or `    func (file.py)` without a line. --locals adds
// lines indented eight spaces, skipped here. It returns the main thread:
// the one named "MainThread", else the first printed (py-spy prints the
// interpreter's threads oldest first, and the main thread is the oldest).
// ok is false when the text holds no thread header. Escape codes (a
// terminal's colours) are dropped.
func ParsePySpyDump(data []byte) (main PyThread, ok bool) {
	var threads []PyThread
	cur := -1
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(stripANSI(line), "\r")
		switch {
		case strings.HasPrefix(line, "Thread "):
			t, good := parsePyThreadHeader(line)
			if !good {
				cur = -1
				continue
			}
			if len(threads) >= 4096 {
				cur = -1
				continue
			}
			threads = append(threads, t)
			cur = len(threads) - 1
		case cur >= 0 && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "        "):
			f := strings.TrimSpace(line)
			if f == "" {
				continue
			}
			if len(threads[cur].Frames) < MaxPyFrames {
				threads[cur].Frames = append(threads[cur].Frames, safetext.Clip(f, 256))
			} else {
				threads[cur].More++
			}
		case cur >= 0 && strings.HasPrefix(line, "        "):
			// --locals: "Arguments:", "Locals:" and their values
		default:
			cur = -1
		}
	}
	if len(threads) == 0 {
		return PyThread{}, false
	}
	for _, t := range threads {
		if t.Name == "MainThread" {
			return t, true
		}
	}
	return threads[0], true
}

// parsePyThreadHeader reads `Thread 4121 (active+gil): "MainThread"`,
// `Thread 0x7F3A2C1B4740 (idle)` and `Thread 4121 (active)`.
func parsePyThreadHeader(line string) (PyThread, bool) {
	rest := strings.TrimPrefix(line, "Thread ")
	id, rest, _ := strings.Cut(rest, " ")
	if id == "" || strings.Trim(id, "0123456789abcdefABCDEFxX") != "" {
		return PyThread{}, false
	}
	t := PyThread{ID: id}
	if s, ok := strings.CutPrefix(rest, "("); ok {
		status, after, ok := strings.Cut(s, ")")
		if !ok {
			return PyThread{}, false
		}
		t.Status, rest = safetext.Clip(status, 32), after
	}
	if s, ok := strings.CutPrefix(rest, ": "); ok {
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			s = s[1 : len(s)-1]
		}
		t.Name = safetext.Clip(s, 128)
	}
	return t, true
}

// stripANSI drops CSI escape sequences (ESC [ ... final byte).
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && !(s[j] >= 0x40 && s[j] <= 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
