package slurmstate

import (
	"strconv"
	"strings"
)

// maxCgroupFile bounds what JobFromCgroup reads of a /proc/PID/cgroup: a
// real one is a line per v1 hierarchy (about a dozen) plus the v2 line.
const maxCgroupFile = 64 << 10

// JobFromCgroup names the Slurm job whose cgroup holds a process, from the
// process's /proc/PID/cgroup ("hierarchy-ID:controller-list:cgroup-path" per
// line, cgroups(7)). The kernel writes that file from the cgroup the process
// sits in, which slurmstepd chose: unlike SLURM_JOB_ID in the environment,
// the process cannot set it. It returns "" when no line holds a Slurm job
// directory, and when lines disagree (unknown rather than a guess).
//
// Only the directories Slurm's cgroup plugins make count:
//   - cgroup/v2 (src/plugins/cgroup/v2/cgroup_v2.c, _set_int_cg_ns and
//     cgroup_p_step_create): <init prefix>/system.slice/slurmstepd.scope/job_<id>,
//     or <nodename>_slurmstepd.scope with multiple slurmd;
//   - cgroup/v1 (src/plugins/cgroup/v1/xcgroup.c, xcgroup_create_slurm_cg and
//     xcgroup_create_hierarchy): /slurm/uid_<uid>/job_<id> in each
//     controller, /slurm_<nodename> with multiple slurmd.
//
// A bare "job_<id>" anywhere is not enough: systemd delegates the
// user@UID.service subtree to its user, who may create any directory name
// below /user.slice, so a match under a user.slice component is refused; the
// first match of a path wins, so a directory a job's own user creates below
// its job_<id> cannot rename the job.
func JobFromCgroup(data []byte) string {
	if len(data) > maxCgroupFile {
		data = data[:maxCgroupFile]
	}
	job := ""
	for _, line := range strings.Split(string(data), "\n") {
		_, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		_, path, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(path, "/") {
			continue
		}
		id := jobInCgroupPath(path)
		if id == "" {
			continue
		}
		if job != "" && job != id {
			return "" // two jobs for one process: not Slurm's doing
		}
		job = id
	}
	return job
}

// jobInCgroupPath finds Slurm's job directory in one cgroup path.
func jobInCgroupPath(path string) string {
	c := strings.Split(path, "/")
	for i := 0; i+2 < len(c); i++ {
		if c[i] == "user.slice" {
			return "" // a user's delegated subtree: any name can be made there
		}
		var ok bool
		switch {
		case c[i] == "system.slice": // cgroup/v2
			ok = isStepdScope(c[i+1])
		case c[i] == "slurm" || strings.HasPrefix(c[i], "slurm_"): // cgroup/v1
			ok = isNumbered(c[i+1], "uid_")
		}
		if ok {
			if id, good := strings.CutPrefix(c[i+2], "job_"); good && isJobID(id) {
				return id
			}
		}
	}
	return ""
}

func isStepdScope(s string) bool {
	if s == "slurmstepd.scope" {
		return true
	}
	node, ok := strings.CutSuffix(s, "_slurmstepd.scope")
	return ok && node != ""
}

func isNumbered(s, prefix string) bool {
	n, ok := strings.CutPrefix(s, prefix)
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 32)
	return err == nil
}

// isJobID: Slurm's job IDs are uint32 printed with %u (no sign, no leading
// zero), and 0 is never a job.
func isJobID(s string) bool {
	if s == "" || s[0] == '0' {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}
