package nccl

import "bytes"

// Communicator lines tie a process to a rank of a communicator. Every era
// spells them differently, but they are all "key value" runs:
//
//	rank 0 nranks 8                                                   2.3
//	comm 0x7fd01805a260 rank 1 nranks 8                               2.3
//	comm 0x7ff1c0001920 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE   2.4
//	comm 0x7f4c… rank 5 nranks 16 cudaDev 5 busId 89000 - Init COMPLETE       2.8-2.15
//	comm 0x5555… rank 11 nranks 16 cudaDev 3 nvmlDev 3 busId 4e000 commId 0xf03f… - Init START  2.18-2.20
//	ncclCommInitRank comm 0x8d57d40 rank 0 nranks 16 … commId 0x49bb… - Init COMPLETE           2.21+
//	comm 0x8ec0ac0 rank 6 nRanks 16 nNodes 2 localRanks 8 localRank 6 MNNVL 0                   2.20+
//	bootstrapSplit: comm 0x7f5d… parent 0x5622… rank 0 nranks 4 color … key 0 prev 3 next 1 - DONE
//	Init timings: rank 2 nranks 16 total 1.08 (…)
//
// so one tokenizer reads them all, and tolerates the OCR damage seen in
// pastes ("ncc1CommInitRank … nranlks 16").

type commState uint8

const (
	commNone commState = iota
	commStart
	commComplete
)

type commInfo struct {
	ptr        uint64
	hasPtr     bool
	rank       int64 // -1 when absent
	nranks     int64
	nnodes     int64
	localRanks int64
	cudaDev    int64
	nvmlDev    int64
	commID     uint64
	hasCommID  bool
	busID      []byte
	api        []byte // "ncclCommInitRank", "ncclCommSplit", "bootstrapSplit:" …
	state      commState
	timings    bool // "Init timings:": not a communicator announcement
}

var wordNRanksBare = []byte("nranks ")

// isCommLine is a cheap test for the shapes above. m starts with one of
// 'c', 'n', 'b', 'r' or 'I'.
func isCommLine(m []byte) bool {
	switch m[0] {
	case 'c':
		return hasPrefix(m, "comm ")
	case 'r':
		return hasPrefix(m, "rank ")
	case 'I':
		return hasPrefix(m, "Init timings")
	case 'n', 'b':
		if m[0] == 'n' && hasPrefix(m, "nranks ") {
			return true // NCCL 2.4 ncclCommInitAll: "nranks 8"
		}
		// "ncclCommInitRank comm 0x…", "bootstrapSplit: comm 0x…"
		sp := bytes.IndexByte(m, ' ')
		return sp > 0 && sp < 40 && hasPrefix(m[sp+1:], "comm ") &&
			(m[0] == 'b' || hasPrefix(m, "ncc"))
	}
	return false
}

// parseComm reads the key/value runs of a communicator line.
func parseComm(m []byte, c *commInfo) bool {
	*c = commInfo{rank: -1, nranks: -1, nnodes: -1, localRanks: -1, cudaDev: -1, nvmlDev: -1}
	c.timings = m[0] == 'I'
	if m[0] == 'n' && hasPrefix(m, "nranks ") {
		// "nranks 8": the size of the communicators ncclCommInitAll makes.
		c.nranks = intOr(bytes.TrimSpace(m[len(wordNRanksBare):]), -1)
		return c.nranks > 0
	}
	if m[0] == 'n' || m[0] == 'b' {
		sp := bytes.IndexByte(m, ' ')
		c.api = m[:sp]
		m = m[sp+1:]
	}
	var prev []byte
	for len(m) > 0 {
		var w []byte
		if sp := bytes.IndexByte(m, ' '); sp >= 0 {
			w, m = m[:sp], m[sp+1:]
		} else {
			w, m = m, nil
		}
		if len(w) == 0 {
			continue
		}
		switch string(prev) {
		case "comm":
			c.ptr, c.hasPtr = parseHex(w)
		case "rank":
			c.rank = intOr(w, -1)
		case "cudaDev":
			c.cudaDev = intOr(w, -1)
		case "nvmlDev":
			c.nvmlDev = intOr(w, -1)
		case "busId":
			c.busID = w
		case "commId":
			c.commID, c.hasCommID = parseHex(w)
		case "nNodes":
			c.nnodes = intOr(w, -1)
		case "localRanks":
			c.localRanks = intOr(w, -1)
		case "Init":
			switch string(w) {
			case "START":
				c.state = commStart
			case "COMPLETE":
				c.state = commComplete
			}
		default:
			// "nranks", "nRanks" and what OCR makes of them ("nranlks", "nrarnks").
			if len(prev) >= 5 && prev[0] == 'n' && (prev[1] == 'r' || prev[1] == 'R') && prev[2] == 'a' {
				c.nranks = intOr(w, -1)
			}
		}
		prev = w
	}
	return c.rank >= 0 || c.hasPtr
}

func intOr(b []byte, def int64) int64 {
	if v, ok := atoi(b); ok {
		return v
	}
	return def
}

// parseHex reads "0x…" (or bare hex digits) into a number.
func parseHex(b []byte) (uint64, bool) {
	b = bytes.TrimPrefix(b, []byte("0x"))
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}
