package check

import (
	"fmt"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// What NCCL's RAS says of the job, for perf.hang. The report's wording and
// meaning are NCCL's RAS documentation's (docs/userguide/source/
// troubleshooting/ras.rst, NCCL 2.24+): a process RAS is "missing
// communicator data" from did not answer ("the process is unresponsive");
// one unreachable for 60 s is "considered dead"; ranks with different
// operation counts are a MISMATCH, which "should not be a cause for
// concern, as long as the counts increase across repeated queries". Every
// string came from whatever listened on the port: escaped here.

// rasFinding is one rank or process RAS points at.
type rasFinding struct {
	text  string
	local bool
}

func rasWho(rank int, gpu string, pid int, node string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rank %d", rank)
	var in []string
	if gpu != "" {
		in = append(in, "GPU "+safetext.Clean(gpu))
	}
	if pid > 0 {
		in = append(in, fmt.Sprintf("pid %d", pid))
	}
	if len(in) > 0 {
		b.WriteString(" (" + strings.Join(in, ", ") + ")")
	}
	if node != "" {
		b.WriteString(" on " + safetext.Clean(node))
	}
	return b.String()
}

// rasFindings lists what RAS blames, worst first: dead processes, missing
// (unresponsive) ranks and processes, ranks with an error or an abort, and
// ranks whose operation count lags the others' and did not move since
// start (RAS asked at the start of the window; nil: asked once, and a
// lagging count is reported as not known to be stuck). A lagging count
// that moved is a slow rank, not a stuck one (NCCL's RAS docs: counts that
// "increase across repeated queries" are no cause for concern): it is not
// blamed, and slow lists it.
func rasFindings(r, start *state.HangRAS) (out []rasFinding, slow []string) {
	if r == nil || rasForeign(r) {
		return nil, nil
	}
	if start != nil && (!start.Answered || rasForeign(start)) {
		start = nil
	}
	seen := map[string]bool{} // pid@node already named by a rank
	for _, p := range r.Dead {
		out = append(out, rasFinding{fmt.Sprintf("process %d (GPU %s) on %s dead (unreachable via the RAS network)", p.PID, safetext.Clean(p.GPUs), safetext.Clean(p.Node)), p.Local})
		seen[fmt.Sprintf("%d@%s", p.PID, p.Node)] = true
	}
	for _, c := range r.Comms {
		for _, m := range c.Missing {
			k := fmt.Sprintf("%d@%s", m.PID, m.Node)
			if m.PID > 0 && seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, rasFinding{rasWho(m.Rank, m.GPU, m.PID, m.Node) + " unresponsive (missing from communicator #" + safetext.Clean(c.ID) + ")", m.Local})
		}
	}
	for _, p := range r.Unresponsive {
		if seen[fmt.Sprintf("%d@%s", p.PID, p.Node)] {
			continue
		}
		out = append(out, rasFinding{fmt.Sprintf("process %d (GPU %s) on %s unresponsive", p.PID, safetext.Clean(p.GPUs), safetext.Clean(p.Node)), p.Local})
	}
	if len(r.Unresponsive) == 0 && r.MissingProcesses > 0 {
		out = append(out, rasFinding{text: fmt.Sprintf("%d job processes unresponsive (RAS did not list them)", r.MissingProcesses)})
	}
	for _, c := range r.Comms {
		for _, s := range c.Splits {
			maxOp := int64(-1)
			for _, g := range s.Groups {
				maxOp = max(maxOp, g.Op)
			}
			for _, g := range s.Groups {
				var what string
				switch {
				case g.Op >= 0 && g.Op < maxOp:
					what = fmt.Sprintf("behind: launched up to operation %d of %d (%s)", g.Op, maxOp, safetext.Clean(s.What))
					if start == nil {
						what += " (RAS asked once: stuck or slow not known)"
						break
					}
					before, known := rasOpBefore(start, c, s.What, g)
					switch {
					case !known:
						what += " (not behind at the first query: stuck or slow not known)"
					case before == g.Op:
						what = fmt.Sprintf("not progressing: at operation %d at both RAS queries while others reached %d (%s)", g.Op, maxOp, safetext.Clean(s.What))
					default:
						who := fmt.Sprintf("%d ranks of communicator #%s", g.Ranks, safetext.Clean(c.ID))
						if len(g.Listed) > 0 {
							l := g.Listed[0]
							who = rasWho(l.Rank, l.GPU, l.PID, l.Node)
							if len(g.Listed) > 1 {
								who += fmt.Sprintf(" and %d more", len(g.Listed)-1)
							}
						}
						slow = append(slow, fmt.Sprintf("%s behind but progressing (operation %d, then %d, of %d; %s): a slow rank, not a stuck one", who, before, g.Op, maxOp, safetext.Clean(s.What)))
						continue
					}
				case g.Op < 0 && (g.Value == "ABORT" || strings.HasSuffix(s.What, "errors")):
					what = "reported " + safetext.Clean(g.Value)
				default:
					continue
				}
				if len(g.Listed) == 0 {
					out = append(out, rasFinding{text: fmt.Sprintf("%d ranks of communicator #%s %s (RAS did not list them)", g.Ranks, safetext.Clean(c.ID), what)})
				}
				for _, l := range g.Listed {
					out = append(out, rasFinding{rasWho(l.Rank, l.GPU, l.PID, l.Node) + " " + what, l.Local})
				}
			}
		}
	}
	return out, slow
}

// rasOpBefore is the operation count the first query gave the ranks of g
// (the same communicator and count): the listed ranks' group, or, when RAS
// listed none, the group of the same size. known is false when the first
// query had no such group (the communicator agreed then, or was not
// reported).
func rasOpBefore(start *state.HangRAS, c state.RASComm, what string, g state.RASRankGroup) (op int64, known bool) {
	for _, c0 := range start.Comms {
		if c0.ID != c.ID || c0.Hash != c.Hash {
			continue
		}
		for _, s0 := range c0.Splits {
			if s0.What != what {
				continue
			}
			for _, g0 := range s0.Groups {
				if g0.Op < 0 {
					continue
				}
				if len(g.Listed) > 0 {
					for _, l0 := range g0.Listed {
						if l0.Rank == g.Listed[0].Rank {
							return g0.Op, true
						}
					}
				} else if len(g0.Listed) == 0 && g0.Ranks == g.Ranks && g0.Op <= g.Op {
					return g0.Op, true
				}
			}
		}
	}
	return 0, false
}

// rasForeign: the port is held by a user other than the job's (and not
// root): whatever it says is not the job's RAS, and is not believed.
func rasForeign(r *state.HangRAS) bool {
	return r.ListenerUID != "" && r.JobUID != "" && r.ListenerUID != r.JobUID && r.ListenerUID != "0"
}

// rasNote is prefix and the first findings, or "" when there are none.
func rasNote(f []rasFinding, prefix string) string {
	if len(f) == 0 {
		return ""
	}
	var parts []string
	for i, x := range f {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(f)-3))
			break
		}
		parts = append(parts, x.text)
	}
	return prefix + strings.Join(parts, "; ")
}

// rasElsewhere completes "all local ranks wait in NCCL for a peer: ...".
func rasElsewhere(r *state.HangRAS, f []rasFinding, slow []string) string {
	const base = "the rank they wait on is not on this node"
	if r == nil {
		return base + " (NCCL RAS not asked)"
	}
	if len(f) == 0 {
		return base + " (NCCL RAS: " + rasStatus(r, f, slow) + ")"
	}
	local := 0
	for _, x := range f {
		if x.local {
			local++
		}
	}
	if local == len(f) {
		return "yet RAS names a rank on this node's own address" + rasNote(f, ": ")
	}
	return base + " (RAS says: " + rasNote(f, "") + ")"
}

// rasStatus says in one line what RAS answered.
func rasStatus(r *state.HangRAS, f []rasFinding, slow []string) string {
	if !r.Answered {
		return safetext.Clean(r.Error)
	}
	if rasForeign(r) {
		return fmt.Sprintf("the port %s is held by uid %s, not the job's user (uid %s): its answer is not believed", safetext.Clean(r.Addr), safetext.Clean(r.ListenerUID), safetext.Clean(r.JobUID))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "asked at %s (%s) in %.1f s", safetext.Clean(r.Addr), safetext.Clean(r.AddrFrom), r.Seconds)
	if r.NCCLVersion != "" {
		fmt.Fprintf(&b, ", NCCL %s", safetext.Clean(r.NCCLVersion))
	}
	if r.Processes > 0 {
		fmt.Fprintf(&b, ", %d processes on %d nodes", r.Processes, r.Nodes)
	}
	fmt.Fprintf(&b, ", %d communicator group%s", len(r.Groups), plural(len(r.Groups)))
	if r.Timeouts > 0 {
		fmt.Fprintf(&b, ", %d communication timeout%s", r.Timeouts, plural(r.Timeouts))
	}
	if len(f) == 0 && len(slow) == 0 {
		b.WriteString(": no missing, dead or lagging rank")
	} else if len(f) == 0 {
		b.WriteString(": no missing, dead or stuck rank")
	} else {
		b.WriteString(rasNote(f, ": "))
	}
	for i, x := range slow {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more slow", len(slow)-3)
			break
		}
		b.WriteString("; " + x)
	}
	if r.Error != "" {
		b.WriteString(" (" + safetext.Clean(r.Error) + ")")
	}
	return b.String()
}
