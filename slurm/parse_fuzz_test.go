package slurm

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedGresFixtures adds the real configs of testdata/gres (each file whole:
// slurm.conf, gres.conf, slurmd -G and scontrol output with prose around).
func seedGresFixtures(f *testing.F, add func(string)) {
	paths, _ := filepath.Glob("testdata/gres/*.txt")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(string(b))
	}
}

// FuzzParseConfFile reads a slurm.conf and a file it includes, both
// arbitrary, through ParseConfFile and the three readers on it: never a
// panic, at most 256 files read whatever the Includes (a self-including
// file once), every line and error naming one of the files and a line in
// it. Globs go to the real file system, so an Include with one is skipped.
func FuzzParseConfFile(f *testing.F) {
	seedGresFixtures(f, func(s string) { f.Add(s, "") })
	f.Add("ClusterName=c\nInclude nodes.conf\nInclude missing.conf\n", "NodeName=gpu[1-2] Gres=gpu:8\nbad line\n")
	f.Add(strings.Repeat("Include slurm.conf\n", 6), "")
	f.Add("Include nodes.conf\nInclude nodes.conf\n", strings.Repeat("Include slurm.conf\nInclude nodes.conf\n", 4))
	f.Add("Include /etc/slurm/./nodes.conf\n", "Include ../slurm/slurm.conf\n")
	f.Fuzz(func(t *testing.T, main, inc string) {
		if strings.ContainsAny(main+inc, "*?[") {
			return
		}
		files := map[string]string{"/etc/slurm/slurm.conf": main, "/etc/slurm/nodes.conf": inc}
		reads := 0
		read := func(p string) ([]byte, error) {
			reads++
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		}
		lines, errs := ParseConfFile("/etc/slurm/slurm.conf", read)
		if reads > maxIncludedFiles {
			t.Fatalf("%d files read", reads)
		}
		nlines := func(file string) int {
			if s, ok := files[file]; ok {
				return strings.Count(s, "\n") + 1
			}
			return 0
		}
		for _, l := range lines {
			if l.Num < 1 || l.Num > nlines(l.File) {
				t.Fatalf("line %+v outside its file", l)
			}
		}
		for _, e := range errs {
			if e.File == "" || e.Msg == "" || e.Line < 0 || e.Line > nlines(e.File) {
				t.Fatalf("error %+v names no file or a line outside it", e)
			}
		}
		ParseSlurmConf("/etc/slurm/slurm.conf", read).GPUNodes()
		ParseGresConf("/etc/slurm/slurm.conf", read).ForNode("x", "gpu")
		ParseCgroupConf("/etc/slurm/slurm.conf", read)
	})
}

// FuzzParseShowNodes ("scontrol -o show nodes"): never a panic, at most one
// node a line, every node named, and an error that names the line.
func FuzzParseShowNodes(f *testing.F) {
	f.Add(showNodeDrained)
	f.Add(showNodesOneLine)
	f.Add("NodeName=a State=IDLE\nNodeName=b State=IDLE+DRAIN Reason=gpuprobe: x y [root@2026-01-01T00:00:00]\n\n")
	f.Add("NodeName=a State=IDLE Reason=a [b@c] d [root@2026-01-01T00:00:00] Partitions=x\n")
	f.Add("State=IDLE\n")
	f.Fuzz(func(t *testing.T, s string) {
		nodes, err := ParseShowNodes(s)
		if err != nil {
			if !strings.Contains(err.Error(), "scontrol -o show nodes") {
				t.Fatalf("error does not say what it read: %v", err)
			}
			return
		}
		if len(nodes) > strings.Count(s, "\n")+1 {
			t.Fatalf("%d nodes from %d lines", len(nodes), strings.Count(s, "\n")+1)
		}
		for _, n := range nodes {
			if n.Name == "" {
				t.Fatalf("unnamed node %+v", n)
			}
		}
	})
}

// FuzzParseSlurmdG ("slurmd -G"): never a panic, no more devices and errors
// than GRES lines, each error naming the file and a line in the output.
func FuzzParseSlurmdG(f *testing.F) {
	seedGresFixtures(f, func(s string) { f.Add(s) })
	f.Add("slurmd: Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-63 CoreCnt=128 Links=-1,0 Flags=HAS_FILE\n")
	f.Add("slurmd: Gres Name=gpu Index=x Cores=7-3\nslurmd: Gres \nslurmd: Gres a b\n")
	f.Fuzz(func(t *testing.T, s string) {
		devs, errs := ParseSlurmdG("slurmd -G", s)
		gres := strings.Count(s, "slurmd: Gres ")
		if len(devs)+len(errs) > gres {
			t.Fatalf("%d devices and %d errors from %d GRES lines", len(devs), len(errs), gres)
		}
		n := strings.Count(s, "\n") + 1
		for _, e := range errs {
			if e.File != "slurmd -G" || e.Line < 1 || e.Line > n {
				t.Fatalf("error %+v", e)
			}
		}
	})
}
