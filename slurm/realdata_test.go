package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// The fixtures in testdata/gres are real configs, copied verbatim with their
// "# source:" headers from public repositories; several files hold more than
// one config, each after a "# ==== name ====" line.

var sectionRe = regexp.MustCompile(`^# ==== (.+) ====$`)

// sections splits a fixture into its configs. Each keeps its line numbers
// from the fixture (earlier lines become blank), so an error's line is the
// fixture's line.
func sections(t *testing.T, name string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "gres", name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if !strings.HasPrefix(lines[0], "# source:") {
		t.Fatalf("%s: fixture lost its # source: header", name)
	}
	out := map[string]string{}
	cur, start := "", 0
	flush := func(end int) {
		if end > start {
			out[cur] = strings.Repeat("\n", start) + strings.Join(lines[start:end], "\n")
		}
	}
	for i, l := range lines {
		if m := sectionRe.FindStringSubmatch(l); m != nil {
			flush(i)
			cur, start = m[1], i+1
		}
	}
	flush(len(lines))
	return out
}

func lineOf(t *testing.T, text, needle string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, needle) {
			return i + 1
		}
	}
	t.Fatalf("%q not in fixture", needle)
	return 0
}

func problems(ps []check.GresProblem) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, "\n")
}

func TestRealGresConfigs(t *testing.T) {
	t.Run("ehb54 tesla3: node line without Gres", func(t *testing.T) {
		s := sections(t, "ehb54_slurm-gpu_tesla3_no-node-gres.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		if len(g.Errors) > 0 || g.AutoDetect != "" {
			t.Errorf("errors %v autodetect %q (AutoDetect=nvml is commented out)", g.Errors, g.AutoDetect)
		}
		if devs := slurmstate.Devices(g.ForNode("localhost", "gpu")); len(devs) != 3 || devs[0].Type != "tesla" {
			t.Errorf("devices %+v", devs)
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["slurm.conf"]))
		n, ok := c.Node("localhost")
		if _, has := n.GPUCount(); !ok || has {
			t.Errorf("localhost must be declared without Gres=: %+v", n)
		}
		if cg := slurmstate.ParseCgroupConfData("cgroup.conf", []byte(s["cgroup.conf"])); !cg.ConstrainDevices || len(cg.Errors) > 0 {
			t.Errorf("cgroup %+v", cg)
		}
	})
	t.Run("hkust: node-specific AutoDetect=off on the Name line", func(t *testing.T) {
		s := sections(t, "hkust_single-node_8gpu_autodetect-off.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		if ad, _ := g.AutoDetectFor("bld"); ad != "off" || len(slurmstate.Devices(g.ForNode("bld", "gpu"))) != 8 {
			t.Errorf("autodetect %q devices %d", ad, len(slurmstate.Devices(g.ForNode("bld", "gpu"))))
		}
		if len(g.ForNode("other", "gpu")) != 0 {
			t.Error("NodeName=bld line applied to another node")
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["slurm.conf"]))
		n, _ := c.Node("bld")
		if cnt, _ := n.GPUCount(); cnt != 8 || !c.UsesCgroupTasks() {
			t.Errorf("slurm.conf %+v", c)
		}
	})
	t.Run("lambda: CPUs= alias split per socket", func(t *testing.T) {
		s := sections(t, "lambda-slurm_8gpu_cpus-per-socket.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		devs := slurmstate.Devices(g.ForNode("lambda", "gpu"))
		if len(devs) != 8 || devs[4].CoresKey != "CPUs" || cpulist.Format(devs[4].Cores) != "16-31,48-63" || cpulist.Format(devs[0].Cores) != "0-15,32-47" {
			t.Errorf("devices %+v", devs)
		}
		if p := check.LintGres(g, "lambda", "gpu"); len(p) > 0 {
			t.Errorf("clean config linted: %s", problems(p))
		}
	})
	t.Run("mknoxnv: one-line gres.conf against Gres=gpu:8", func(t *testing.T) {
		s := sections(t, "mknoxnv_ubuntu-slurm_dgx1_gres_and_mismatch.txt")
		one := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		dgx := ParseGresConfData("gres.conf.dgx", []byte(s["gres.conf.dgx"]))
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["slurm.conf"]))
		n, _ := c.Node("linux1")
		cnt, _ := n.GPUCount()
		if got := len(slurmstate.Devices(one.ForNode("linux1", "gpu"))); got != 1 || cnt != 8 {
			t.Errorf("gres.conf declares %d, slurm.conf %d: the mismatch the fixture shows", got, cnt)
		}
		if got := len(slurmstate.Devices(dgx.ForNode("linux1", "gpu"))); got != 8 {
			t.Errorf("gres.conf.dgx declares %d", got)
		}
		if n.CPUs != 80 {
			t.Errorf("CPUs = %d", n.CPUs)
		}
	})
	t.Run("shine: slurm.conf only, tabs, several GPU nodes", func(t *testing.T) {
		s := sections(t, "shine-cluster_slurmconf_only_no_gres.conf.txt")
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s[""]))
		for node, want := range map[string]uint64{"coruscant": 8, "eureka": 10, "tatooine": 4, "hoth": 8} {
			n, _ := c.Node(node)
			if got, _ := n.GPUCount(); got != want {
				t.Errorf("%s: %d GPUs, want %d", node, got, want)
			}
		}
		if c.GPUNodes() != 5 || c.TopologyPlugin != "" || len(c.Errors) > 0 {
			t.Errorf("GPU nodes %d topology %q errors %v", c.GPUNodes(), c.TopologyPlugin, c.Errors)
		}
		if cg := slurmstate.ParseCgroupConfData("cgroup.conf", []byte(s["slurm/etc/slurm/cgroup.conf"])); !cg.ConstrainDevices {
			t.Error("ConstrainDevices=yes not read")
		}
	})
	t.Run("test7.17.x: compact forms and DEFAULT node lines", func(t *testing.T) {
		for _, tc := range []struct {
			file  string
			cores string
			gres  bool
		}{
			{"slurm_testsuite_test7.17.1.conf.txt", "0-3", true},
			{"slurm_testsuite_test7.17.2.conf.txt", "0-7", true},
			{"slurm_testsuite_test7.17.3.conf.txt", "0-7", true},
			{"slurm_testsuite_test7.17.4.conf.txt", "", true},
			{"slurm_testsuite_test7.17.6.conf.txt", "0-3", false},
			{"slurm_testsuite_test7.17.7.conf.txt", "0-10000", true},
		} {
			s := sections(t, tc.file)
			g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
			devs := slurmstate.Devices(g.ForNode("test_node3", "gpu"))
			if len(g.Errors) > 0 || len(devs) != 8 || cpulist.Format(devs[0].Cores) != tc.cores {
				t.Errorf("%s: errors %v, %d devices, cores %q", tc.file, g.Errors, len(devs), cpulist.Format(devs[0].Cores))
			}
			c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["slurm.conf"]))
			n, ok := c.Node("test_node3")
			cnt, has := n.GPUCount()
			if !ok || has != tc.gres || has && cnt != 8 || c.HasGresType("gpu") != tc.gres {
				t.Errorf("%s: node %+v gres types %v", tc.file, n, c.GresTypes)
			}
		}
	})
	t.Run("rdgpu MIG notes: the stray line is a parse error at its line", func(t *testing.T) {
		s := sections(t, "unidentified_rdgpu_a100pcie_mig_1g10gb_gres.txt")
		text := s[""]
		g := ParseGresConfData("gres.conf", []byte(text))
		// The notes mix in two slurm.conf NodeName lines and a stray
		// "RDGPU01: GPU02": three lines gres.conf cannot hold.
		want := map[int]bool{lineOf(t, text, "RDGPU01: GPU02"): true,
			lineOf(t, text, "NodeName=rdgpu01 CPUs=48"): true, lineOf(t, text, "NodeName=rdgpu02 CPUs=48"): true}
		if len(g.Errors) != 3 {
			t.Fatalf("want 3 errors, got %v", g.Errors)
		}
		for _, e := range g.Errors {
			if !want[e.Line] {
				t.Errorf("unexpected error %v (want lines %v)", e, want)
			}
		}
		for _, e := range g.Errors {
			if !strings.HasPrefix(e.Error(), "gres.conf:") {
				t.Errorf("error does not name the file: %v", e)
			}
		}
		// Variant 2 sets AutoDetect=nvml on its MultipleFiles lines.
		if g.AutoDetect != "nvml" {
			t.Errorf("AutoDetect = %q", g.AutoDetect)
		}
		var multi int
		for _, r := range g.Records {
			if r.MultipleFiles != nil {
				multi++
				if !strings.HasPrefix(r.MultipleFiles[0], "/dev/nvidia") || r.Type != "nvidia_a100_80gb_pcie_1g.10gb" {
					t.Errorf("record %+v", r)
				}
			}
		}
		if multi != 14 {
			t.Errorf("%d MultipleFiles records, want 14", multi)
		}
	})
	t.Run("deepops DGX A100 MIG: Gres with MIG profile types", func(t *testing.T) {
		s := sections(t, "deepops_dgxa100_mig_slurmconf_scontrol.txt")
		var after, before string
		for _, l := range strings.Split(s[""], "\n") {
			if strings.HasPrefix(l, "> NodeName=") {
				after = strings.TrimPrefix(l, "> ")
			}
			if strings.HasPrefix(l, "< NodeName=") {
				before = strings.TrimPrefix(l, "< ")
			}
		}
		a := slurmstate.ParseSlurmConfData("slurm.conf", []byte(after))
		b := slurmstate.ParseSlurmConfData("slurm.conf", []byte(before))
		na, _ := a.Node("dgx01")
		nb, _ := b.Node("dgx01")
		ca, _ := na.GPUCount()
		cb, _ := nb.GPUCount()
		if ca != 32 || cb != 8 || len(na.GresSpec) != 3 || na.GresSpec[2].Type != "1g.10gb" || na.CPUs != 256 {
			t.Errorf("after %+v (%d GPUs), before %d GPUs", na, ca, cb)
		}
		spec, err := slurmstate.ParseGresSpec("gpu:3g.40gb:8(S:0-1),gpu:2g.20gb:8(S:0-1),gpu:1g.10gb:16(S:0-1)")
		if err != nil || len(spec) != 3 || spec[2].Count != 16 {
			t.Errorf("scontrol Gres: %v %v", spec, err)
		}
	})
	t.Run("deepops templates: Jinja lines are errors with their line numbers", func(t *testing.T) {
		s := sections(t, "deepops_templates_gres_and_slurm_conf.txt")
		gs := s["roles/slurm/templates/etc/slurm/gres.conf"]
		g := ParseGresConfData("gres.conf", []byte(gs))
		if len(g.Errors) == 0 || g.Errors[0].Line != lineOf(t, gs, "{% if slurm_autodetect_nvml") {
			t.Errorf("errors %v", g.Errors)
		}
		if g.AutoDetect != "nvml" {
			t.Errorf("AutoDetect=nvml line not read: %q", g.AutoDetect)
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["roles/slurm/templates/etc/slurm/slurm.conf"]))
		if !c.UsesCgroupTasks() || !c.HasGresType("gpu") || len(c.Errors) != 4 ||
			c.Errors[0].Line != lineOf(t, s["roles/slurm/templates/etc/slurm/slurm.conf"], "Prolog={{") {
			t.Errorf("slurm.conf %+v", c)
		}
	})
	t.Run("unige slurmd -G: NVML-derived types, cores and links", func(t *testing.T) {
		s := sections(t, "unige_baobab_gpu048_slurmd-G_autodetect-nvml_links.txt")
		devs, errs := ParseSlurmdG("slurmd-G", s[""])
		if len(errs) > 0 || len(devs) != 9 {
			t.Fatalf("%d devices, errors %v", len(devs), errs)
		}
		for i, d := range devs[:8] {
			r := slurmstate.GresRecord{Files: []string{d.File}, Links: d.Links, LinksSet: true}
			if d.Index != i || d.Type != "nvidia_rtx_a6000" || check.GresLinksProblem(r) != "" {
				t.Errorf("device %d: %+v (%s)", i, d, check.GresLinksProblem(r))
			}
		}
		if cpulist.Format(devs[4].Cores) != "64-127" || devs[8].Name != "VramPerGpu" || devs[8].Type != "" {
			t.Errorf("%+v %+v", devs[4], devs[8])
		}
	})
	t.Run("ocotillo: Nodename= spelled lower-case, tabs, two types on one node", func(t *testing.T) {
		s := sections(t, "danielmc81_ocotillo_heterogeneous_nodename-lowercase.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		if len(g.Errors) > 0 {
			t.Fatalf("slurmd -G reads every line (parameter names are case insensitive): %v", g.Errors)
		}
		// slurmd -G (22.05) on visualizacion1: Type=gtx970 ... File=nvidia0, Type=gtx1060 ... File=nvidia1.
		if d := slurmstate.Devices(g.ForNode("visualizacion1", "gpu")); len(d) != 2 || d[0].Type != "gtx970" || d[1].Type != "gtx1060" || d[1].File != "/dev/nvidia1" {
			t.Errorf("visualizacion1 %+v", d)
		}
		for node, want := range map[string]int{"ibnodo1": 4, "ibnodo2": 4, "ibnodo3": 0, "ibnodo8": 0, "ibtesla": 4, "visualizacion2": 1} {
			if got := len(slurmstate.Devices(g.ForNode(node, "gpu"))); got != want {
				t.Errorf("%s: %d devices, want %d", node, got, want)
			}
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["slurm.conf"]))
		n, ok := c.Node("visualizacion1")
		if cnt, _ := n.GPUCount(); !ok || cnt != 2 || len(n.GresSpec) != 2 || n.GresSpec[1].Type != "gtx1060" || len(c.Errors) > 0 {
			t.Errorf("visualizacion1 %+v errors %v", n, c.Errors)
		}
		if n, ok := c.Node("ibnodo8"); !ok || n.CPUs != 64 {
			t.Errorf("ibnodo[8] %+v", n)
		}
	})
	t.Run("goedel: AutoDetect=nvml with typed File= lines and MPS", func(t *testing.T) {
		s := sections(t, "predictive-analytics-lab_goedel_nvml_rtx3090x8_mps.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		if ad, _ := g.AutoDetectFor("goedel"); ad != "nvml" || len(g.Errors) > 0 {
			t.Errorf("autodetect %q errors %v", ad, g.Errors)
		}
		if d := slurmstate.Devices(g.ForNode("goedel", "gpu")); len(d) != 8 || d[7].Type != "nvidia_geforce_rtx_3090" {
			t.Errorf("gpu %+v", d)
		}
		if m := g.ForNode("goedel", "mps"); len(m) != 8 || m[0].Count != "24" {
			t.Errorf("mps %+v", m)
		}
		if p := check.LintGres(g, "goedel", "gpu"); len(p) > 0 {
			t.Errorf("slurmd -G accepts it: %s", problems(p))
		}
	})
	t.Run("soperator: a line that starts with AutoDetect= is a parse error", func(t *testing.T) {
		s := sections(t, "nebius_soperator_h100x8_links_cores_minor-order.txt")
		text := s["gres.conf"]
		g := ParseGresConfData("gres.conf", []byte(text))
		// slurmd -G (22.05): "Parse error in file gres.conf line N: \" Name=gpu ...\"" for
		// every line, then "fatal: error opening/reading gres.conf".
		if len(g.Errors) != 8 || g.Errors[0].Line != lineOf(t, text, "AutoDetect=off Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia4") {
			t.Fatalf("errors %v", g.Errors)
		}
		if !strings.Contains(g.Errors[0].Msg, "AutoDetect=") || !strings.Contains(g.Errors[0].Msg, "Parse error") {
			t.Errorf("message %q", g.Errors[0].Msg)
		}
		// With NodeName= first the same line is one gres.conf(5) documents.
		fixed := ParseGresConfData("gres.conf", []byte(strings.ReplaceAll(text, "AutoDetect=off Name=gpu", "NodeName=worker-0 AutoDetect=off Name=gpu")))
		d := slurmstate.Devices(fixed.ForNode("worker-0", "gpu"))
		if len(fixed.Errors) > 0 || len(d) != 8 || d[0].File != "/dev/nvidia4" || cpulist.Format(d[4].Cores) != "64-127" {
			t.Errorf("errors %v devices %+v", fixed.Errors, d)
		}
		if p := check.LintGres(fixed, "worker-0", "gpu"); len(p) > 0 {
			t.Errorf("Links= rows and Flags= are valid: %s", problems(p))
		}
	})
	t.Run("phoebe gpu2: whole GPUs and MIG MultipleFiles on one node", func(t *testing.T) {
		s := sections(t, "unidentified_phoebe_gpu2_a100_mig-mixed_cores.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		d := slurmstate.Devices(g.ForNode("gpu2", "gpu"))
		if len(g.Errors) > 0 || len(d) != 7 || d[6].Type != "nvidia_a100_1g.10gb" || cpulist.Format(d[6].Cores) != "40-47" {
			t.Errorf("errors %v devices %+v", g.Errors, d)
		}
		if p := check.LintGres(g, "gpu2", "gpu"); len(p) > 0 {
			t.Errorf("slurmd -G accepts it: %s", problems(p))
		}
	})
	t.Run("andmax: MPS lines without Count and a count-only GRES", func(t *testing.T) {
		s := sections(t, "andmax_second_k80x4_mps_countonly-gpu_mem.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		if len(g.Errors) > 0 || g.AutoDetect != "" || len(g.ForNode("any", "mps")) != 4 {
			t.Errorf("errors %v autodetect %q", g.Errors, g.AutoDetect)
		}
		if m := g.ForNode("any", "gpu_mem"); len(m) != 1 || m[0].Count != "11441" || m[0].Files != nil {
			t.Errorf("gpu_mem %+v", m)
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["base_slurm.conf"]))
		if !c.HasGresType("gpu_mem") || len(c.Nodes) != 0 {
			t.Errorf("base slurm.conf %+v", c)
		}
	})
	t.Run("dieterichlab: architecture names as types, AutoDetect commented out", func(t *testing.T) {
		s := sections(t, "unidentified_dieterichlab_arch-types_turing_ampere_pascal.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		if len(g.Errors) > 0 || g.AutoDetect != "" || len(g.NodeAutoDetect) != 0 || len(g.ForNode("any", "mps")) != 0 {
			t.Errorf("errors %v autodetect %q %v", g.Errors, g.AutoDetect, g.NodeAutoDetect)
		}
		for node, want := range map[string]string{"gpu-g4-1": "ampere", "gpu-g3-1": "turing", "gpu-g1-2": "pascal"} {
			if d := slurmstate.Devices(g.ForNode(node, "gpu")); len(d) == 0 || d[0].Type != want || d[len(d)-1].File != fmt.Sprintf("/dev/nvidia%d", len(d)-1) {
				t.Errorf("%s: %+v", node, d)
			}
		}
	})
	t.Run("ultron: AutoDetect=nvml: with a stray colon", func(t *testing.T) {
		s := sections(t, "saleha-abid_ultron_autodetect-nvml-colon_rtx4090x2.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		if ad, _ := g.AutoDetectFor("argon02"); ad != "nvml:" || len(g.Errors) > 0 || len(g.Records) != 0 {
			t.Errorf("autodetect %q errors %v records %v", ad, g.Errors, g.Records)
		}
		if p := check.LintAutoDetect(g, "argon02"); len(p) > 0 {
			t.Errorf("slurmd reads nvml: as nvml: %s", problems(p))
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["slurm.conf"]))
		n, ok := c.Node("argon02")
		if cnt, _ := n.GPUCount(); !ok || cnt != 2 || n.GresSpec[0].Type != "rtx_4090" || n.Sockets != 1 || n.CoresPerSocket != 8 {
			t.Errorf("argon02 %+v", n)
		}
	})
	t.Run("arisu: shard without File= beside one typed GPU", func(t *testing.T) {
		s := sections(t, "c4thebomb_arisu_rtx3070_shard_nvml-then-off.txt")
		for name, ad := range map[string]string{"gres.conf": "nvml", "config/gres.conf": "off"} {
			g := ParseGresConfData(name, []byte(s[name]))
			sh := g.ForNode("arisu", "shard")
			if got, _ := g.AutoDetectFor("arisu"); got != ad || len(g.Errors) > 0 || len(sh) != 1 || sh[0].Count != "12" || sh[0].Files != nil {
				t.Errorf("%s: autodetect %q errors %v shard %+v", name, got, g.Errors, sh)
			}
		}
	})
	t.Run("lan496: CPUs= one socket per GPU on 2x6 cores", func(t *testing.T) {
		s := sections(t, "lan496_ansible-sandbox_5x2gpu_cpus-per-socket.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		d := slurmstate.Devices(g.ForNode("gpu5", "gpu"))
		if len(g.Errors) > 0 || len(d) != 2 || cpulist.Format(d[1].Cores) != "6-11" || d[1].CoresKey != "CPUs" {
			t.Errorf("errors %v devices %+v", g.Errors, d)
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["slurm.conf"]))
		if n, _ := c.Node("gpu5"); n.Sockets != 2 || n.CoresPerSocket != 6 || c.GPUNodes() != 5 {
			t.Errorf("gpu5 %+v, %d GPU nodes", n, c.GPUNodes())
		}
	})
	t.Run("yyuzhongpv: no NodeName, same CPUs for both sockets' GPUs", func(t *testing.T) {
		s := sections(t, "yyuzhongpv_dgx1x4_cpus-10-per-gpu.txt")
		g := ParseGresConfData("gres.conf", []byte(s["gres.conf"]))
		devs := slurmstate.Devices(g.ForNode("dgx3", "gpu"))
		if len(devs) != 8 || cpulist.Format(devs[4].Cores) != "0-9" {
			t.Errorf("devices %+v", devs)
		}
		c := slurmstate.ParseSlurmConfData("slurm.conf", []byte(s["slurm.conf"]))
		if n, _ := c.Node("dgx3"); n.CPUs != 80 {
			t.Errorf("dgx3 %+v", n)
		}
		if n, _ := c.Node("master"); len(n.GresSpec) != 0 {
			t.Errorf("master has no GPUs: %+v", n)
		}
		if c.GPUNodes() != 4 {
			t.Errorf("GPUNodes = %d", c.GPUNodes())
		}
	})
}

// TestSlurmTestsuite39_18 runs every gres.conf of Slurm's own merge test
// (testsuite/expect/test39.18) through the parser and the linter: the cases
// Slurm rejects must produce a finding, the ones it accepts no parse error.
func TestSlurmTestsuite39_18(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gres", "slurm_testsuite_test39.18_gres_merge_autodetect.expect.txt"))
	if err != nil {
		t.Fatal(err)
	}
	subst := strings.NewReplacer(`${dev}`, "/dev/tty", `\[`, "[", `\]`, "]", `\"`, `"`, "$test_name", "test39.18",
		"${nodename_base}", "tux", "$nodename_diff", "tux1", "$nodename", "tux0")
	type tcase struct{ name, gres, slurm, err string }
	var cases []tcase
	var cur tcase
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, `set slurm_conf_gres "`):
			cur = tcase{slurm: strings.TrimSuffix(strings.TrimPrefix(l, `set slurm_conf_gres "`), `"`)}
		case strings.HasPrefix(l, `set gres_conf "`):
			body := strings.TrimPrefix(l, `set gres_conf "`)
			if strings.HasSuffix(body, `"`) {
				cur.gres = strings.TrimSuffix(body, `"`)
				continue
			}
			var b []string
			for i++; i < len(lines) && lines[i] != `"`; i++ {
				b = append(b, lines[i])
			}
			cur.gres = strings.Join(b, "\n")
		case strings.HasPrefix(l, "set err_msgs $"):
			cur.err = strings.TrimPrefix(l, "set err_msgs $")
		case strings.HasPrefix(l, `testproc_alias "`):
			cur.name = strings.Split(l, `"`)[1]
			cases = append(cases, cur)
			cur = tcase{}
		}
	}
	if len(cases) < 60 {
		t.Fatalf("found only %d cases", len(cases))
	}
	for _, c := range cases {
		g := ParseGresConfData("gres.conf", []byte(subst.Replace(c.gres)))
		lint := problems(check.LintGres(g, "tux0", "gpu"))
		spec, specErr := slurmstate.ParseGresSpec(c.slurm)
		switch c.err {
		case "key_parse_err", "no_name_err", "parse_err":
			if len(g.Errors) == 0 {
				t.Errorf("%s: Slurm rejects this gres.conf (%s), the parser did not:\n%s", c.name, c.err, c.gres)
			}
		case "dup_err":
			if !strings.Contains(lint, "duplicate device file") {
				t.Errorf("%s: duplicate device not found: %s", c.name, lint)
			}
		case "gres_conf_type_err":
			if !strings.Contains(lint, "Type=") {
				t.Errorf("%s: mixed Type= not found: %s", c.name, lint)
			}
		case "gres_conf_file_err":
			if !strings.Contains(lint, "File=") {
				t.Errorf("%s: mixed File= not found: %s", c.name, lint)
			}
		case "links_err":
			if n := strings.Count(lint, "Links="); n != 3 {
				t.Errorf("%s: %d Links findings, Slurm prints 3: %s", c.name, n, lint)
			}
		case "flags_mismatch_err":
			if !strings.Contains(lint, "env flags") {
				t.Errorf("%s: env flag mismatch not found: %s", c.name, lint)
			}
		case "slurm_conf_type_err":
			if specErr != nil || len(check.LintGresSpec("slurm.conf", spec)) == 0 {
				t.Errorf("%s: Gres=%s mixes typed and untyped: %v %v", c.name, c.slurm, spec, specErr)
			}
		default:
			// Accepted by Slurm (or only rejected against detected GPUs).
			if len(g.Errors) > 0 {
				t.Errorf("%s: Slurm accepts this gres.conf, the parser says %v", c.name, g.Errors)
			}
		}
		if specErr != nil {
			t.Errorf("%s: Gres=%q: %v", c.name, c.slurm, specErr)
		}
	}
}
