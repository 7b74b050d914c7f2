package slurm

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// maxListedPIDs bounds what one job's listpids may return: more is a
// corrupt or hostile answer, not a job.
const maxListedPIDs = 1 << 16

// ParseListPIDs reads `scontrol listpids JOBID` (src/scontrol/pidinfo.c:
// the header "PID JOBID STEPID LOCALID GLOBALID", then one row per process
// slurmd's proctrack plugin lists for the job's steps on this node, or "No
// job steps exist on this node.") and returns the PIDs of job jobID.
func ParseListPIDs(out, jobID string) ([]int32, error) {
	var pids []int32
	for i, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "PID" || strings.HasPrefix(line, "No job steps") {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("scontrol listpids: line %d: %d fields, want at least PID, JOBID and STEPID", i+1, len(f))
		}
		pid, err := strconv.ParseInt(f[0], 10, 32)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("scontrol listpids: line %d: PID %s is not a process ID", i+1, trunc(f[0]))
		}
		if f[1] != jobID {
			continue
		}
		if len(pids) == maxListedPIDs {
			return nil, fmt.Errorf("scontrol listpids: more than %d processes", maxListedPIDs)
		}
		pids = append(pids, int32(pid))
	}
	return pids, nil
}

// JobNode is what `scontrol show job -d` says a job holds on one node.
type JobNode struct {
	// GPUs are the gpu GRES indexes (IDX:...); CPUIDs the CPU_IDs list,
	// Slurm's own CPU numbering on that node. CPUIDs is nil when the list
	// may be cut short (CPUIDsCut): the job's CPUs are then unknown.
	GPUs      []int
	CPUIDs    []int
	CPUIDsCut bool
	// SharedGPU: the job holds shares of GPUs here (gres/shard, gres/mps),
	// which scontrol prints per GPU as "allocated/available", not as IDX
	// (src/stepmgr/gres_stepmgr.c, _build_shared_gres_details:
	// "shard:2(2/8,0/8)"): which GPUs they sit on is not read from it.
	SharedGPU bool
}

// cutCPUIDs are the lengths of a CPU_IDs list scontrol may have cut short.
// Before Slurm 25.11 scontrol formatted it into a 128-byte buffer
// (src/scontrol/info_job.c, _sprint_job_info: tmp1[128], bit_fmt, which
// snprintf's each range into what is left): a long list stops at 127
// characters mid-range, or at 126 where bit_fmt then drops its trailing
// comma (21.08's), "...,112,115-" on a real 64-CPU job
// (testdata/scontrol-show-job-d-huji.txt). Slurm commit c606d806f3
// ("scontrol - Ensure CPU_IDs are printed completely", 25.11) prints it
// whole. A list of exactly these lengths cannot be told from a cut one.
func cutCPUIDs(s string) bool { return len(s) == 126 || len(s) == 127 }

// ParseJobNode reads `scontrol show job -d JOBID`: its per-node detail lines
// (src/scontrol/info_job.c, formerly src/api/job_info.c: "Nodes=<hostlist> CPU_IDs=0-7 Mem=... GRES=gpu:2(IDX:0-1)";
// Slurm 17.02 to 18.08 named the GRES part GRES_IDX= and wrote
// "gpu(IDX:0,2-3,5)", job_info.c until commit 38ddfc1ec7, 19.05)
// whose hostlist holds node. found is false when no detail line names the
// node (the job has nothing here).
func ParseJobNode(out, node string) (jn JobNode, found bool, err error) {
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "Nodes=") || !strings.Contains(line, " CPU_IDs=") {
			continue
		}
		f := strings.Fields(line)
		hosts, err := slurmstate.ExpandHostlist(strings.TrimPrefix(f[0], "Nodes="))
		if err != nil {
			return JobNode{}, false, fmt.Errorf("scontrol show job: line %d: %w", i+1, err)
		}
		if !slices.Contains(hosts, node) {
			continue
		}
		found = true
		for _, kv := range f[1:] {
			switch {
			case strings.HasPrefix(kv, "GRES=") || strings.HasPrefix(kv, "GRES_IDX="):
				_, v, _ := strings.Cut(kv, "=")
				idx, shared, err := gresIndexes(v)
				if err != nil {
					return JobNode{}, true, fmt.Errorf("scontrol show job: line %d: %w", i+1, err)
				}
				jn.GPUs = append(jn.GPUs, idx...)
				jn.SharedGPU = jn.SharedGPU || shared
			case strings.HasPrefix(kv, "CPU_IDs="):
				v := strings.TrimPrefix(kv, "CPU_IDs=")
				if cutCPUIDs(v) {
					jn.CPUIDsCut = true
					continue
				}
				ids, err := cpulist.Parse(v)
				if err != nil {
					return JobNode{}, true, fmt.Errorf("scontrol show job: line %d: CPU_IDs: %w", i+1, err)
				}
				jn.CPUIDs = append(jn.CPUIDs, ids...)
			}
		}
	}
	if jn.CPUIDsCut {
		jn.CPUIDs = nil
	}
	return jn, found, nil
}

// gresIndexes takes the gpu entries of "gpu:h100:2(IDX:0-1),gpu:a100:1(IDX:4)",
// and says whether a shard or mps entry ("shard:2(2/8,0/8)") is there too.
func gresIndexes(s string) ([]int, bool, error) {
	var out []int
	shared := false
	for s != "" {
		end := strings.IndexByte(s, ')')
		entry := s
		if end >= 0 {
			entry, s = s[:end+1], strings.TrimPrefix(s[end+1:], ",")
		} else {
			s = ""
		}
		open := strings.Index(entry, "(IDX:")
		if open < 0 {
			if name, _, _ := strings.Cut(entry, ":"); name == "shard" || name == "mps" {
				shared = true
			}
			continue
		}
		name, _, _ := strings.Cut(entry[:open], ":")
		if name != "gpu" {
			continue
		}
		list := strings.TrimSuffix(entry[open+len("(IDX:"):], ")")
		idx, err := cpulist.Parse(list)
		if err != nil {
			return nil, false, fmt.Errorf("GRES %s: IDX list: %w", trunc(entry), err)
		}
		out = append(out, idx...)
	}
	return out, shared, nil
}

// trunc quotes a field of scontrol's output for an error message.
func trunc(s string) string { return strconv.Quote(safetext.Clip(s, 40)) }

// ListPIDs runs `scontrol listpids JOBID`: the job's processes on this node
// as slurmd's proctrack plugin knows them (linuxproc, pgid or cgroup).
func (s *Scontrol) ListPIDs(ctx context.Context, jobID string) ([]int32, error) {
	if _, err := strconv.ParseUint(jobID, 10, 32); err != nil {
		return nil, fmt.Errorf("job ID %q is not a number", jobID)
	}
	out, err := s.run(ctx, "listpids", jobID)
	if err != nil {
		return nil, err
	}
	return ParseListPIDs(out, jobID)
}

// JobNode runs `scontrol show job -d JOBID` for what the job holds on node.
func (s *Scontrol) JobNode(ctx context.Context, jobID, node string) (JobNode, bool, error) {
	if _, err := strconv.ParseUint(jobID, 10, 32); err != nil {
		return JobNode{}, false, fmt.Errorf("job ID %q is not a number", jobID)
	}
	out, err := s.run(ctx, "show", "job", "-d", jobID)
	if err != nil {
		return JobNode{}, false, err
	}
	return ParseJobNode(out, node)
}
