package nccllog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
)

// The "real" shape is built from real logs rather than imitated: each log
// of a corpus (the project's NCCL_DEBUG=INFO excerpts) is replicated, every
// replica's host:pid:tid envelopes renamed so that replicas are distinct
// processes, and replicas are interleaved the way processes sharing one
// stream interleave. The rest of every line is kept byte for byte, so the
// log has the line mix of real logs (init, env, plugin, ring-listing and
// timing lines beside the connection lines), not the mix a generator
// author had in mind.
//
// Replicas come in groups of RealReplicas copies of one log, the logs in
// turn; within a group the next run of 1..RealMaxRun lines is taken from a
// replica picked at random, until every replica of the group is written.
// Groups follow until Size bytes are written (the last group may be cut
// short, and the output ends with the first line that reaches Size).
// Replica n of the whole output renames pid P to P followed by n
// as six digits: distinct across the first million replicas and all logs, and the tid, the
// device and the host are left as they were.
const (
	RealReplicas = 8
	RealMaxRun   = 16
)

// RealMix is the line mix of a "real" log.
type RealMix struct {
	Bytes    int64
	Lines    int64
	Info     int64 // lines with an "NCCL INFO " record
	Conn     int64 // of those, connection lines ("Channel|Ring … via …")
	Replicas int64
}

// ConnShare is the share of connection lines among NCCL INFO lines.
func (m RealMix) ConnShare() float64 {
	if m.Info == 0 {
		return 0
	}
	return float64(m.Conn) / float64(m.Info)
}

func (m RealMix) String() string {
	return fmt.Sprintf("%d lines, %d NCCL INFO lines, %.1f%% of them connection lines, %d replicas",
		m.Lines, m.Info, 100*m.ConnShare(), m.Replicas)
}

// WriteReal writes about size bytes of the "real" shape built from logs
// (each the text of one log, in a fixed order) and returns its line mix.
// The same logs and seed write the same bytes.
func WriteReal(w io.Writer, logs [][]byte, size int64, seed uint64) (RealMix, error) {
	var mix RealMix
	var src [][][]byte // per log, its lines without their newlines
	for _, l := range logs {
		lines := bytes.Split(bytes.TrimSuffix(l, []byte("\n")), []byte("\n"))
		if len(l) > 0 {
			src = append(src, lines)
		}
	}
	if len(src) == 0 {
		return mix, fmt.Errorf("gen: no logs to replicate")
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	rng := rand.New(rand.NewPCG(seed, 0x7265616c)) // "real"
	var line []byte
	type cursor struct {
		lines [][]byte
		next  int
		id    int64 // replica number in the whole output
	}
	group := make([]cursor, RealReplicas)
	for g := 0; mix.Bytes < size; g++ {
		lines := src[g%len(src)]
		for i := range group {
			group[i] = cursor{lines: lines, id: mix.Replicas}
			mix.Replicas++
		}
		live := group
		for len(live) > 0 && mix.Bytes < size {
			k := rng.IntN(len(live))
			c := &live[k]
			for run := 1 + rng.IntN(RealMaxRun); run > 0 && c.next < len(c.lines) && mix.Bytes < size; run-- {
				line = RenameEnvelopes(line[:0], c.lines[c.next], c.id)
				c.next++
				line = append(line, '\n')
				if _, err := bw.Write(line); err != nil {
					return mix, err
				}
				mix.Bytes += int64(len(line))
				mix.Lines++
				if info, conn := lineKind(line); info {
					mix.Info++
					if conn {
						mix.Conn++
					}
				}
			}
			if c.next == len(c.lines) {
				live[k] = live[len(live)-1]
				live = live[:len(live)-1]
			}
		}
	}
	return mix, bw.Flush()
}

// RenameEnvelopes appends line to dst with the pid of every
// "host:pid:tid [dev]" envelope in it followed by replica as six digits.
// Everything else is copied as it is.
func RenameEnvelopes(dst, line []byte, replica int64) []byte {
	for {
		end := nextEnvelopePID(line)
		if end < 0 {
			return append(dst, line...)
		}
		dst = append(dst, line[:end]...)
		dst = fmt.Appendf(dst, "%06d", replica%1000000)
		line = line[end:]
	}
}

// nextEnvelopePID finds the first ":pid:tid [dev]" in b (decimal pid and
// tid, an optionally negative decimal dev) and returns where its pid
// ends, or -1.
func nextEnvelopePID(b []byte) int {
	for off := 0; ; {
		i := bytes.IndexByte(b[off:], ':')
		if i < 0 {
			return -1
		}
		i += off
		off = i + 1
		p := digits(b, i+1)
		if p == i+1 || p >= len(b) || b[p] != ':' {
			continue
		}
		t := digits(b, p+1)
		if t == p+1 || t+2 >= len(b) || b[t] != ' ' || b[t+1] != '[' {
			continue
		}
		d := t + 2
		if d < len(b) && b[d] == '-' {
			d++
		}
		e := digits(b, d)
		if e == d || e >= len(b) || b[e] != ']' {
			continue
		}
		return p
	}
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// lineKind reports whether a line holds an "NCCL INFO " record and whether
// that record is a connection line: "Channel" or "Ring" (with its number,
// send/receive and all) and then " via ".
func lineKind(line []byte) (info, conn bool) {
	i := bytes.Index(line, []byte("NCCL INFO "))
	if i < 0 {
		return false, false
	}
	m := line[i+len("NCCL INFO "):]
	if (bytes.HasPrefix(m, []byte("Channel ")) || bytes.HasPrefix(m, []byte("Ring "))) && bytes.Contains(m, []byte(" via ")) {
		return true, true
	}
	return true, false
}
