package slurmstate

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Real /proc/PID/cgroup files of Slurm nodes (testdata/proc-cgroup/SOURCE).
func TestJobFromCgroupRealCaptures(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"v2-task-cgroup_exporter.txt", "4"},
		{"v2-slurmstepd-cgroup_exporter.txt", ""}, // slurmstepd itself: no job directory
		{"v2-session-cgroup_exporter.txt", ""},    // a login session
		{"v2-task-sonar-fox.txt", "1392969"},
		{"v1-devices-sonar.txt", "280678"},
		{"v1-full-sonar-ex3.txt", "748468"}, // only the freezer line names the job
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "proc-cgroup", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := JobFromCgroup(data); got != c.want {
			t.Errorf("%s: job %q, want %q", c.file, got, c.want)
		}
	}
}

// Layouts Slurm makes that no capture at hand shows, and paths that look like
// a job but are not Slurm's (each constructed, from the layouts cited in
// JobFromCgroup's comment).
func TestJobFromCgroupLayoutsAndLookalikes(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"v2 multiple slurmd", "0::/system.slice/node07_slurmstepd.scope/job_5/step_0/user/task_0\n", "5"},
		{"v1 multiple slurmd", "4:memory:/slurm_node07/uid_1000/job_9/step_batch/task_0\n", "9"},
		{"v2 under an init prefix (slurmd in a container)", "0::/docker/3f2a/system.slice/slurmstepd.scope/job_3/step_0/user/task_0\n", "3"},
		{"v2 job directory itself", "0::/system.slice/slurmstepd.scope/job_77\n", "77"},
		{"a directory the job's user made below the job", "0::/system.slice/slurmstepd.scope/job_4/step_0/user/task_0/system.slice/slurmstepd.scope/job_5\n", "4"},
		{"a user's delegated subtree", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/system.slice/slurmstepd.scope/job_77/x\n", ""},
		{"v1 layout in a user's subtree", "0::/user.slice/user-1000.slice/user@1000.service/slurm/uid_1000/job_77\n", ""},
		{"job_ without slurmstepd.scope", "0::/system.slice/job_12/step_0\n", ""},
		{"job_ without uid_ (v1)", "4:memory:/slurm/job_12/step_0\n", ""},
		{"other batch system", "0::/system.slice/pbs_jobs.service/jobid/12.server\n", ""},
		{"leading zero", "0::/system.slice/slurmstepd.scope/job_012/step_0\n", ""},
		{"job 0", "0::/system.slice/slurmstepd.scope/job_0/step_0\n", ""},
		{"past uint32", "0::/system.slice/slurmstepd.scope/job_4294967296/step_0\n", ""},
		{"not a number", "0::/system.slice/slurmstepd.scope/job_12;rm/step_0\n", ""},
		{"empty node name", "0::/system.slice/_slurmstepd.scope/job_5\n", ""},
		{"lines that disagree", "11:freezer:/slurm/uid_1/job_10/step_0\n0::/system.slice/slurmstepd.scope/job_11/step_0/user/task_0\n", ""},
		{"lines that agree", "11:freezer:/slurm/uid_1/job_10/step_0\n4:memory:/slurm/uid_1/job_10/step_0/task_0\n", "10"},
		{"malformed lines skipped", "garbage\n:\n0:x\n4:memory:/slurm/uid_1/job_10/step_0/task_0\n", "10"},
		{"empty", "", ""},
	} {
		if got := JobFromCgroup([]byte(c.data)); got != c.want {
			t.Errorf("%s: %q: job %q, want %q", c.name, c.data, got, c.want)
		}
	}
}

// The read is bounded: a job line past 64 KiB is not looked at.
func TestJobFromCgroupBounded(t *testing.T) {
	data := strings.Repeat("1:name=x:/a\n", (maxCgroupFile/12)+1) + "0::/system.slice/slurmstepd.scope/job_4/step_0\n"
	if got := JobFromCgroup([]byte(data)); got != "" {
		t.Errorf("job %q from past the bound", got)
	}
}

var slurmLayout = regexp.MustCompile(`(?:/system\.slice/(?:[^/]+_)?slurmstepd\.scope|/slurm(?:_[^/]*)?/uid_[0-9]+)/job_[1-9][0-9]*(?:/|$|\n)`)

func FuzzJobFromCgroup(f *testing.F) {
	for _, name := range []string{"v2-task-cgroup_exporter.txt", "v1-full-sonar-ex3.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "proc-cgroup", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("0::/system.slice/n_slurmstepd.scope/job_1/step_0\n4:memory:/slurm_n/uid_1/job_1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		id := JobFromCgroup(data)
		if id == "" {
			return
		}
		// Whatever it returns is a job ID as Slurm prints one, found in the
		// input behind Slurm's own directories.
		if !isJobID(id) || !slurmLayout.MatchString(string(data)) || !strings.Contains(string(data), "/job_"+id) {
			t.Fatalf("%q: job %q", data, id)
		}
	})
}
