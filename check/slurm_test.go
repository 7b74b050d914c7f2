package check

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/slurm"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// fixture returns one config of a real-config fixture in slurm/testdata/gres
// (the part after "# ==== name ====", or the whole file for name ""), with
// the lines before it blanked so messages keep the fixture's line numbers.
func fixture(t *testing.T, file, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "slurm", "testdata", "gres", file))
	if err != nil {
		t.Fatal(err)
	}
	if name == "" {
		return string(data)
	}
	lines := strings.Split(string(data), "\n")
	start := -1
	for i, l := range lines {
		if m := sectionRe.FindStringSubmatch(l); m != nil {
			if start >= 0 {
				return strings.Repeat("\n", start) + strings.Join(lines[start:i], "\n")
			}
			if m[1] == name {
				start = i + 1
			}
		}
	}
	if start < 0 {
		t.Fatalf("%s has no section %q", file, name)
	}
	return strings.Repeat("\n", start) + strings.Join(lines[start:], "\n")
}

var sectionRe = regexp.MustCompile(`^# ==== (.+) ====$`)

// confs are the configs of one test node, by file name.
type confs struct{ slurm, gres, cgroup string }

// gresNode builds a node named name with gpus GPUs called model, whose
// NUMA nodes hold the given CPU lists (GPUs split evenly), judged against cf.
func gresNode(name string, gpus int, model string, numa []string, cf confs, mut func(n *state.Node)) *state.Node {
	n := &state.Node{SchemaVersion: state.SchemaVersion, NVML: &state.NVML{Available: true}}
	for i := 0; i < gpus; i++ {
		g := state.GPU{Index: i, Name: model, PCIBusID: fmt.Sprintf("00000000:%02x:00.0", 0x10+i), Minor: ptr(i)}
		if len(numa) > 0 {
			k := i * len(numa) / gpus
			g.NUMANode, g.CPUAffinity = ptr(k), numa[k]
		}
		n.NVML.GPUs = append(n.NVML.GPUs, g)
	}
	c := &slurmstate.Conf{SlurmConfPath: "/etc/slurm/slurm.conf", GresConfPath: "/etc/slurm/gres.conf"}
	if cf.slurm != "" {
		c.SlurmConf = slurmstate.ParseSlurmConfData("/etc/slurm/slurm.conf", []byte(cf.slurm))
	}
	if cf.gres != "" {
		c.GresConf = slurm.ParseGresConfData("/etc/slurm/gres.conf", []byte(cf.gres))
	}
	if cf.cgroup != "" {
		c.CgroupConf = slurmstate.ParseCgroupConfData("/etc/slurm/cgroup.conf", []byte(cf.cgroup))
	}
	n.Slurm = &slurmstate.State{NodeName: name, NodeNameFrom: "SLURMD_NODENAME", Conf: c}
	if mut != nil {
		mut(n)
	}
	return n
}

var (
	dgx1NUMA = []string{"0-19,40-59", "20-39,60-79"}
	hgxNUMA  = []string{"0-55,112-167", "56-111,168-223"}
)

func TestSlurmGres(t *testing.T) {
	const hgxSlurm = "GresTypes=gpu\nNodeName=gpu[001-004] Gres=gpu:8 CPUs=224\n"
	const h100 = "NVIDIA H100 80GB HBM3"
	swapMinors := func(n *state.Node) { n.NVML.GPUs[0].Minor, n.NVML.GPUs[2].Minor = ptr(2), ptr(0) } // Princeton's A100 node
	devFiles := func(mod func(d *slurmstate.DeviceFile)) func(n *state.Node) {
		return func(n *state.Node) {
			for i := 0; i < 8; i++ {
				d := slurmstate.DeviceFile{Path: fmt.Sprintf("/dev/nvidia%d", i), Exist: true, Char: true, Major: 195, Minor: i}
				if i == 3 {
					mod(&d)
				}
				n.Slurm.Devices = append(n.Slurm.Devices, d)
			}
		}
	}
	hk := confs{slurm: fixture(t, "hkust_single-node_8gpu_autodetect-off.txt", "slurm.conf"), gres: fixture(t, "hkust_single-node_8gpu_autodetect-off.txt", "gres.conf")}
	mk := "mknoxnv_ubuntu-slurm_dgx1_gres_and_mismatch.txt"
	yy := "yyuzhongpv_dgx1x4_cpus-10-per-gpu.txt"
	t717 := func(n int) confs {
		f := fmt.Sprintf("slurm_testsuite_test7.17.%d.conf.txt", n)
		return confs{slurm: fixture(t, f, "slurm.conf"), gres: fixture(t, f, "gres.conf")}
	}
	ocotillo := confs{slurm: fixture(t, "danielmc81_ocotillo_heterogeneous_nodename-lowercase.txt", "slurm.conf"), gres: fixture(t, "danielmc81_ocotillo_heterogeneous_nodename-lowercase.txt", "gres.conf")}
	vinuni := confs{slurm: fixture(t, "anhduy0911_vinuni_1gpu-nodes_per-node-minor.txt", "slurm.conf"), gres: fixture(t, "anhduy0911_vinuni_1gpu-nodes_per-node-minor.txt", "gres.conf")}
	miramar := confs{slurm: fixture(t, "miramar-labs_dgx-spark-gb10_agx-orin_autodetect-off.txt", "slurm.conf"), gres: fixture(t, "miramar-labs_dgx-spark-gb10_agx-orin_autodetect-off.txt", "gres.conf")}
	goedel, fosc := "predictive-analytics-lab_goedel_nvml_rtx3090x8_mps.txt", "unidentified_foscsmlprd01_a100x8_nvml_count_type_flags.txt"
	lab3 := "ashaneason_hpclab3_autodetect-nvidia_v100.txt"
	arisu, arisuSlurm := "c4thebomb_arisu_rtx3070_shard_nvml-then-off.txt", "GresTypes=gpu,shard\nNodeName=arisu CPUs=16 Gres=gpu:rtx3070:1,shard:12\n"
	andmax, nebius, phoebe := "andmax_second_k80x4_mps_countonly-gpu_mem.txt", "nebius_soperator_h100x8_links_cores_minor-order.txt", "unidentified_phoebe_gpu2_a100_mig-mixed_cores.txt"
	runCases(t, checkSlurmGres, []checkCase{
		// Real configs from slurm/testdata/gres, and the mistakes they carry.
		{name: "hkust: AutoDetect=off, File in NVML order", node: gresNode("bld", 8, "NVIDIA A100-SXM4-80GB", nil, hk, nil),
			status: Pass, summary: "AutoDetect=off; 8 File= GPUs in NVML order"},
		{name: "hkust on a node whose minors are not NVML order", node: gresNode("bld", 8, "NVIDIA A100-SXM4-80GB", nil, hk, swapMinors),
			status: Fail, summary: "gres.conf File #1 (/dev/nvidia0, gres.conf:", devices: []int{0, 2}},
		{name: "mknoxnv: one-line gres.conf, Gres=gpu:8", node: gresNode("linux1", 8, "Tesla V100-SXM2-32GB", dgx1NUMA, confs{slurm: fixture(t, mk, "slurm.conf"), gres: fixture(t, mk, "gres.conf")}, nil),
			status: Fail, summary: "gres.conf lists 1 GPU device files for linux1, NVML sees 8"},
		// CPUs= (Cores='s old name) counts logical cores too: 40 on this
		// DGX-1, so 40-59 (hyperthread CPU numbers) do not exist; slurmd -G
		// says "Invalid GRES data for gpu, CPUs=..." for such lines.
		{name: "mknoxnv: gres.conf.dgx on a DGX-1", node: gresNode("linux1", 8, "Tesla V100-SXM2-32GB", dgx1NUMA, confs{slurm: fixture(t, mk, "slurm.conf"), gres: fixture(t, mk, "gres.conf.dgx")}, nil),
			status: Fail, summary: "names core 59, but the node has 40 cores", devices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		// Ten-CPU slices in File order on a 2x20-core DGX-1: GPUs 2 and 3 get
		// socket-1 CPUs, GPUs 4 and 5 socket-0 ones; 0, 1, 6 and 7 are right.
		{name: "yyuzhongpv: ten-CPU slices ignore the sockets", node: gresNode("dgx3", 8, "Tesla V100-SXM2-32GB", dgx1NUMA, confs{slurm: fixture(t, yy, "slurm.conf"), gres: fixture(t, yy, "gres.conf")}, withCores(2, 20, 40)),
			status: Fail, summary: "GPU 2 (00000000:12:00.0): CPUs=20-29 (gres.conf:8) are cores on another NUMA node than the GPU's (its CPUs 0-19,40-59)", devices: []int{2, 3, 4, 5}},
		{name: "yyuzhongpv without the CPU topology: not judged", node: gresNode("dgx3", 8, "Tesla V100-SXM2-32GB", dgx1NUMA, confs{slurm: fixture(t, yy, "slurm.conf"), gres: fixture(t, yy, "gres.conf")}, nil),
			status: Pass, summary: "Cores= not placed on sockets: no CPU topology collected"},
		{name: "lambda: CPUs= per socket", node: gresNode("lambda", 8, "NVIDIA GeForce RTX 3090", []string{"0-15,32-47", "16-31,48-63"},
			confs{slurm: fixture(t, "lambda-slurm_8gpu_cpus-per-socket.txt", "slurm.conf"), gres: fixture(t, "lambda-slurm_8gpu_cpus-per-socket.txt", "gres.conf")}, nil),
			// slurmd -G (22.05) on this config: "Invalid GRES data for gpu, CPUs=0-15,32-47".
			status: Fail, summary: "CPUs=0-15,32-47 (gres.conf:5) names core 47, but the node has 32 cores (slurm.conf Sockets×CoresPerSocket)", devices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "ehb54: node line without Gres=", node: gresNode("localhost", 3, "Tesla V100-PCIE-16GB", nil,
			confs{slurm: fixture(t, "ehb54_slurm-gpu_tesla3_no-node-gres.txt", "slurm.conf"), gres: fixture(t, "ehb54_slurm-gpu_tesla3_no-node-gres.txt", "gres.conf")}, nil),
			status: Warn, summary: "slurm.conf declares no Gres=gpu for localhost"},
		{name: "shine: Gres=gpu:8 and no gres.conf", node: gresNode("coruscant", 8, "NVIDIA GeForce RTX 2080 Ti", nil,
			confs{slurm: fixture(t, "shine-cluster_slurmconf_only_no_gres.conf.txt", "")}, nil),
			status: Fail, summary: "no gres.conf at /etc/slurm/gres.conf"},
		// Sockets=2 CoresPerSocket=2: cores 0-3. slurmd -G (22.05) on this
		// pair: "error: Invalid GRES data for gpu, Cores=[4-7]".
		{name: "test7.17.1: Cores=[4-7] on a 4-core node", node: gresNode("test_node3", 8, "Tesla T4", []string{"0-3", "4-7"}, t717(1), nil),
			status: Fail, summary: "Cores=[4-7] (gres.conf:9) names core 7, but the node has 4 cores", devices: []int{4, 5, 6, 7}},
		{name: "test7.17.6: GresTypes commented out", node: gresNode("test_node3", 8, "Tesla T4", []string{"0-3", "4-7"}, t717(6), nil),
			status: Fail, summary: "GresTypes= does not list gpu", devices: []int{4, 5, 6, 7}},
		{name: "test7.17.7: Cores=[0-10000]", node: gresNode("test_node3", 8, "Tesla T4", []string{"0-3", "4-7"}, t717(7), nil),
			status: Fail, summary: "Cores=[0-10000] (gres.conf:", devices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "rdgpu notes: stray lines", node: gresNode("rdgpu01", 2, "NVIDIA A100 80GB PCIe", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=rdgpu01 Gres=gpu:1g.10gb:14\n", gres: fixture(t, "unidentified_rdgpu_a100pcie_mig_1g10gb_gres.txt", "")},
			func(n *state.Node) {
				for i := range n.NVML.GPUs {
					n.NVML.GPUs[i].MIG = &state.MIG{Current: true}
				}
			}),
			status: Fail, summary: `gres.conf:49: "RDGPU01:" is not Key=Value`},
		{name: "deepops template: Jinja left in gres.conf", node: gresNode("gpu001", 8, h100, hgxNUMA,
			confs{slurm: hgxSlurm, gres: fixture(t, "deepops_templates_gres_and_slurm_conf.txt", "roles/slurm/templates/etc/slurm/gres.conf")}, nil),
			status: Fail, summary: "is not Key=Value"},

		// The second batch of real configs (slurm/testdata/gres), each
		// judged for the node it describes; slurmd -G (22.05) agrees where
		// noted.
		// Tesla-era names without the dash NVML prints ("M2070-Q"): Slurm
		// compares Type= with the GPU only under AutoDetect, so without it
		// the label is no finding (slurmd -G: Type=m2070q Count=4).
		{name: "ocotillo: ibnodo2, Type=m2070q on Tesla M2070-Q", node: gresNode("ibnodo2", 4, "Tesla M2070-Q", nil, ocotillo, nil),
			status: Pass, summary: "AutoDetect not set; 4 File= GPUs in NVML order"},
		{name: "ocotillo: visualizacion1, two models, two types", node: gresNode("visualizacion1", 2, "NVIDIA GeForce GTX 970", nil, ocotillo,
			func(n *state.Node) { n.NVML.GPUs[1].Name = "NVIDIA GeForce GTX 1060 6GB" }),
			status: Pass, summary: "AutoDetect not set; 2 File= GPUs in NVML order"},
		// The models swapped against File= order: the labels now name the
		// other card, which a user asking for gpu:gtx1060 would not get.
		{name: "ocotillo: visualizacion1 with the cards the other way round", node: gresNode("visualizacion1", 2, "NVIDIA GeForce GTX 1060 6GB", nil, ocotillo,
			func(n *state.Node) { n.NVML.GPUs[1].Name = "NVIDIA GeForce GTX 970" }),
			status: Warn, summary: `Type=gtx970 (gres.conf:6) is not part of the NVML name "NVIDIA GeForce GTX 1060 6GB"`, devices: []int{0, 1}},
		// Architecture names as types (Dieterichlab: --gres=gpu:turing:1):
		// a site label, not a model, and Slurm never compares it without
		// AutoDetect.
		{name: "dieterichlab: Type=turing on Quadro RTX 6000", node: gresNode("gpu-g2-1", 4, "Quadro RTX 6000", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=gpu-g2-1 Gres=gpu:turing:4\n", gres: fixture(t, "unidentified_dieterichlab_arch-types_turing_ampere_pascal.txt", "gres.conf")}, nil),
			status: Pass, summary: "AutoDetect not set; 4 File= GPUs in NVML order"},
		// The same label under AutoDetect=nvml: slurmd matches Type= as a
		// substring of the NVML name, and "turing" is none.
		{name: "dieterichlab lines under AutoDetect=nvml", node: gresNode("gpu-g2-1", 4, "Quadro RTX 6000", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=gpu-g2-1 Gres=gpu:turing:4\n", gres: "AutoDetect=nvml\n" + fixture(t, "unidentified_dieterichlab_arch-types_turing_ampere_pascal.txt", "gres.conf")}, nil),
			status: Fail, summary: `Type=turing`, devices: []int{0, 1, 2, 3}},
		{name: "ocotillo: ibtesla", node: gresNode("ibtesla", 4, "Tesla V100-PCIE-32GB", nil, ocotillo, nil), status: Pass, summary: "4 File= GPUs in NVML order"},
		{name: "ocotillo: ibnodo8, a CPU node", node: gresNode("ibnodo8", 0, "", nil, ocotillo, nil), status: Pass, summary: "AutoDetect not set"},
		{name: "goedel: AutoDetect=nvml, typed File= lines, MPS", node: gresNode("goedel", 8, "NVIDIA GeForce RTX 3090", nil,
			confs{slurm: fixture(t, goedel, "slurm.conf"), gres: fixture(t, goedel, "gres.conf")}, nil),
			status: Pass, summary: "AutoDetect=nvml; 8 File= GPUs in NVML order"},
		{name: "foscsmlprd01: AutoDetect=nvml, Count=8 Type=a100 File=/dev/nvidia[0-7]", node: gresNode("foscsmlprd01", 8, "NVIDIA A100-SXM4-80GB", nil,
			confs{slurm: fixture(t, fosc, "slurm.conf"), gres: fixture(t, fosc, "gres.conf")}, nil),
			status: Pass, summary: "AutoDetect=nvml; 8 File= GPUs in NVML order"},
		// One GPU per node, but the device files numbered across the
		// cluster: slurmnode2 has no /dev/nvidia1. slurmd -G (22.05) on such
		// a line: "Waiting for gres.conf file /dev/nvidia1", then "fatal:
		// can't stat gres.conf file /dev/nvidia1".
		{name: "vinuni: slurmnode2 names /dev/nvidia1", node: gresNode("slurmnode2", 1, "NVIDIA GeForce RTX 3090", nil, vinuni,
			func(n *state.Node) {
				n.Slurm.Devices = []slurmstate.DeviceFile{{Path: "/dev/nvidia0", Exist: true, Char: true, Major: 195}, {Path: "/dev/nvidia1"}}
			}),
			status: Fail, summary: `File=/dev/nvidia1 does not exist: slurmd stops ("fatal: can't stat gres.conf file /dev/nvidia1")`},
		{name: "vinuni: slurmnode10, device files not collected", node: gresNode("slurmnode10", 2, "NVIDIA GeForce RTX 3090", nil, vinuni, nil),
			status: Fail, summary: "gres.conf File #1 (/dev/nvidia4, gres.conf:14) is device minor 4, but this GPU is minor 0", devices: []int{0, 1}},
		// AutoDetect=nvidia came with Slurm 24.11; slurmd -G 22.05 on this
		// file: "error: unknown autodetect flag 'nvidia'", then the File=
		// line alone. Which slurmd runs is not known here: said, not judged.
		{name: "lab3: AutoDetect=nvidia with one typed File= line", node: gresNode("gpu01", 1, "Tesla V100-SXM2-32GB", nil,
			confs{slurm: fixture(t, lab3, "slurm.conf"), gres: fixture(t, lab3, "gres.conf")}, nil),
			status: Pass, summary: "AutoDetect=nvidia (needs slurmd 24.11 or later: older ones log \"unknown autodetect flag 'nvidia'\" and use only the File= lines); 1 File= GPUs in NVML order"},
		{name: "AutoDetect=nvidia alone", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "AutoDetect=nvidia\n"}, nil),
			status: Pass, summary: "AutoDetect=nvidia (needs slurmd 24.11 or later: older ones log \"unknown autodetect flag 'nvidia'\" and detect no GPU)"},
		// "AutoDetect=nvml:" (a stray colon): slurmd's
		// _handle_autodetect_flags matches "nvml" as a substring, so slurmd
		// -G 22.05 takes it as nvml ("We were configured with nvml
		// functionality, ..."), not as an unknown flag.
		{name: "ultron: AutoDetect=nvml: is nvml to slurmd", node: gresNode("argon01", 2, "NVIDIA GeForce RTX 4090", nil,
			confs{slurm: fixture(t, "saleha-abid_ultron_autodetect-nvml-colon_rtx4090x2.txt", "slurm.conf"), gres: fixture(t, "saleha-abid_ultron_autodetect-nvml-colon_rtx4090x2.txt", "gres.conf")}, nil),
			status: Pass, summary: `AutoDetect=nvml (written "nvml:"; slurmd matches the value as a substring)`},
		// Type=rtx3070 under AutoDetect=nvml is not a substring of
		// nvidia_geforce_rtx_3070 (gres.conf(5) on Type); the later revision
		// turned AutoDetect off, where the label is fine. The shards have
		// no File= and ride on the one GPU (slurmd -G: Name=shard Count=12
		// File=/dev/nvidia0).
		{name: "arisu: Type=rtx3070 under AutoDetect=nvml", node: gresNode("arisu", 1, "NVIDIA GeForce RTX 3070", nil,
			confs{slurm: arisuSlurm, gres: fixture(t, arisu, "gres.conf")}, nil),
			status: Fail, summary: `Type=rtx3070 (gres.conf:6) is not part of the NVML name "NVIDIA GeForce RTX 3070"`, devices: []int{0}},
		{name: "arisu: the same lines under AutoDetect=off", node: gresNode("arisu", 1, "NVIDIA GeForce RTX 3070", nil,
			confs{slurm: arisuSlurm, gres: fixture(t, arisu, "config/gres.conf")}, nil),
			status: Pass, summary: "AutoDetect=off; 1 File= GPUs in NVML order"},
		// CPUs=0-5 / 6-11 on 2×6 cores without hyperthreading: each GPU its
		// socket's cores (slurmd -G: Cores=0-5 CoreCnt=12, Cores=6-11).
		{name: "lan496: CPUs= per socket on 2x6 cores", node: gresNode("gpu3", 2, "NVIDIA GeForce GTX 1080 Ti", []string{"0-5", "6-11"},
			confs{slurm: fixture(t, "lan496_ansible-sandbox_5x2gpu_cpus-per-socket.txt", "slurm.conf"), gres: fixture(t, "lan496_ansible-sandbox_5x2gpu_cpus-per-socket.txt", "gres.conf")},
			func(n *state.Node) {
				n.Topology = &topostate.Topology{}
				for c := 0; c < 12; c++ {
					n.Topology.Cores = append(n.Topology.Cores, topostate.Core{Package: c / 6, CoreID: c % 6, CPUs: fmt.Sprint(c)})
				}
			}),
			status: Pass, summary: "AutoDetect not set; 2 File= GPUs in NVML order"},
		{name: "lan496: GPU 1 on socket 0", node: gresNode("gpu3", 2, "NVIDIA GeForce GTX 1080 Ti", []string{"0-5", "0-5"},
			confs{slurm: fixture(t, "lan496_ansible-sandbox_5x2gpu_cpus-per-socket.txt", "slurm.conf"), gres: fixture(t, "lan496_ansible-sandbox_5x2gpu_cpus-per-socket.txt", "gres.conf")},
			func(n *state.Node) {
				n.Topology = &topostate.Topology{}
				for c := 0; c < 12; c++ {
					n.Topology.Cores = append(n.Topology.Cores, topostate.Core{Package: c / 6, CoreID: c % 6, CPUs: fmt.Sprint(c)})
				}
			}),
			status: Fail, summary: "CPUs=6-11 (gres.conf:", devices: []int{1}},
		{name: "miramar: DGX Spark GB10", node: gresNode("spark-79b7", 1, "NVIDIA GB10", nil, miramar, nil), status: Pass, summary: "AutoDetect=off; 1 File= GPUs in NVML order"},
		// A Jetson (nvgpu driver) has no NVML device to compare File= with:
		// said, not passed as matching.
		{name: "miramar: AGX Orin without NVML", node: gresNode("orin", 0, "", nil, miramar, func(n *state.Node) { n.NVML.Available = false }),
			status: Pass, summary: "AutoDetect=off; 1 File= devices not compared with the GPUs: NVML not available"},
		// slurm.conf's node lines are written at boot (start_slurm.sh):
		// this node is not in the committed file, and that is what is said.
		{name: "andmax: node lines not in the committed slurm.conf", node: gresNode("node1", 4, "Tesla K80", nil,
			confs{slurm: fixture(t, andmax, "base_slurm.conf"), gres: fixture(t, andmax, "gres.conf")}, nil),
			status: Warn, summary: "node node1 (from SLURMD_NODENAME) is not declared in /etc/slurm/slurm.conf"},
		// The node line start_slurm.sh appends at boot has gpu and gpu_mem
		// but no mps: slurmd -G (22.05) warns "A line in gres.conf for GRES
		// mps has 1 more configured than expected in slurm.conf. Ignoring
		// extra GRES." four times and lists no mps.
		{name: "andmax: MPS lines, no mps in the node's Gres=", node: gresNode("node1", 4, "Tesla K80", nil,
			confs{slurm: fixture(t, andmax, "base_slurm.conf") + "NodeName=node1 RealMemory=60000 Procs=16 Gres=gpu:tesla_k80:4,gpu_mem:11441 State=UNKNOWN\n", gres: fixture(t, andmax, "gres.conf")}, nil),
			status: Warn, summary: "gres.conf declares mps for node1 (4 lines, from gres.conf:17), but slurm.conf's Gres= for it has none"},
		// Asking slurm.conf for more MPS than the File= lines hold (each
		// line without Count= is 1): slurmd -G (22.05) "fatal:
		// _build_shared_list: multiple configurations with and without
		// \"File\"".
		{name: "andmax: mps:400 against four Count-less MPS lines", node: gresNode("node1", 4, "Tesla K80", nil,
			confs{slurm: fixture(t, andmax, "base_slurm.conf") + "NodeName=node1 Procs=16 Gres=gpu:tesla_k80:4,mps:400,gpu_mem:11441\n", gres: fixture(t, andmax, "gres.conf")}, nil),
			status: Fail, summary: "slurm.conf Gres= declares mps:400 for node1, but gres.conf's mps lines with File= hold 4"},
		// slurmd -G (22.05): "Parse error in file gres.conf line 1: \" Name=gpu
		// Type=nvidia_h100_80gb_hbm3 ...\"" for all eight, then "fatal: error
		// opening/reading gres.conf".
		{name: "soperator: lines that start with AutoDetect=off", node: gresNode("worker-0", 8, h100, hgxNUMA,
			confs{slurm: "GresTypes=gpu\nNodeName=worker-0 Gres=gpu:nvidia_h100_80gb_hbm3:8 CPUs=128\n", gres: fixture(t, nebius, "gres.conf")},
			func(n *state.Node) {
				for i, m := range []int{4, 5, 6, 7, 0, 1, 2, 3} {
					n.NVML.GPUs[i].Minor = ptr(m)
				}
			}),
			status: Fail, summary: "AutoDetect= starts the line"},
		// The same lines with NodeName= first, on the hosts the module was
		// written for (NVML index 0 is /dev/nvidia4): File= order is right.
		{name: "soperator lines with NodeName= first", node: gresNode("worker-0", 8, h100, hgxNUMA,
			confs{slurm: "GresTypes=gpu\nNodeName=worker-0 Gres=gpu:nvidia_h100_80gb_hbm3:8 CPUs=128\n",
				gres: strings.ReplaceAll(fixture(t, nebius, "gres.conf"), "AutoDetect=off Name=gpu", "NodeName=worker-0 AutoDetect=off Name=gpu")},
			func(n *state.Node) {
				for i, m := range []int{4, 5, 6, 7, 0, 1, 2, 3} {
					n.NVML.GPUs[i].Minor = ptr(m)
				}
			}),
			// Cores=0-63/64-127 need a 128-core node; the module does not
			// say what the CPUs are, and without a CPU topology the cores
			// are not placed on sockets: said, not passed as right.
			status: Pass, summary: "AutoDetect=off; 8 File= GPUs in NVML order; Cores= not placed on sockets: no CPU topology collected"},
		// The notes give one of gpu2's fourteen MIG lines ("# ... one line
		// per MIG instance"): as written, slurmctld counts one.
		{name: "phoebe gpu2: the MIG excerpt against Gres=...:14", node: gresNode("gpu2", 8, "NVIDIA A100-SXM4-80GB", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=gpu2 Sockets=8 CoresPerSocket=8 ThreadsPerCore=2 Gres=gpu:a100:6,gpu:nvidia_a100_1g.10gb:14\n", gres: fixture(t, phoebe, "gres.conf")},
			func(n *state.Node) {
				n.NVML.GPUs[4].MIG, n.NVML.GPUs[5].MIG = &state.MIG{Current: true}, &state.MIG{Current: true}
			}),
			status: Fail, summary: `"gres/gpu:nvidia_a100_1g.10gb count too low (1 < 14)"`},

		// Rules one by one.
		{name: "AutoDetect=nvml alone", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "AutoDetect=nvml\n"}, nil),
			status: Pass, summary: "AutoDetect=nvml (global AutoDetect=nvml)"},
		{name: "Gres count above NVML", node: gresNode("gpu002", 7, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "AutoDetect=nvml\n"}, nil),
			status: Fail, summary: "declares 8 GPUs, NVML sees 7"},
		{name: "Gres count below NVML", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:h100:4,gpu:h100:2\n", gres: "AutoDetect=nvml\n"}, nil),
			status: Warn, summary: "declares 6 GPUs, NVML sees 8"},
		{name: "typed and untyped Gres", node: gresNode("gpu002", 2, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:h100:1,gpu:1\n", gres: "AutoDetect=nvml\n"}, nil),
			status: Fail, summary: "with a type in some items"},
		{name: "node not in slurm.conf", node: gresNode("other", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "AutoDetect=nvml\n"}, nil),
			status: Warn, summary: "node other (from SLURMD_NODENAME) is not declared"},
		{name: "AutoDetect=off without File", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "AutoDetect=off\nName=gpu Count=8\n"}, nil),
			status: Fail, summary: "no File= for gpu on gpu002 and AutoDetect is off"},
		// An unset AutoDetect is said so, never "AutoDetect=n/a".
		{name: "AutoDetect unset, File in NVML order", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu File=/dev/nvidia[0-7]\n"}, nil),
			status: Pass, summary: "AutoDetect not set; 8 File= GPUs in NVML order"},
		{name: "AutoDetect unset without File", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu Count=8\n"}, nil),
			status: Fail, summary: "no File= for gpu on gpu002 and AutoDetect not set: Slurm cannot bind GPUs"},
		{name: "AutoDetect=rsmi on NVIDIA", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "AutoDetect=rsmi\n"}, nil),
			status: Fail, summary: "AutoDetect=rsmi (global AutoDetect=rsmi) detects non-NVIDIA devices"},
		{name: "node-specific AutoDetect=off overrides nvml", node: gresNode("gpu002", 8, h100, hgxNUMA,
			confs{slurm: hgxSlurm, gres: "AutoDetect=nvml\nNodeName=gpu00[2-3] AutoDetect=off\n"}, nil), status: Fail, summary: "AutoDetect is off"},
		{name: "Type matches the NVML name", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu Type=h100_80gb File=/dev/nvidia[0-7]\n"}, nil), status: Pass},
		{name: "Type does not", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu Type=a100 File=/dev/nvidia[0-7]\n"}, nil),
			status: Warn, summary: `Type=a100 (gres.conf:1) is not part of the NVML name "NVIDIA H100 80GB HBM3" (nvidia_h100_80gb_hbm3)`, devices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "Type mismatch with AutoDetect=nvml", node: gresNode("gpu002", 1, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:1\n", gres: "AutoDetect=nvml\nName=gpu Type=a100 File=/dev/nvidia0\n"}, nil),
			status: Fail, summary: "Type=a100", devices: []int{0}},
		// A conversion that left the two files disagreeing (slurmctld's own
		// drain reason: "gres/gpu:TYPE count too low (0 < 8)").
		{name: "slurm.conf type gres.conf does not have", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:a100:8 CPUs=224\n", gres: "Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"}, nil),
			status: Fail, summary: `slurm.conf Gres=gpu:a100:8 (slurm.conf:2), but gres.conf declares 0 GPU(s) of Type=a100 for this node (its types: h100): slurmctld drains the node with "gres/gpu:a100 count too low (0 < 8)"`},
		{name: "typed slurm.conf, untyped gres.conf", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:h100:8 CPUs=224\n", gres: "Name=gpu File=/dev/nvidia[0-7]\n"}, nil),
			status: Fail, summary: "declares 0 GPU(s) of Type=h100 for this node (its types: n/a)"},
		{name: "types agree", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:h100:8 CPUs=224\n", gres: "Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"}, nil), status: Pass},
		// gres_build_id hashes the exact bytes: a job asking for H100 matches no h100 GPU.
		{name: "types differ in case", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:H100:8 CPUs=224\n", gres: "Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"}, nil),
			status: Fail, summary: "the types differ only in case, and Slurm 22.05 registers the node as gpu:h100:8"},
		{name: "Cores on the right socket", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu File=/dev/nvidia[0-3] Cores=0-55\nName=gpu File=/dev/nvidia[4-7] Cores=56-111\n"}, withCores(2, 56, 112)), status: Pass},
		// docs/slurm.md used to advise copying nvidia-smi's CPU Affinity:
		// those are CPU numbers, and 112-167 are no cores of a 112-core node.
		{name: "CPU numbers given as Cores", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu File=/dev/nvidia[0-3] Cores=0-55,112-167\nName=gpu File=/dev/nvidia[4-7] Cores=56-111,168-223\n"}, withCores(2, 56, 112)),
			status: Fail, summary: "Cores=0-55,112-167 (gres.conf:1) names core 167, but the node has 112 cores (the node's CPU topology)", devices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		// AMD-style interleaved CPU numbering (socket 0 has the even CPUs):
		// logical cores 0-55 are still socket 0, and that is right.
		{name: "Cores on interleaved CPU numbering", node: gresNode("gpu002", 8, h100, []string{evens(0, 224), odds(0, 224)}, confs{slurm: hgxSlurm, gres: "Name=gpu File=/dev/nvidia[0-3] Cores=0-55\nName=gpu File=/dev/nvidia[4-7] Cores=56-111\n"}, withInterleavedCores(112)),
			status: Pass},
		{name: "Cores straddling sockets", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu File=/dev/nvidia[0-7] Cores=0-111\n"}, withCores(2, 56, 112)),
			status: Warn, summary: "reaches beyond the GPU's NUMA node", devices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "regular file as device", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu File=/dev/nvidia[0-7]\n"}, devFiles(func(d *slurmstate.DeviceFile) { d.Char = false })),
			status: Fail, summary: "File=/dev/nvidia3 is not a character device"},
		{name: "missing device", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu File=/dev/nvidia[0-7]\n"}, devFiles(func(d *slurmstate.DeviceFile) { d.Exist = false })),
			status: Fail, summary: "File=/dev/nvidia3 does not exist"},
		// The same swapped minors, but slurmd orders the devices by NVML
		// itself under AutoDetect=nvml: no finding (it used to fail and drain).
		{name: "File order does not matter under AutoDetect=nvml", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "AutoDetect=nvml\nName=gpu File=/dev/nvidia[0-7]\n"}, devFiles(func(d *slurmstate.DeviceFile) { d.Minor = 9 })),
			status: Pass},
		{name: "stat'ed minor beats the name", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: hgxSlurm, gres: "Name=gpu File=/dev/nvidia[0-7]\n"}, devFiles(func(d *slurmstate.DeviceFile) { d.Minor = 9 })),
			status: Fail, summary: "is device minor 9, but this GPU is minor 3", devices: []int{3}},
		{name: "duplicate file", node: gresNode("gpu002", 2, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:2\n", gres: "Name=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia0\n"}, nil),
			status: Fail, summary: "duplicate device file /dev/nvidia0", devices: []int{1}},
		{name: "no slurm.conf", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{}, nil), status: Skip, summary: "no slurm.conf"},
		{name: "not collected", node: &state.Node{}, status: Skip, summary: "not collected"},
	})
}

func TestSlurmTopology(t *testing.T) {
	shine := fixture(t, "shine-cluster_slurmconf_only_no_gres.conf.txt", "")
	r := checkSlurmTopology(gresNode("hoth", 8, "x", nil, confs{slurm: shine}, nil), DefaultConfig())
	if r.Status != Pass || !strings.HasPrefix(r.Summary, "info: 5 GPU nodes and no TopologyPlugin") || len(r.Details) == 0 {
		t.Errorf("shine: %+v", r)
	}
	runCases(t, checkSlurmTopology, []checkCase{
		{name: "tree", node: gresNode("hoth", 8, "x", nil, confs{slurm: shine + "\nTopologyPlugin=topology/tree\n"}, nil), status: Pass, summary: "TopologyPlugin=topology/tree for 5 GPU nodes"},
		{name: "explicitly none", node: gresNode("hoth", 8, "x", nil, confs{slurm: shine + "\nTopologyPlugin=topology/none\n"}, nil), status: Pass, summary: "info:"},
		{name: "topology.yaml", node: gresNode("hoth", 8, "x", nil, confs{slurm: shine}, func(n *state.Node) { n.Slurm.Conf.TopologyConf = "/etc/slurm/topology.yaml" }),
			status: Pass, summary: "/etc/slurm/topology.yaml describes the network of 5 GPU nodes"},
		{name: "single node", node: gresNode("bld", 8, "x", nil, confs{slurm: fixture(t, "hkust_single-node_8gpu_autodetect-off.txt", "slurm.conf")}, nil), status: Skip, summary: "1 GPU node(s)"},
		{name: "no slurm.conf", node: gresNode("bld", 8, "x", nil, confs{}, nil), status: Skip},
	})
}

// withCores gives the node the CPU topology Linux shows on an Intel server
// with sockets × perSocket cores: socket s's cores are CPUs s*perSocket...,
// their hyperthreads the same plus siblingOffset.
func withCores(sockets, perSocket, siblingOffset int) func(*state.Node) {
	return func(n *state.Node) {
		if n.Topology == nil {
			n.Topology = &topostate.Topology{}
		}
		for s := 0; s < sockets; s++ {
			for i := 0; i < perSocket; i++ {
				cpu := s*perSocket + i
				n.Topology.Cores = append(n.Topology.Cores, topostate.Core{Package: s, CoreID: i, CPUs: fmt.Sprintf("%d,%d", cpu, cpu+siblingOffset)})
			}
		}
	}
}

// withInterleavedCores: two sockets of cores/2 cores each, CPUs numbered
// alternately across sockets (socket 0 even, socket 1 odd), no SMT.
func withInterleavedCores(cores int) func(*state.Node) {
	return func(n *state.Node) {
		n.Topology = &topostate.Topology{}
		for s := 0; s < 2; s++ {
			for i := 0; i < cores/2; i++ {
				n.Topology.Cores = append(n.Topology.Cores, topostate.Core{Package: s, CoreID: i, CPUs: fmt.Sprint(2*i + s)})
			}
		}
	}
}

func evens(from, to int) string { return stride(from, to) }
func odds(from, to int) string  { return stride(from+1, to) }

func stride(from, to int) string {
	var l []string
	for c := from; c < to; c += 2 {
		l = append(l, fmt.Sprint(c))
	}
	return strings.Join(l, ",")
}
