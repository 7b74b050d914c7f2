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

func TestParseGresConf(t *testing.T) {
	data := `AutoDetect=nvml
NodeName=tux3 AutoDetect=off Name=gpu File=/dev/nvidia[0-3]
NodeName=tux[4-5] AutoDetect=off
Name=gpu Type=h100 File=/dev/nvidia[0-1] Cores=0-55 Flags=env_uuid
Name=gpu Type=h100 MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap21 CPUs=[56-111]
name=mps count=200 file=/dev/nvidia0
Type=tesla File=/dev/nvidia1
NodeName=tux1 Type=tesla File=/dev/nvidia2
Name=gpu NodeName=tux1 File=/dev/nvidia2
Name=gpu Bogus=1
Name=gpu File=/dev/nvidia[3-1]
Name=gpu Cores=x
Name=gpu Count=lots
AutoDetect=magic
`
	g := ParseGresConfData("gres.conf", []byte(data))
	if g.AutoDetect != "nvml" {
		t.Errorf("global AutoDetect = %q", g.AutoDetect)
	}
	for node, want := range map[string]string{"tux3": "off", "tux4": "off", "tux9": "nvml"} {
		if got, _ := g.AutoDetectFor(node); got != want {
			t.Errorf("AutoDetectFor(%s) = %q, want %q", node, got, want)
		}
	}
	if n := len(g.Records); n != 4 {
		t.Fatalf("%d records, want 4: %+v", n, g.Records)
	}
	devs := Devices(g.ForNode("tux9", "gpu"))
	var files []string
	for _, d := range devs {
		files = append(files, d.File)
	}
	if !reflect.DeepEqual(files, []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2"}) {
		t.Errorf("tux9 devices = %v", files)
	}
	if devs[2].CoresKey != "CPUs" || !reflect.DeepEqual(devs[2].Cores[:2], []int{56, 57}) {
		t.Errorf("CPUs alias: %+v", devs[2])
	}
	if len(Devices(g.ForNode("tux3", "gpu"))) != 7 {
		t.Errorf("tux3 gets its own 4 devices plus the 3 node-less ones")
	}
	var lines []int
	for _, e := range g.Errors {
		lines = append(lines, e.Line)
		if e.File != "gres.conf" || e.Msg == "" {
			t.Errorf("error without file or message: %+v", e)
		}
	}
	if !reflect.DeepEqual(lines, []int{7, 8, 9, 10, 11, 12, 13, 14}) {
		t.Errorf("error lines = %v (%v)", lines, g.Errors)
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
}

func FuzzParseConf(f *testing.F) {
	for _, s := range []string{"NodeName=a Gres=gpu:1\n", "Key=\"x y\" # c\n", "a \\\nb=c", "Include x\n", "x"} {
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

func FuzzParseGresConf(f *testing.F) {
	for _, s := range []string{"AutoDetect=nvml\n", "NodeName=a[1-2] Name=gpu File=/dev/nvidia[0-3] Cores=0-3 Links=-1,0\n", "Name=gpu Count=10g\n", "Type=x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g := ParseGresConfData("gres.conf", []byte(s))
		for _, node := range []string{"", "a1", "x"} {
			g.AutoDetectFor(node)
			_ = Devices(g.ForNode(node, "gpu"))
		}
		c := ParseSlurmConfData("slurm.conf", []byte(s))
		c.Node("a1")
		c.GPUNodes()
	})
}

func FuzzParseGresSpec(f *testing.F) {
	f.Add("gpu:h100:8,gpu:1g.10gb:16(S:0-1)")
	f.Fuzz(func(t *testing.T, s string) {
		ParseGresSpec(s) // must not panic
	})
}
