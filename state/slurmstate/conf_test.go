package slurmstate

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseConfSyntax(t *testing.T) {
	data := "# comment\n" +
		"ClusterName=gpu   # trailing comment\n" +
		"\n" +
		"CgroupReleaseAgentDir=\"/etc/slurm/cgroup dir\"\n" +
		"NodeName=a Gres=gpu:1 \\\n   CPUs=4\n" +
		"garbage here\n" +
		"Key=\"open quote\n" +
		"Comment=100\\#off\n"
	lines, errs := ParseConf("slurm.conf", []byte(data))
	var got [][]KV
	for _, l := range lines {
		got = append(got, l.Pairs)
	}
	want := [][]KV{
		{{"ClusterName", "gpu"}},
		{{"CgroupReleaseAgentDir", "/etc/slurm/cgroup dir"}},
		{{"NodeName", "a"}, {"Gres", "gpu:1"}, {"CPUs", "4"}},
		{{"Comment", "100#off"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pairs = %v\nwant %v", got, want)
	}
	if lines[2].Num != 5 {
		t.Errorf("continued line numbered %d, want 5", lines[2].Num)
	}
	if len(errs) != 2 || errs[0].Error() != `slurm.conf:7: "garbage" is not Key=Value` || !strings.HasPrefix(errs[1].Error(), "slurm.conf:8: unterminated") {
		t.Errorf("errors = %v", errs)
	}
}

// slurmd reads a pair with blanks around '=' (parse_config.c,
// keyvalue_pattern: "[[:space:]]*([-*+/]?)=[[:space:]]*"), and slurmd -G
// (22.05) agrees on each line below: "Name = gpu File = /dev/null" is a GPU,
// "Type= File=/dev/random" is a Type whose value is "File=/dev/random" (the
// node then fails "some records have File specification while others do
// not"), and "Type=" at the end of a line is "Parse error in file gres.conf
// line 3: \" Type=\"". gpuprobe read the first as not Key=Value.
func TestParseConfBlanksAroundEquals(t *testing.T) {
	data := "Name = gpu File = /dev/null\n" +
		"Name= gpu\tFile =/dev/zero Type = \"a b\"\n" +
		"Name=gpu File=/dev/full Type=\n" +
		"Name=gpu Type= File=/dev/random\n" +
		"Count+=2\n" +
		"Name =\n"
	lines, errs := ParseConf("gres.conf", []byte(data))
	var got [][]KV
	for _, l := range lines {
		got = append(got, l.Pairs)
	}
	want := [][]KV{
		{{"Name", "gpu"}, {"File", "/dev/null"}},
		{{"Name", "gpu"}, {"File", "/dev/zero"}, {"Type", "a b"}},
		{{"Name", "gpu"}, {"Type", "File=/dev/random"}},
		{{"Count+", "2"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pairs = %q\nwant %q", got, want)
	}
	if len(errs) != 2 || errs[0].Line != 3 || errs[0].Msg != `"Type=" is not Key=Value` || errs[1].Line != 6 {
		t.Errorf("errors = %v", errs)
	}
}

func TestParseSlurmConf(t *testing.T) {
	data := `ClusterName=c
GresTypes=gpu,mps
TaskPlugin=task/affinity,task/cgroup
TopologyPlugin=topology/tree
NodeName=DEFAULT Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 gres=gpu:8
NodeName=n[0-3] NodeAddr=localhost
NodeName=big Gres=gpu:h100:4,gpu:a100:4(S:0-1) CPUs=224
NodeName=bad Gres=gpu:x:y
PartitionName=p Nodes=ALL
`
	c := ParseSlurmConfData("slurm.conf", []byte(data))
	if !c.HasGresType("gpu") || !c.UsesCgroupTasks() || c.TopologyPlugin != "topology/tree" {
		t.Errorf("conf = %+v", c)
	}
	n, ok := c.Node("n2")
	if count, has := n.GPUCount(); !ok || !has || count != 8 || n.CPUs != 16 {
		t.Errorf("n2 = %+v", n)
	}
	b, _ := c.Node("big")
	if count, _ := b.GPUCount(); count != 8 || b.CPUs != 224 || b.GresSpec[1].Type != "a100" {
		t.Errorf("big = %+v", b)
	}
	if _, ok := c.Node("nope"); ok {
		t.Error("undeclared node found")
	}
	if len(c.Errors) != 1 || c.Errors[0].Line != 8 {
		t.Errorf("errors = %v", c.Errors)
	}
	if c.GPUNodes() != 5 {
		t.Errorf("GPUNodes = %d", c.GPUNodes())
	}
}

func TestParseGresSpec(t *testing.T) {
	tests := []struct {
		in   string
		want []GresSpec
		bad  bool
	}{
		{in: "gpu:8", want: []GresSpec{{"gpu", "", 8}}},
		{in: "gpu", want: []GresSpec{{"gpu", "", 1}}},
		{in: "gpu:h100:8", want: []GresSpec{{"gpu", "h100", 8}}},
		{in: "gpu:tesla", want: []GresSpec{{"gpu", "tesla", 1}}},
		{in: "tmpdisk:10g", want: []GresSpec{{"tmpdisk", "", 10 << 30}}},
		{in: "gpu:3g.40gb:8,gpu:1g.10gb:16(S:0-1)", want: []GresSpec{{"gpu", "3g.40gb", 8}, {"gpu", "1g.10gb", 16}}},
		{in: "gpu:a100:no_consume:2", want: []GresSpec{{"gpu", "a100", 2}}},
		{in: "(null)", want: nil},
		{in: "gpu:a:b:c:d", bad: true},
		{in: "gpu:a:x", bad: true},
		{in: ":4", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseGresSpec(tt.in)
		if tt.bad != (err != nil) || !tt.bad && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseGresSpec(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestCgroupConf(t *testing.T) {
	c := ParseCgroupConfData("cgroup.conf", []byte("CgroupAutomount=yes\nConstrainDevices=yes\nConstrainCores=maybe\n"))
	if !c.ConstrainDevices || c.ConstrainCores || len(c.Errors) != 1 || c.Errors[0].Line != 3 {
		t.Errorf("cgroup = %+v", c)
	}
	// slurmd's booleans (parse_value.c s_p_handle_boolean) take up/down too;
	// "ConstrainDevices=Up" was an error and read as no device cgroup.
	c = ParseCgroupConfData("cgroup.conf", []byte("ConstrainDevices=Up\nConstrainCores=down\n"))
	if !c.ConstrainDevices || c.ConstrainCores || len(c.Errors) != 0 {
		t.Errorf("up/down: %+v", c)
	}
	// Blanks around '=' are slurmd's too (parse_config.c keyvalue_pattern);
	// "ConstrainDevices = yes" was an error and read as no device cgroup.
	c = ParseCgroupConfData("cgroup.conf", []byte("CgroupPlugin = cgroup/v2\nConstrainDevices = yes\nConstrainCores= yes\n"))
	if !c.ConstrainDevices || !c.ConstrainCores || c.CgroupPlugin != "cgroup/v2" || len(c.Errors) != 0 {
		t.Errorf("blanks around '=': %+v", c)
	}
}

func FuzzParseConf(f *testing.F) {
	for _, s := range []string{"NodeName=a Gres=gpu:1\n", "Key=\"x y\" # c\n", "a \\\nb=c", "Include x\n", "x", "\v", "\u2000", "A = b C= \"d e\" F=\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lines, errs := ParseConf("f.conf", []byte(s))
		n := strings.Count(s, "\n") + 1
		for _, l := range lines {
			if l.Num < 1 || l.Num > n || len(l.Pairs) == 0 && l.Include == "" {
				t.Fatalf("line %+v out of range 1..%d", l, n)
			}
		}
		for _, e := range errs {
			if e.Line < 1 || e.Line > n {
				t.Fatalf("error %v out of range 1..%d", e, n)
			}
		}
	})
}

func FuzzParseGresSpec(f *testing.F) {
	f.Add("gpu:h100:8,gpu:1g.10gb:16(S:0-1)")
	f.Fuzz(func(t *testing.T, s string) {
		ParseGresSpec(s) // must not panic
	})
}
