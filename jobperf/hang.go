package jobperf

import (
	"slices"

	"github.com/gpuprobe/gpuprobe/state"
)

// MaxHangRanks bounds the rank processes --hang reports on one node (a
// node runs at most one rank a GPU, and a handful of GPUs).
const MaxHangRanks = 256

// maxStates bounds the per-tick state letters kept per rank.
const maxStates = 120

// SummarizeHang picks the job's rank processes out of the ticks and says
// what each did over the window. onGPU maps a PID to the job GPUs (NVML
// indexes) NVML ran it on. A rank is a process NVML ran on a job GPU, or
// one whose environment holds SLURM_PROCID and whose parent is not a
// process of the job (a task slurmstepd started, not a DataLoader worker
// it forked, which inherits the variable). The PIDs in exclude are never
// ranks: gpuprobe itself, started by srun --overlap as a task of the job
// with a SLURM_PROCID of its own. It never judges.
func SummarizeHang(ticks []*Sample, onGPU map[int32][]int, exclude ...int32) *state.JobHang {
	h := &state.JobHang{Ticks: len(ticks), Ranks: []state.HangRank{}}
	inJob := map[int32]bool{}
	for _, s := range ticks {
		for pid := range s.Tasks {
			inJob[pid] = true
		}
	}
	isRank := map[int32]bool{}
	for _, s := range ticks {
		for pid, t := range s.Tasks {
			if slices.Contains(exclude, pid) {
				continue
			}
			if len(onGPU[pid]) > 0 || t.ProcID != "" && !inJob[t.PPID] {
				isRank[pid] = true
			}
		}
	}
	pids := make([]int32, 0, len(isRank))
	for pid := range isRank {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	if len(pids) > MaxHangRanks {
		pids = pids[:MaxHangRanks]
	}
	for _, pid := range pids {
		r := state.HangRank{PID: pid, GPUs: onGPU[pid]}
		var first, last *Task
		var firstAt, lastAt int
		for k, s := range ticks {
			t, ok := s.Tasks[pid]
			if !ok {
				if last != nil {
					r.Exited = true
				}
				continue
			}
			if first == nil {
				first, firstAt = t, k
			}
			if r.Exited {
				r.Exited = false // read again: a tick that missed it, not an exit
			}
			last, lastAt = t, k
			if len(r.States) < maxStates {
				r.States += string(t.State)
			}
			if t.State == 'D' || t.DThreads > 0 {
				r.DTicks++
			}
		}
		if last == nil {
			continue
		}
		r.Comm, r.Rank, r.Wchan = last.Comm, last.ProcID, last.Wchan
		r.NCCLRASAddr, r.NCCLRASEnable, r.NCCLLibrary = last.NCCLRASAddr, last.NCCLRASEnable, last.NCCLLibrary
		r.Threads, r.DThreads, r.DWchans = last.ThreadsRead, last.DThreads, last.DWchans
		r.KernelStack, r.DStacks = last.KStack, last.DStacks
		if a, b := first.UTime+first.STime, last.UTime+last.STime; b >= a {
			r.CPUSeconds = float64(b-a) / ClockTicks
		}
		r.SeenSeconds = ticks[lastAt].At.Sub(ticks[firstAt].At).Seconds()
		for _, f := range last.Files {
			if f.Mount == nil {
				continue
			}
			m := state.HangMount{Type: f.Mount.FSType, Point: f.Mount.Point}
			if !slices.Contains(r.Mounts, m) && len(r.Mounts) < 8 {
				r.Mounts = append(r.Mounts, m)
			}
		}
		h.Ranks = append(h.Ranks, r)
	}
	return h
}
