package slurm

import (
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

func TestParseJobGPUs(t *testing.T) {
	for _, c := range []struct {
		name, out, node string
		want            []int
		found           bool
		err             string
	}{
		{name: "one node", node: "gpu01", found: true, want: []int{0, 1},
			out: "JobId=42 JobName=x\n   NodeList=gpu01\n     Nodes=gpu01 CPU_IDs=0-7 Mem=0 GRES=gpu:2(IDX:0-1)\n   MinCPUsNode=1\n"},
		{name: "typed, hostlist", node: "gpu03", found: true, want: []int{4, 6, 7},
			out: "     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:h100:4(IDX:0-3)\n     Nodes=gpu03 CPU_IDs=0-7 Mem=0 GRES=gpu:h100:3(IDX:4,6-7),nic:1(IDX:0)\n"},
		{name: "no GPU on the node", node: "gpu01", found: true, want: nil, out: "     Nodes=gpu01 CPU_IDs=0-7 Mem=1024 GRES=\n"},
		{name: "not on the node", node: "gpu09", found: false, out: "     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:2(IDX:0-1)\n"},
		{name: "bad IDX", node: "gpu01", found: true, err: "IDX list", out: "     Nodes=gpu01 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:x)\n"},
	} {
		got, found, err := ParseJobGPUs(c.out, c.node)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || found != c.found || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v %v %v, want %v %v", c.name, got, found, err, c.want, c.found)
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

func FuzzParseJobGPUs(f *testing.F) {
	f.Add("     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:h100:4(IDX:0-3)\n", "gpu01")
	f.Fuzz(func(t *testing.T, out, node string) {
		_, _, _ = ParseJobGPUs(out, node)
	})
}
