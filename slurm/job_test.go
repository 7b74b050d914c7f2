package slurm

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseListPIDs(t *testing.T) {
	for _, c := range []struct {
		name, out, job string
		want           []int32
		err            string
	}{
		// The header and rows as src/scontrol/pidinfo.c prints them (the
		// same shape flux-core's slurm resolver test mocks).
		{name: "two steps", job: "1234", out: "PID      JOBID    STEPID   LOCALID GLOBALID\n1         1234      1234         0        0\n4711      1234      batch    0        0\n4712      1234      0        0        0\n", want: []int32{1, 4711, 4712}},
		{name: "other job's rows", job: "7", out: "PID      JOBID    STEPID   LOCALID GLOBALID\n10 7 0 0 0\n11 8 0 0 0\n", want: []int32{10}},
		{name: "no steps", job: "7", out: "PID      JOBID    STEPID   LOCALID GLOBALID\nNo job steps exist on this node.\n", want: nil},
		{name: "garbage PID", job: "7", out: "PID JOBID STEPID\n-1 7 0 0 0\n", err: "line 2: PID \"-1\""},
		{name: "short row", job: "7", out: "12 7\n", err: "line 1: 2 fields"},
	} {
		got, err := ParseListPIDs(c.out, c.job)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
		}
	}
}

func TestParseJobNode(t *testing.T) {
	for _, c := range []struct {
		name, out, node string
		want            []int
		found, shared   bool
		err             string
	}{
		{name: "one node", node: "gpu01", found: true, want: []int{0, 1},
			out: "JobId=42 JobName=x\n   NodeList=gpu01\n     Nodes=gpu01 CPU_IDs=0-7 Mem=0 GRES=gpu:2(IDX:0-1)\n   MinCPUsNode=1\n"},
		{name: "bad CPU_IDs", node: "gpu01", found: true, err: "CPU_IDs", out: "     Nodes=gpu01 CPU_IDs=0-x Mem=0 GRES=\n"},
		{name: "typed, hostlist", node: "gpu03", found: true, want: []int{4, 6, 7},
			out: "     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:h100:4(IDX:0-3)\n     Nodes=gpu03 CPU_IDs=0-7 Mem=0 GRES=gpu:h100:3(IDX:4,6-7),nic:1(IDX:0)\n"},
		{name: "no GPU on the node", node: "gpu01", found: true, want: nil, out: "     Nodes=gpu01 CPU_IDs=0-7 Mem=1024 GRES=\n"},
		{name: "not on the node", node: "gpu09", found: false, out: "     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:2(IDX:0-1)\n"},
		{name: "bad IDX", node: "gpu01", found: true, err: "IDX list", out: "     Nodes=gpu01 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:x)\n"},
		// Shared GRES print per GPU "allocated/available"
		// (gres_stepmgr.c _build_shared_gres_details): no IDX, and not
		// "no GPU" either.
		{name: "shards", node: "gpu01", found: true, want: nil, shared: true, out: "     Nodes=gpu01 CPU_IDs=0-1 Mem=0 GRES=shard:2(2/8,0/8)\n"},
		{name: "gpu and shard", node: "gpu01", found: true, want: []int{1}, shared: true, out: "     Nodes=gpu01 CPU_IDs=0-1 Mem=0 GRES=gpu:1(IDX:1),shard:2(0/8,2/8)\n"},
	} {
		jn, found, err := ParseJobNode(c.out, c.node)
		got := jn.GPUs
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || found != c.found || !reflect.DeepEqual(got, c.want) || jn.SharedGPU != c.shared {
			t.Errorf("%s: %v %v %v shared=%v, want %v %v shared=%v", c.name, got, found, err, jn.SharedGPU, c.want, c.found, c.shared)
		}
	}
}

func FuzzParseListPIDs(f *testing.F) {
	f.Add("PID      JOBID    STEPID   LOCALID GLOBALID\n1 1234 1234 0 0\n", "1234")
	f.Fuzz(func(t *testing.T, out, job string) {
		pids, err := ParseListPIDs(out, job)
		if err == nil {
			for _, p := range pids {
				if p <= 0 {
					t.Fatalf("PID %d accepted", p)
				}
			}
		}
	})
}

func FuzzParseJobNode(f *testing.F) {
	f.Add("     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:h100:4(IDX:0-3)\n", "gpu01")
	f.Fuzz(func(t *testing.T, out, node string) {
		_, _, _ = ParseJobNode(out, node)
	})
}

// The real outputs Debian's Slurm 22.05 gave for a job of the Slurm e2e
// (testdata/scontrol-job.SOURCE).
func TestRealScontrolJobOutputs(t *testing.T) {
	show, err := os.ReadFile("testdata/scontrol-show-job-d.txt")
	if err != nil {
		t.Fatal(err)
	}
	jn, found, err := ParseJobNode(string(show), "vm")
	if err != nil || !found || !reflect.DeepEqual(jn.GPUs, []int{0, 1}) || !reflect.DeepEqual(jn.CPUIDs, []int{0, 1}) {
		t.Errorf("show job -d: %+v %v %v, want GPUs and CPUs 0,1", jn, found, err)
	}
	if _, found, _ := ParseJobNode(string(show), "gpu01"); found {
		t.Error("a node the job is not on was found")
	}
	pids, err := os.ReadFile("testdata/scontrol-listpids.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseListPIDs(string(pids), "43")
	if err != nil || !reflect.DeepEqual(got, []int32{22311, 22314, 22315}) {
		t.Errorf("listpids: %v %v", got, err)
	}
}

// Real `scontrol -d show job` outputs of the Hebrew University's clusters,
// 2019 to 2025 (testdata/scontrol-job.SOURCE): Slurm 18.08's GRES_IDX=,
// 19.05's untyped "gpu(IDX:5)", a CPU_IDs list scontrol cut at 126
// characters, and a count-only GRES beside a GPU.
func TestRealScontrolJobOutputsHUJI(t *testing.T) {
	data, err := os.ReadFile("testdata/scontrol-show-job-d-huji.txt")
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]string{}
	for _, block := range strings.Split(string(data), "\n\n") {
		if id, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(block), "JobId="), " "); ok {
			jobs[id] = block
		}
	}
	for _, c := range []struct {
		job, node string
		found     bool
		gpus      []int
		cpus      []int
		cut       bool
	}{
		// 18.08: "GRES_IDX=gpu(IDX:0,2-3,5)" used to read as no GPU at all.
		{job: "153291", node: "node-06", found: true, gpus: []int{0, 2, 3, 5}, cpus: []int{10, 11, 15, 21}},
		{job: "1", node: "node-64", found: true, cpus: []int{0, 4, 5, 6, 7}},
		{job: "2423559", node: "cortex-08", found: true, gpus: []int{5}, cpus: []int{20}},
		// "CPU_IDs=...,112,115-": cut by scontrol, not a bad list; it used
		// to fail the whole record.
		{job: "1306093", node: "node-12", found: true, cut: true},
		{job: "25686416", node: "node-005", found: true, gpus: []int{3}, cpus: []int{14, 15}},
		{job: "25687666", node: "node-001", found: true, gpus: []int{1}, cpus: []int{2, 3}},
		{job: "134238037", node: "node-06", found: false},
	} {
		out, ok := jobs[c.job]
		if !ok {
			t.Fatalf("job %s not in the fixture", c.job)
		}
		jn, found, err := ParseJobNode(out, c.node)
		if err != nil || found != c.found || !reflect.DeepEqual(jn.GPUs, c.gpus) || !reflect.DeepEqual(jn.CPUIDs, c.cpus) || jn.CPUIDsCut != c.cut {
			t.Errorf("job %s on %s: %+v found=%v err=%v, want GPUs %v CPUs %v cut=%v found=%v", c.job, c.node, jn, found, err, c.gpus, c.cpus, c.cut, c.found)
		}
	}
}
