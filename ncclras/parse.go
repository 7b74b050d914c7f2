package ncclras

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuprobe/gpuprobe/state"
)

// Bounds on what one report may add to the state, whatever its size.
const (
	maxGroups    = 64
	maxProcesses = 256
	maxComms     = 64
	maxSplits    = 16
	maxRankGroup = 32
	maxListed    = 256
	maxField     = 64
)

// The report's lines, as src/ras/client_support.cc prints them (NCCL 2.24
// to 2.30; the docs' samples are 2.24's, the issues' 2.26 and 2.27).
// They are compiled on first use, not at start-up: their bounded
// repetitions ({1,255}) compile to large programs (1.3 MB, measured with
// GODEBUG=inittrace=1), which every gpuprobe process held for its life
// although only job --hang reads a RAS report.
var reVersion, reSummary5, reSummary3, reSummary2, reGroup, reProcess, reComm, reMissingProcs, reMissingRanks, reDead, reTimeouts, reMissingList, reSplit, reErrorHead, reGroupStatus, reGroupOp, reGroupNoOp, reGroupErr, reRank *regexp.Regexp

var compileOnce sync.Once

func compileREs() {
	reVersion = regexp.MustCompile(`^NCCL version (\S{1,40})`)
	// "%7d  %9d  %11d  %9d  %7d": nodes, processes/node, GPUs/process,
	// processes, GPUs; or the inconsistent layout's totals "%7d  %9d  %11d".
	reSummary5 = regexp.MustCompile(`^\s*(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s*$`)
	reSummary3 = regexp.MustCompile(`^\s*(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s*$`)
	// The per-node rows of the inconsistent layout ("%7d  %9ld", or
	// "         %9d  %11ld" processes and GPUs per process).
	reSummary2 = regexp.MustCompile(`^\s*(\d{1,9})\s+(\d{1,9})\s*$`)
	// "%5d  %8d  %8d  %8s  %8d  %8d  %8s  %6s"
	reGroup = regexp.MustCompile(`^\s*(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s+(\d{1,9}(?:-\d{1,9})?)\s+(\d{1,9})\s+(\d{1,9})\s+([A-Z]{1,16})\s+([A-Z,]{1,40})\s*$`)
	// "  Process %d on node %s managing GPU%s %s"
	reProcess = regexp.MustCompile(`^\s+Process (\d{1,10}) on node (\S{1,255}) managing GPUs? (.{0,128})$`)
	// "#%d-%d (%016lx) KIND"
	reComm = regexp.MustCompile(`^#(\d{1,9}-\d{1,9}) \(([0-9a-fA-F]{1,16})\) ([A-Z,]{1,40})\s*$`)
	// "  Missing communicator data from %d job process%s" / "... %d rank%s"
	reMissingProcs = regexp.MustCompile(`^\s+Missing communicator data from (\d{1,9}) job process`)
	reMissingRanks = regexp.MustCompile(`^\s+Missing communicator data from (\d{1,9}) ranks?\s*$`)
	// "  %d job process%s considered dead"
	reDead = regexp.MustCompile(`^\s+(\d{1,9}) job process(?:es)? (?:is|are) considered dead`)
	// "  Encountered %d communication timeout%s while gathering ..."
	reTimeouts = regexp.MustCompile(`^\s+Encountered (\d{1,9}) communication timeouts?`)
	// NCCL 2.24: "  The missing rank: 21" / "  The missing ranks: 1, 5"
	reMissingList = regexp.MustCompile(`^\s+The missing ranks?: ([0-9, ]+)$`)
	// "  Communicator ranks have different status" / "... different
	// AllGather operation counts" / 2.24's "... different collective
	// operation counts"; "  Initialization errors on 2 ranks" /
	// "  Asynchronous error on 1 rank".
	reSplit = regexp.MustCompile(`^\s+Communicator ranks have different (.{1,64}?)\s*$`)
	reErrorHead = regexp.MustCompile(`^\s+(Initialization|Asynchronous) errors? on (\d{1,9}) ranks?\s*$`)
	// "  %d ranks have status %s" / "... have launched up to operation %ld"
	// / "... have not launched any operations" / "  %d ranks reported %s"
	reGroupStatus = regexp.MustCompile(`^\s+(\d{1,9}) ranks have status ([A-Z]{1,16})\s*$`)
	reGroupOp = regexp.MustCompile(`^\s+(\d{1,9}) ranks have launched up to operation (\d{1,19})\s*$`)
	reGroupNoOp = regexp.MustCompile(`^\s+(\d{1,9}) ranks have not launched any operations\s*$`)
	reGroupErr = regexp.MustCompile(`^\s+(\d{1,9}) ranks reported (.{1,64}?)\s*$`)
	// "  Rank %d[ has status S| has launched up to operation N| has not
	// launched any operations| reported E] -- GPU %s managed by process %d
	// on node %s" or "-- [process information not found]"
	reRank = regexp.MustCompile(`^\s+Rank (\d{1,10})(?: (has status ([A-Z]{1,16})|has launched up to operation (\d{1,19})|has not launched any operations|reported (.{1,64}?)))? -- (?:GPU (.{1,64}?) managed by process (\d{1,10}) on node (\S{1,255})|\[process information not found\])\s*$`)
}

// Parse reads RAS's text report into r. It keeps what it recognises and
// counts the rest in Unparsed; nothing in the text can make it keep more
// than the bounds above.
func Parse(text []byte, r *state.HangRAS) {
	compileOnce.Do(compileREs)
	var (
		section string // "summary", "comms", "errors", "warnings"
		block   string // "INCOMPLETE", "DEAD", "TIMEOUT", "comm"
		comm    *state.RASComm
		split   *state.RASSplit
	)
	group := func() *state.RASRankGroup {
		if split == nil || len(split.Groups) == 0 {
			return nil
		}
		return &split.Groups[len(split.Groups)-1]
	}
	addGroup := func(g state.RASRankGroup) {
		if comm == nil {
			return
		}
		if split == nil {
			if len(comm.Splits) >= maxSplits {
				return
			}
			comm.Splits = append(comm.Splits, state.RASSplit{What: "unknown"})
			split = &comm.Splits[len(comm.Splits)-1]
		}
		if len(split.Groups) < maxRankGroup {
			split.Groups = append(split.Groups, g)
		}
	}
	listed := 0
	for len(text) > 0 {
		var raw []byte
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			raw, text = text[:i], text[i+1:]
		} else {
			raw, text = text, nil
		}
		if len(raw) > 4096 {
			r.Unparsed++
			continue
		}
		line := strings.TrimRight(string(raw), "\r ")
		trim := strings.TrimSpace(line)
		switch {
		case trim == "" || strings.Trim(trim, "=") == "":
			continue
		case trim == "Job summary":
			section, block, comm, split = "summary", "", nil, nil
			continue
		case strings.HasPrefix(trim, "Communicators..."):
			section, block, comm, split = "comms", "", nil, nil
			continue
		case trim == "Errors":
			section, block, comm, split = "errors", "", nil, nil
			continue
		case trim == "Warnings":
			section, block, comm, split = "warnings", "", nil, nil
			continue
		}
		if strings.HasPrefix(line, "NCCL version ") {
			if m := reVersion.FindStringSubmatch(line); m != nil {
				r.NCCLVersion = field(m[1])
				continue
			}
		}
		if strings.HasPrefix(line, "CUDA runtime version ") {
			continue
		}
		switch section {
		case "summary":
			if m := reSummary5.FindStringSubmatch(line); m != nil {
				r.Nodes, r.Processes, r.GPUs = atoi(m[1]), atoi(m[4]), atoi(m[5])
				continue
			}
			if m := reSummary3.FindStringSubmatch(line); m != nil {
				// The inconsistent layout prints per-node rows of 2 or 3
				// numbers first; its last 3-number row is the totals.
				r.Nodes, r.Processes, r.GPUs = atoi(m[1]), atoi(m[2]), atoi(m[3])
				continue
			}
			if reSummary2.MatchString(line) || isHeaderOrKnown(trim) {
				continue
			}
		case "comms":
			if m := reGroup.FindStringSubmatch(line); m != nil {
				if len(r.Groups) < maxGroups {
					r.Groups = append(r.Groups, state.RASGroup{Group: atoi(m[1]), Comms: atoi(m[2]), Nodes: atoi(m[3]),
						RanksPerNode: m[4], RanksPerComm: atoi(m[5]), RanksInGroup: atoi(m[6]), Status: m[7], Errors: m[8]})
				}
				continue
			}
			if strings.HasPrefix(trim, "Group ") || strings.HasPrefix(trim, "# ") || trim == "No communicator data collected!" {
				continue
			}
		case "errors", "warnings":
			switch {
			case trim == "INCOMPLETE" || trim == "DEAD" || trim == "TIMEOUT":
				block, comm, split = trim, nil, nil
				continue
			}
			if m := reComm.FindStringSubmatch(line); m != nil {
				block, split = "comm", nil
				comm = nil
				if len(r.Comms) < maxComms {
					r.Comms = append(r.Comms, state.RASComm{ID: m[1], Hash: strings.ToLower(m[2]), Kind: m[3]})
					comm = &r.Comms[len(r.Comms)-1]
				}
				continue
			}
			if m := reMissingProcs.FindStringSubmatch(line); m != nil && block == "INCOMPLETE" {
				r.MissingProcesses = atoi(m[1])
				continue
			}
			if m := reDead.FindStringSubmatch(line); m != nil && block == "DEAD" {
				r.DeadProcesses = atoi(m[1])
				continue
			}
			if m := reTimeouts.FindStringSubmatch(line); m != nil {
				r.Timeouts = atoi(m[1])
				continue
			}
			if m := reProcess.FindStringSubmatch(line); m != nil {
				p := state.RASProcess{PID: atoi(m[1]), Node: field(m[2]), GPUs: field(strings.TrimSpace(m[3]))}
				switch {
				case block == "INCOMPLETE" && len(r.Unresponsive) < maxProcesses:
					r.Unresponsive = append(r.Unresponsive, p)
				case block == "DEAD" && len(r.Dead) < maxProcesses:
					r.Dead = append(r.Dead, p)
				}
				continue
			}
			if block == "comm" && comm != nil {
				if parseCommLine(line, comm, &split, group, addGroup, &listed) {
					continue
				}
			}
			if strings.HasPrefix(trim, "[could not find information on ") {
				continue
			}
		}
		r.Unparsed++
	}
}

// parseCommLine reads one line of a communicator block; false when it is
// not one it knows.
func parseCommLine(line string, comm *state.RASComm, split **state.RASSplit,
	group func() *state.RASRankGroup, addGroup func(state.RASRankGroup), listed *int) bool {
	newSplit := func(what string) {
		*split = nil
		if len(comm.Splits) < maxSplits {
			comm.Splits = append(comm.Splits, state.RASSplit{What: field(what)})
			*split = &comm.Splits[len(comm.Splits)-1]
		}
	}
	if m := reMissingRanks.FindStringSubmatch(line); m != nil {
		comm.MissingRanks = atoi(m[1])
		*split = nil
		return true
	}
	if m := reMissingList.FindStringSubmatch(line); m != nil {
		for _, f := range strings.FieldsFunc(m[1], func(c rune) bool { return c == ',' || c == ' ' }) {
			if len(comm.Missing) < maxListed && *listed < maxListed*4 {
				comm.Missing = append(comm.Missing, state.RASRank{Rank: atoi(f)})
				*listed++
			}
		}
		return true
	}
	if m := reSplit.FindStringSubmatch(line); m != nil {
		newSplit(m[1])
		return true
	}
	if m := reErrorHead.FindStringSubmatch(line); m != nil {
		newSplit(strings.ToLower(m[1]) + " errors")
		return true
	}
	if m := reGroupStatus.FindStringSubmatch(line); m != nil {
		addGroup(state.RASRankGroup{Ranks: atoi(m[1]), Value: m[2], Op: -1})
		return true
	}
	if m := reGroupOp.FindStringSubmatch(line); m != nil {
		addGroup(state.RASRankGroup{Ranks: atoi(m[1]), Value: m[2], Op: atoi64(m[2])})
		return true
	}
	if m := reGroupNoOp.FindStringSubmatch(line); m != nil {
		addGroup(state.RASRankGroup{Ranks: atoi(m[1]), Value: "0", Op: 0})
		return true
	}
	if m := reGroupErr.FindStringSubmatch(line); m != nil {
		addGroup(state.RASRankGroup{Ranks: atoi(m[1]), Value: field(m[2]), Op: -1})
		return true
	}
	m := reRank.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	rk := state.RASRank{Rank: atoi(m[1])}
	if m[6] != "" {
		rk.GPU, rk.PID, rk.Node = field(m[6]), atoi(m[7]), field(m[8])
	}
	if *listed >= maxListed*4 {
		return true
	}
	*listed++
	if m[2] != "" {
		// A group of one, printed on the rank's own line.
		g := state.RASRankGroup{Ranks: 1, Op: -1, Listed: []state.RASRank{rk}}
		switch {
		case m[3] != "":
			g.Value = m[3]
		case m[4] != "":
			g.Value, g.Op = m[4], atoi64(m[4])
		case m[5] != "":
			g.Value = field(m[5])
		default:
			g.Value, g.Op = "0", 0
		}
		addGroup(g)
		return true
	}
	if g := group(); g != nil {
		if len(g.Listed) < maxListed {
			g.Listed = append(g.Listed, rk)
		}
		return true
	}
	// An INCOMPLETE block lists its missing ranks so (2.26+).
	if len(comm.Missing) < maxListed {
		comm.Missing = append(comm.Missing, rk)
	}
	return true
}

func isHeaderOrKnown(trim string) bool {
	for _, p := range []string{"Nodes", "(total)", "per node", "Processes", "per process", "The outlier node", "Node "} {
		if strings.HasPrefix(trim, p) {
			return true
		}
	}
	return false
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func atoi64(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// field bounds a string the report supplied.
func field(s string) string {
	if len(s) > maxField {
		s = s[:maxField]
	}
	return strings.ToValidUTF8(s, "?")
}
