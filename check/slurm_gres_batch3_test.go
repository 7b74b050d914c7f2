package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/slurm"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// dgxA100 is the DGX A100's CPU side as Slurm and NVML see it: 2×64 cores,
// SMT on (core c is CPUs c and c+128), NPS4 so that each GPU pair sits on a
// 16-core NUMA node: GPUs 0-1 on cores 48-63, 2-3 on 16-31, 4-5 on
// 112-127, 6-7 on 80-95 (the Cores= of deepops#1102 and the CPUs= of
// deepops#1195 agree on it). Neither thread posts a slurm.conf: this node
// line is the hardware, not a quote.
const dgxA100Slurm = "GresTypes=gpu\nNodeName=node01 CPUs=256 Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 Gres=gpu:8\n"

var dgxA100NUMA = []string{"48-63,176-191", "16-31,144-159", "112-127,240-255", "80-95,208-223"}

func dgxA100Cores(n *state.Node) {
	n.Topology = &topostate.Topology{}
	for c := 0; c < 128; c++ {
		n.Topology.Cores = append(n.Topology.Cores, topostate.Core{Package: c / 64, CoreID: c % 64, CPUs: fmt.Sprintf("%d,%d", c, c+128)})
	}
}

// The third batch of real configs (slurm/testdata/gres), each judged for
// the node it describes, with slurmd -G 22.05 (Debian) where noted.
func TestSlurmGresThirdBatch(t *testing.T) {
	const a100 = "NVIDIA A100-SXM4-40GB"
	d1102, d1195 := "deepops_issue1102_dgxa100_cores_links-double-comma.txt", "deepops_issue1195_dgxa100_cpus-thread-numbers.txt"
	mc27, d1157 := "computecanada_magic-castle_issue27_autodetect-nvml_duplicate-name-gpu.txt", "deepops_pr1157_autodetect-nvml-only_p100-vm.txt"
	pc409 := "aws-parallelcluster-cookbook_pr409_gres-conf-erb_dummy-compute.txt"
	sk207 := "sckyzo_slurm-exporter_pr207_typed-model_a-model_b_dynamic.txt"
	skSlurm := "GresTypes=gpu\nNodeName=g2 " + strings.TrimSpace(fixture(t, sk207, "slurmd --conf")) + "\n"
	runCases(t, checkSlurmGres, []checkCase{
		// Cores= per NUMA node, right for every GPU; the third Links= has
		// an empty field, which slurmd's strtok_r skips: slurmd -G 22.05
		// keeps "Links=0,0,-1,,0,0,0,0,0" with no error, and the user
		// reports no errors in the log.
		{name: "deepops#1102: Cores= per NUMA node, Links= with an empty field", node: gresNode("node01", 8, a100, dgxA100NUMA,
			confs{slurm: dgxA100Slurm, gres: fixture(t, d1102, "gres.conf")}, dgxA100Cores),
			status: Pass, summary: "AutoDetect not set; 8 File= GPUs in NVML order"},
		// CPUs= copied from nvidia-smi's CPU Affinity (thread numbers):
		// slurmctld "invalid GRES core specification (48-63,176-191)",
		// slurmd -G 22.05 "Invalid GRES data for gpu, CPUs=48-63,176-191".
		{name: "deepops#1195: CPUs= as thread numbers on 128 cores", node: gresNode("node01", 8, a100, dgxA100NUMA,
			confs{slurm: dgxA100Slurm, gres: fixture(t, d1195, "gres.conf")}, dgxA100Cores),
			status: Fail, summary: "CPUs=48-63,176-191 (gres.conf:5) names core 191, but the node has 128 cores", devices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		// Two bare Name=gpu lines: slurmd -G 22.05 "fatal: gres.conf
		// duplicate records for gpu", as on the reporter's node.
		{name: "magic_castle#27: AutoDetect=nvml and two bare Name=gpu", node: gresNode("node2", 2, "Tesla V100-PCIE-16GB", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=node2 CPUs=16 Gres=gpu:2\n", gres: fixture(t, mc27, "gres.conf")}, nil),
			status: Fail, summary: `slurmd stops with fatal: "gres.conf duplicate records for gpu"`},
		// The maintainer's fix: AutoDetect=nvml alone.
		{name: "magic_castle#27 fixed: AutoDetect=nvml alone", node: gresNode("node2", 2, "Tesla V100-PCIE-16GB", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=node2 CPUs=16 Gres=gpu:2\n", gres: "AutoDetect=nvml\n"}, nil),
			status: Pass, summary: "AutoDetect=nvml"},
		{name: "deepops PR 1157: AutoDetect=nvml alone on a P100 VM", node: gresNode("virtual-gpu101", 1, "Tesla P100-SXM2-16GB", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=virtual-gpu101 Gres=gpu:1\n", gres: fixture(t, d1157, "gres.conf")}, nil),
			status: Pass, summary: "AutoDetect=nvml"},
		// Device nodes made by mknod in a container with no NVIDIA
		// hardware: the typed File= lines match Gres= type for type, and
		// there is no GPU to compare them with.
		{name: "slurm_exporter PR 207: model_a/model_b File= lines, no NVML", node: gresNode("g2", 0, "", nil,
			confs{slurm: skSlurm, gres: fixture(t, sk207, "gres.conf")}, func(n *state.Node) { n.NVML.Available = false }),
			status: Pass, summary: "AutoDetect not set; 4 File= devices not compared with the GPUs: NVML not available"},
		// The author's other finding, typed lines without File=: Slurm
		// 25.11 "Ignoring file-less GPU gpu:model_a from final GRES list".
		{name: "slurm_exporter PR 207: typed lines without File=", node: gresNode("g2", 4, "NVIDIA A100-SXM4-40GB", nil,
			confs{slurm: skSlurm, gres: "Name=gpu Type=model_a Count=2\nName=gpu Type=model_b Count=2\n"}, nil),
			status: Fail, summary: "gres.conf has no File= for gpu on g2"},
		// AutoDetect=nvml alone under a slurmd without gpu_nvml.so: it
		// detects nothing and the node drains "gres/gpu count reported
		// lower than configured", as the Slinky reporter saw.
		{name: "slinky containers#14: AutoDetect=nvml, slurmd without gpu_nvml.so", node: gresNode("slinky-0", 4, "NVIDIA GH200 480GB", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=slinky-0 CPUs=80 Gres=gpu:4\n", gres: fixture(t, "slinkyproject_containers_issue14_autodetect-nvml_no-nvml-build.txt", "gres.conf")},
			func(n *state.Node) {
				n.Slurm.Conf.Plugins = &slurmstate.Plugins{From: "default", Dirs: []string{"/usr/lib/slurm"}, GPUNVML: "no", Why: "no gpu_nvml.so in /usr/lib/slurm"}
			}),
			status: Fail, summary: "gres/gpu count reported lower than configured (0 < 4)"},
		// Where the plugin directory cannot be read, the same file is said
		// to depend on it, not passed as fact nor failed.
		{name: "slinky containers#14: plugin directory unreadable", node: gresNode("slinky-0", 4, "NVIDIA GH200 480GB", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=slinky-0 CPUs=80 Gres=gpu:4\n", gres: fixture(t, "slinkyproject_containers_issue14_autodetect-nvml_no-nvml-build.txt", "gres.conf")},
			func(n *state.Node) {
				n.Slurm.Conf.Plugins = &slurmstate.Plugins{From: "default", GPUNVML: "unknown", Why: "no plugin directory found"}
			}),
			status: Pass, summary: "whether slurmd has gpu_nvml.so is unknown"},
		// A dynamic node (slurmd -Z) is in no NodeName line and here was
		// given no Gres=: scontrol shows Gres=(null). The typed File= lines
		// themselves match the eight H100s (leading blanks and all: slurmd
		// -G 22.05 parses them).
		{name: "slinky slurm-operator#101: dynamic node, typed File= lines", node: gresNode("slinky-0", 8, "NVIDIA H100 80GB HBM3", nil,
			confs{slurm: "GresTypes=gpu\nPartitionName=all Nodes=ALL Default=YES\n", gres: fixture(t, "slinkyproject_slurm-operator_issue101_h100x8_typed_dynamic-no-gres.txt", "gres.conf")}, nil),
			status: Warn, summary: "node slinky-0 (from SLURMD_NODENAME) is not declared"},
		// ParallelCluster's base gres.conf on a host that is the
		// placeholder node, without a GPU or driver: slurmd stats File=
		// whatever Gres= and NVML say (slurmd -G 22.05: "Waiting for
		// gres.conf file /dev/nvidia0", then fatal). The node line is not
		// in the PR: a CPU node's, given here.
		{name: "parallelcluster#409: File=/dev/nvidia0 on a node with no GPU", node: gresNode("dummy-compute", 0, "", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=dummy-compute CPUs=4 State=UNKNOWN\n", gres: fixture(t, pc409, "gres.conf")},
			func(n *state.Node) {
				n.NVML.Available, n.NVML.Error = false, "libnvidia-ml.so.1 not found"
				n.Slurm.Devices = []slurmstate.DeviceFile{{Path: "/dev/nvidia0"}}
			}),
			status: Fail, summary: `File=/dev/nvidia0 does not exist: slurmd stops ("fatal: can't stat gres.conf file /dev/nvidia0")`},
		// The same host with the device file there and the driver down:
		// nothing to hold File= against, said so.
		{name: "parallelcluster#409: driver down, device file present", node: gresNode("dummy-compute", 0, "", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=dummy-compute CPUs=4 State=UNKNOWN\n", gres: fixture(t, pc409, "gres.conf")},
			func(n *state.Node) {
				n.NVML.Available = false
				n.Slurm.Devices = []slurmstate.DeviceFile{{Path: "/dev/nvidia0", Exist: true, Char: true, Major: 195}}
			}),
			status: Pass, summary: "1 File= devices not compared with the GPUs: NVML not available"},
		// The template alone on a GPU instance (before sqswatcher adds its
		// lines): the line is for another node, so slurmd has no File= for
		// this one's GPU.
		{name: "parallelcluster#409: the template alone on a GPU node", node: gresNode("ip-10-0-1-17", 1, "Tesla V100-SXM2-16GB", nil,
			confs{slurm: "GresTypes=gpu\nNodeName=ip-10-0-1-17 CPUs=8 Gres=gpu:tesla:1\n", gres: fixture(t, pc409, "gres.conf")}, nil),
			status: Fail, summary: "gres.conf has no File= for gpu on ip-10-0-1-17"},
	})
}

// gres_links_validate (src/interfaces/gres.c) as slurmd -G 22.05 applies
// it: empty fields skipped, -2..1023, one -1; slurmd drops a bad Links=
// ("Ignoring invalid Links") and runs on, so slurm.gres warns.
func TestGresLinksAsSlurmdReadsThem(t *testing.T) {
	for links, ok := range map[string]bool{
		"0,0,-1,,0,0,0,0,0": true, ",,-1,,": true, "-2,-1": true, "+1,-1": true, "-1,1023": true,
		"0,0,-1,x,0,0,0,0": false, "0,0,0": false, "-1,1024": false, "-1,-1": false, "-3,-1": false, "null": false, ",,,": false,
	} {
		g := slurm.ParseGresConfData("gres.conf", []byte("Name=gpu File=/dev/nvidia0 Links="+links+"\n"))
		p := LintGres(g, "", "gpu")
		if ok != (len(p) == 0) || len(p) > 0 && !p[0].NotFatal {
			t.Errorf("Links=%s: %v (slurmd accepts it: %v)", links, p, ok)
		}
	}
	n := gresNode("gpu001", 1, "NVIDIA H100 80GB HBM3", nil, confs{slurm: "GresTypes=gpu\nNodeName=gpu001 Gres=gpu:1\n", gres: "Name=gpu File=/dev/nvidia0 Links=0,0,0\n"}, nil)
	if r := checkSlurmGres(n, DefaultConfig()); r.Status != Warn || !strings.Contains(r.Summary, "exactly one -1") {
		t.Errorf("slurm.gres on an invalid Links=: %s %q", r.Status, r.Summary)
	}
}

// gres.c _foreach_gres_conf: records of one name without File= and Type=
// are fatal from the second on, for this node only.
func TestLintGresDuplicateRecords(t *testing.T) {
	for conf, dup := range map[string]bool{
		"Name=gpu\nName=gpu\n":                                         true,
		"Name=gpu Count=1\nNodeName=n1 Name=gpu Count=1\n":             true,
		"Name=gpu Count=2\n":                                           false,
		"NodeName=n1 Name=gpu Count=2\nNodeName=n2 Name=gpu Count=2\n": false,
		"Name=gpu Type=a Count=1\nName=gpu Type=b Count=1\n":           false,
		"Name=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia1\n":     false,
	} {
		g := slurm.ParseGresConfData("gres.conf", []byte(conf))
		got := strings.Contains(fmt.Sprint(LintGres(g, "n1", "gpu")), "duplicate records")
		if got != dup {
			t.Errorf("%q: duplicate records found: %v, slurmd: %v", conf, got, dup)
		}
	}
}
