package check

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/slurm"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// TestSlurmdOracle asks the real slurmd how it reads the Cores=/CPUs= of
// every captured gres.conf (slurmd -G, with SlurmdParameters=config_overrides
// so the node's slurm.conf line is its hardware) and requires gpuprobe's
// core-range verdict to agree line for line: slurmd says "Invalid GRES data
// for gpu, Cores=..." exactly where slurm.gres says the line names a core
// the node does not have. scripts/slurm-e2e.sh runs it with slurmd installed
// and GPUPROBE_REQUIRE_SLURMD=1, where a missing slurmd fails.
func TestSlurmdOracle(t *testing.T) {
	slurmd := findSlurmd(t)
	files, _ := filepath.Glob("../slurm/testdata/gres/*.txt")
	judged, refused := 0, 0
	for _, f := range files {
		slurmConf, gresConf := section(t, f, "slurm.conf"), section(t, f, "gres.conf")
		if slurmConf == "" || gresConf == "" || !strings.Contains(gresConf, "Cores=") && !strings.Contains(gresConf, "CPUs=") {
			continue
		}
		sc := slurmstate.ParseSlurmConfData("slurm.conf", []byte(slurmConf))
		// Every File= (and MultipleFiles=) becomes /dev/null, a character device every machine
		// has: slurmd waits for missing device files and then stops, and
		// the files are not what this oracle asks about.
		gresConf = fileRe.ReplaceAllString(gresConf, "$1=/dev/null")
		gc := slurm.ParseGresConfData("gres.conf", []byte(gresConf))
		// One slurmd -G per node a record names (or the first GPU node).
		byNode := map[string][]slurmstate.GresRecord{}
		var order []string
		for _, r := range gc.Records {
			host := ""
			if r.NodeName != "" {
				if hs, err := slurmstate.ExpandHostlist(r.NodeName); err == nil && len(hs) > 0 {
					host = hs[0]
				}
			} else {
				for _, nl := range sc.Nodes {
					if nl.NodeName != "DEFAULT" && nl.Gres != "" {
						if hs, err := slurmstate.ExpandHostlist(nl.NodeName); err == nil && len(hs) > 0 {
							host = hs[0]
							break
						}
					}
				}
			}
			if host == "" || r.Cores == nil {
				continue
			}
			if byNode[host] == nil {
				order = append(order, host)
			}
			byNode[host] = append(byNode[host], r)
		}
		dir := t.TempDir()
		conf := slurmConf + "\nClusterName=oracle\nSlurmctldHost=localhost\nSlurmdParameters=config_overrides\n"
		os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte(conf), 0o644)
		os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(gresConf), 0o644)
		for _, host := range order {
			node, ok := sc.Node(host)
			if !ok || node.Sockets == 0 || node.CoresPerSocket == 0 {
				continue
			}
			out, _ := exec.Command(slurmd, "-G", "-f", filepath.Join(dir, "slurm.conf"), "-N", host).CombinedOutput()
			rejected := map[string]bool{}
			for _, m := range invalidCores.FindAllStringSubmatch(string(out), -1) {
				rejected[m[1]] = true
			}
			for _, r := range byNode[host] {
				judged++
				if rejected[r.CoresKey+"="+r.CoresRaw] {
					refused++
				}
				ours := slices.Max(r.Cores) >= node.Sockets*node.CoresPerSocket
				if theirs := rejected[r.CoresKey+"="+r.CoresRaw]; ours != theirs {
					t.Errorf("%s: %s=%s on %s (%d×%d cores): slurmd rejects it: %v, gpuprobe fails it: %v\nslurmd -G said:\n%s",
						filepath.Base(f), r.CoresKey, r.CoresRaw, host, node.Sockets, node.CoresPerSocket, theirs, ours, out)
				}
			}
		}
	}
	if refused == 0 || refused == judged {
		t.Fatalf("%d Cores= lines judged, %d refused by slurmd: the oracle needs both kinds to mean anything", judged, refused)
	}
	t.Logf("%d Cores= lines judged the same by slurmd -G and gpuprobe (%d refused by both)", judged, refused)
}

var fileRe = regexp.MustCompile(`\b((?:Multiple)?Files?)=\S+`)

var invalidCores = regexp.MustCompile(`Invalid GRES data for \S+, ((?:Cores|CPUs)=\S+)`)

// section is a fixture file's "# ==== name ====" part.
func section(t *testing.T, file, name string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, l := range strings.Split(string(data), "\n") {
		if m := sectionRe.FindStringSubmatch(l); m != nil {
			in = m[1] == name
			continue
		}
		if in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSlurmdOracleParse asks the real slurmd which lines of every captured
// gres.conf it cannot parse ("Parse error in file gres.conf line N",
// s_p_parse_file in src/common/parse_config.c) and requires gpuprobe to
// refuse exactly those lines. A fixture without a slurm.conf part gets a
// node line of its own (2×64 cores) for the first node gres.conf names.
func TestSlurmdOracleParse(t *testing.T) {
	slurmd := findSlurmd(t)
	files, _ := filepath.Glob("../slurm/testdata/gres/*.txt")
	judged := 0
	for _, f := range files {
		gresConf := section(t, f, "gres.conf")
		if gresConf == "" {
			continue
		}
		gresConf = fileRe.ReplaceAllString(gresConf, "$1=/dev/null")
		gc := slurm.ParseGresConfData("gres.conf", []byte(gresConf))
		slurmConf := section(t, f, "slurm.conf")
		sc := slurmstate.ParseSlurmConfData("slurm.conf", []byte(slurmConf))
		host := ""
		for _, r := range gc.Records {
			if hs, err := slurmstate.ExpandHostlist(r.NodeName); r.NodeName != "" && err == nil && len(hs) > 0 {
				host = hs[0]
				break
			}
		}
		if _, ok := sc.Node(host); !ok || host == "" {
			if host == "" {
				host = "oracle1"
			}
			slurmConf += "\nGresTypes=gpu\nNodeName=" + host + " CPUs=256 Sockets=2 CoresPerSocket=64 ThreadsPerCore=2\n"
		}
		dir := t.TempDir()
		run := func(slurmConf string) []byte {
			conf := slurmConf + "\nClusterName=oracle\nSlurmctldHost=localhost\nSlurmdParameters=config_overrides\n"
			os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte(conf), 0o644)
			os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(gresConf), 0o644)
			out, _ := exec.Command(slurmd, "-G", "-f", filepath.Join(dir, "slurm.conf"), "-N", host).CombinedOutput()
			return out
		}
		out := run(slurmConf)
		if strings.Contains(string(out), "Unable to process configuration file") {
			// A slurm.conf setting this slurmd refuses (TaskPluginParam=Sched
			// on 22.05, MetricsType from 25.05): keep only the lines gres.conf
			// is read against.
			var keep []string
			for _, l := range strings.Split(slurmConf, "\n") {
				if k := strings.ToLower(strings.TrimSpace(l)); strings.HasPrefix(k, "grestypes=") || strings.HasPrefix(k, "nodename=") {
					keep = append(keep, l)
				}
			}
			t.Logf("%s: slurmd refuses the slurm.conf (%s); read again with its GresTypes= and NodeName= lines only", filepath.Base(f), strings.TrimSpace(strings.Split(string(out), "\n")[0]))
			out = run(strings.Join(keep, "\n"))
		}
		theirs := map[int]bool{}
		for _, m := range parseErrRe.FindAllStringSubmatch(string(out), -1) {
			n, _ := strconv.Atoi(m[1])
			theirs[n] = true
		}
		ours := map[int]bool{}
		for _, e := range gc.Errors {
			ours[e.Line] = true
		}
		judged++
		var missed, extra []string
		for n := range theirs {
			if !ours[n] {
				missed = append(missed, strconv.Itoa(n))
			}
		}
		for _, e := range gc.Errors {
			if !theirs[e.Line] {
				extra = append(extra, fmt.Sprintf("%d (%s)", e.Line, e.Msg))
			}
		}
		slices.Sort(missed)
		if len(missed) > 0 || len(extra) > 0 {
			t.Errorf("%s: slurmd cannot parse gres.conf lines %v that gpuprobe reads; gpuprobe refuses lines %v that slurmd parses\nslurmd -G said:\n%s",
				filepath.Base(f), missed, extra, out)
		}
	}
	if judged == 0 {
		t.Fatal("no gres.conf judged")
	}
	t.Logf("%d gres.conf files judged line by line against slurmd -G", judged)
}

var parseErrRe = regexp.MustCompile(`Parse error in file \S+ line (\d+)`)

// findSlurmd is the slurmd binary, or skips (fails under
// GPUPROBE_REQUIRE_SLURMD=1) when there is none.
func findSlurmd(t *testing.T) string {
	t.Helper()
	slurmd, err := exec.LookPath("slurmd")
	if err != nil {
		for _, p := range []string{"/usr/sbin/slurmd", "/usr/local/sbin/slurmd"} {
			if _, e := os.Stat(p); e == nil {
				slurmd, err = p, nil
			}
		}
	}
	if err != nil {
		if os.Getenv("GPUPROBE_REQUIRE_SLURMD") == "1" {
			t.Fatal("slurmd not found, and GPUPROBE_REQUIRE_SLURMD=1")
		}
		t.Skip("slurmd not installed: scripts/slurm-e2e.sh runs this oracle after installing it")
	}
	return slurmd
}

// TestSlurmdOracleLinksAndDuplicates asks the real slurmd, for every
// captured gres.conf, which Links= it drops ("Ignoring invalid Links=...",
// gres_links_validate) and whether it stops on bare records ("gres.conf
// duplicate records for gpu", _foreach_gres_conf), and requires LintGres
// to name the same: the Links= rows of one-device lines it flags, and the
// duplicate-records finding. The fixtures hold both kinds (deepops#1102's
// "-1,,0" row slurmd keeps; magic_castle#27's bare Name=gpu lines); a
// synthetic file adds rows slurmd drops.
func TestSlurmdOracleLinksAndDuplicates(t *testing.T) {
	slurmd := findSlurmd(t)
	files, _ := filepath.Glob("../slurm/testdata/gres/*.txt")
	type input struct{ name, slurm, gres string }
	var inputs []input
	for _, f := range files {
		if g := section(t, f, "gres.conf"); g != "" {
			inputs = append(inputs, input{filepath.Base(f), section(t, f, "slurm.conf"), g})
		}
	}
	inputs = append(inputs, input{"synthetic bad Links", "", "Name=gpu File=/dev/nvidia0 Links=0,0,0\nName=gpu File=/dev/nvidia1 Links=-1,1024\nName=gpu File=/dev/nvidia2 Links=-2,x,-1\nName=gpu File=/dev/nvidia3 Links=-2,,-1\n"})
	dups, links := 0, 0
	for _, in := range inputs {
		gresConf := fileRe.ReplaceAllString(in.gres, "$1=/dev/null")
		gc := slurm.ParseGresConfData("gres.conf", []byte(gresConf))
		if len(gc.Errors) > 0 {
			continue // slurmd stops at the parse error (TestSlurmdOracleParse)
		}
		host := ""
		for _, r := range gc.Records {
			if hs, err := slurmstate.ExpandHostlist(r.NodeName); r.NodeName != "" && err == nil && len(hs) > 0 {
				host = hs[0]
				break
			}
		}
		// Only the node lines and GresTypes: the rest of a fixture's
		// slurm.conf is not what is asked (and some of it 22.05 refuses).
		var keep []string
		for _, l := range strings.Split(in.slurm, "\n") {
			if k := strings.ToLower(strings.TrimSpace(l)); strings.HasPrefix(k, "grestypes=") || strings.HasPrefix(k, "nodename=") {
				keep = append(keep, l)
			}
		}
		slurmConf := strings.Join(keep, "\n")
		sc := slurmstate.ParseSlurmConfData("slurm.conf", []byte(slurmConf))
		if _, ok := sc.Node(host); !ok || host == "" {
			if host == "" {
				host = "oracle1"
			}
			slurmConf += "\nGresTypes=gpu\nNodeName=" + host + " CPUs=256 Sockets=2 CoresPerSocket=64 ThreadsPerCore=2\n"
		}
		dir := t.TempDir()
		conf := slurmConf + "\nClusterName=oracle\nSlurmctldHost=localhost\nSlurmdParameters=config_overrides\n"
		os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte(conf), 0o644)
		os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(gresConf), 0o644)
		out, _ := exec.Command(slurmd, "-G", "-f", filepath.Join(dir, "slurm.conf"), "-N", host).CombinedOutput()
		theirsLinks := map[string]bool{}
		for _, m := range droppedLinksRe.FindAllStringSubmatch(string(out), -1) {
			theirsLinks[m[1]] = true
		}
		oursLinks := map[string]bool{}
		oursDup := false
		for _, p := range LintGres(gc, host, "gpu") {
			oursDup = oursDup || strings.Contains(p.Msg, "duplicate records")
		}
		for _, r := range gc.ForNode(host, "gpu") {
			if r.LinksSet && len(r.Files) <= 1 && GresLinksProblem(r) != "" {
				oursLinks[r.Links] = true
			}
		}
		theirsDup := strings.Contains(string(out), "gres.conf duplicate records for gpu")
		if theirsDup {
			dups++
		}
		links += len(theirsLinks)
		if oursDup != theirsDup || fmt.Sprint(oursLinks) != fmt.Sprint(theirsLinks) {
			t.Errorf("%s on %s: slurmd: duplicate records %v, drops Links %v; gpuprobe: duplicate records %v, flags Links %v\nslurmd -G said:\n%s",
				in.name, host, theirsDup, theirsLinks, oursDup, oursLinks, out)
		}
	}
	if dups == 0 || links == 0 {
		t.Fatalf("slurmd found %d duplicate-record files and dropped %d Links=: the oracle needs both", dups, links)
	}
	t.Logf("%d gres.conf judged; slurmd stopped on duplicate records in %d and dropped %d Links=, as gpuprobe said", len(inputs), dups, links)
}

var droppedLinksRe = regexp.MustCompile(`Ignoring invalid Links=(\S+) for Name=gpu`)
