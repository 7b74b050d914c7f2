package slurm

import (
	"reflect"
	"testing"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

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
	devs := slurmstate.Devices(g.ForNode("tux9", "gpu"))
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
	if len(slurmstate.Devices(g.ForNode("tux3", "gpu"))) != 7 {
		t.Errorf("tux3 gets its own 4 devices plus the 3 node-less ones")
	}
	var lines []int
	for _, e := range g.Errors {
		lines = append(lines, e.Line)
		if e.File != "gres.conf" || e.Msg == "" {
			t.Errorf("error without file or message: %+v", e)
		}
	}
	if !reflect.DeepEqual(lines, []int{7, 8, 9, 10, 11, 12, 13}) {
		t.Errorf("error lines = %v (%v)", lines, g.Errors)
	}
}

func FuzzParseGresConf(f *testing.F) {
	for _, s := range []string{"AutoDetect=nvml\n", "NodeName=a[1-2] Name=gpu File=/dev/nvidia[0-3] Cores=0-3 Links=-1,0\n", "Name=gpu Count=10g\n", "Type=x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g := ParseGresConfData("gres.conf", []byte(s))
		for _, node := range []string{"", "a1", "x"} {
			g.AutoDetectFor(node)
			_ = slurmstate.Devices(g.ForNode(node, "gpu"))
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s))
		c.Node("a1")
		c.GPUNodes()
	})
}

// Lines slurmd parses but that are wrong (an unknown AutoDetect=, File= with
// MultipleFiles=) keep their record: check.LintGres and LintAutoDetect
// judge them, naming the line.
func TestParseGresConfKeepsLintedLines(t *testing.T) {
	g := ParseGresConfData("gres.conf", []byte("AutoDetect=magic\nName=gpu File=/dev/nvidia0 MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21\n"))
	if len(g.Errors) != 0 || len(g.Records) != 1 || g.AutoDetect != "magic" || g.AutoDetectWhere != "gres.conf:1" {
		t.Errorf("errors %v, records %+v, AutoDetect %q at %q", g.Errors, g.Records, g.AutoDetect, g.AutoDetectWhere)
	}
}
