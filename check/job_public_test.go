package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// TestJobNCCLPublicCases judges public posts of NCCL_* and MASTER_ADDR
// settings (state/slurmstate/testdata/ncclenv-public, each file verbatim,
// its source in that directory's README): the variables and the node's
// interfaces, HCAs and GPU links a post gives are put into a job step
// (jobNode: eight H100s with NVLink, HCAs mlx5_0 and mlx5_1, interfaces lo,
// eth0 and ib0 unless the post gives its own), each file must still hold
// the line the case rests on, and the verdict is the one NCCL's
// documentation and source give for that node.
func TestJobNCCLPublicCases(t *testing.T) {
	const dir = "../state/slurmstate/testdata/ncclenv-public"
	// net sets the node's interfaces and HCAs as a post lists them.
	net := func(ifs, hcas []string) func(n *state.Node) {
		return func(n *state.Node) { n.Slurm.Host.NetInterfaces, n.Slurm.Host.IBDevices = ifs, hcas }
	}
	noNVLink := func(n *state.Node) {
		for i := range n.NVML.GPUs {
			n.NVML.GPUs[i].NVLinks = nil
		}
	}
	// jsc is a step of an 8-node JSC job on node (jwb0001 first) with
	// MASTER_ADDR set to the first node's InfiniBand name; local are the
	// node's own addresses.
	jsc := func(node string, local []string) *state.Node {
		return jobNode([]string{"SLURM_JOB_ID=100", "SLURM_STEP_ID=0", "SLURMD_NODENAME=" + node, "SLURM_JOB_NODELIST=jwb[0001-0008]",
			"SLURM_STEP_NODELIST=jwb[0001-0008]", "SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURM_STEP_TASKS_PER_NODE=1(x8)",
			"MASTER_ADDR=jwb0001i", "MASTER_PORT=54123"}, func(n *state.Node) {
			n.Slurm.Host.Resolved = map[string][]string{"jwb0001i": {"10.13.1.1"}, "jwb0001": {"10.12.1.1"}}
			n.Slurm.Host.LocalAddresses = local
		})
	}
	runPublicCases(t, dir, []publicCase{
		// Two nodes, one with eno1, one with eth0: the maintainer's list
		// names both, and each node uses the one it has (an entry that
		// matches nothing is skipped, src/misc/utils.cc matchIfList). Was a
		// warning ("eth0 matches no interface here").
		{name: "eno1,eth0 on the eno1 node", file: "nccl286-socket-ifname-eno1-eth0.txt", anchor: "Did you try setting `NCCL_SOCKET_IFNAME=eno1,eth0` ?",
			run: checkNCCLEnv, node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=eno1,eth0"), net([]string{"eno1", "lo"}, nil)),
			want: Pass, summary: "eth0 matches no interface here, NCCL uses eno1"},
		{name: "eno1,eth0 on the eth0 node", file: "nccl286-socket-ifname-eno1-eth0.txt", anchor: "2nd computer gives\n‘eth0",
			run: checkNCCLEnv, node: jobNode(onNode("gpu002", step(1, 1, "NCCL_SOCKET_IFNAME=eno1,eth0")), net([]string{"eth0", "lo"}, nil)),
			want: Pass, summary: "eno1 matches no interface here, NCCL uses eth0"},
		// The question's lo on both nodes: loopback only.
		{name: "lo on two nodes", file: "nccl286-socket-ifname-eno1-eth0.txt", anchor: "`lo` is loopback so you won't be able to use it between two nodes.",
			run: checkNCCLEnv, node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=lo"), net([]string{"eno1", "lo"}, nil)),
			want: Fail, summary: "selects only the loopback interface on a 2-node job"},
		// An interface that does not exist: NCCL's bootstrap finds none
		// and initialization fails (src/bootstrap.cc). Was a warning. The
		// post names no other interface; lo and eth0 stand for them.
		{name: "eth2 absent", file: "nccl1837-socket-ifname-eth2-absent.txt", anchor: "Set NCCL_SOCKET_IFNAME to a non-existent interface.",
			run: checkNCCLEnv, node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=eth2"), net([]string{"lo", "eth0"}, nil)),
			want: Fail, summary: "NCCL_SOCKET_IFNAME=eth2 matches no interface here (have lo, eth0): NCCL's bootstrap finds no socket interface"},
		// An exclusion list leaving ens32 (the interface the log shows):
		// right; the hang was elsewhere.
		{name: "^lo,docker0 on p4d", file: "nccl526-socket-ifname-exclude-lo-docker0-p4d.txt", anchor: "Bootstrap : Using ens32:10.10.5.16<0>",
			run: checkNCCLEnv, node: jobNode(step(0, 1, "NCCL_SOCKET_IFNAME=^lo,docker0"), net([]string{"docker0", "ens32", "lo"}, nil)),
			want: Pass, summary: "1 NCCL_* variable(s) consistent"},
		// NCCL_IB_HCA names the bonded RoCE HCA ibv_devinfo lists, the
		// *_DISABLE variables are 0, NCCL_IB_CUDA_SUPPORT has been ignored
		// since NCCL 2.4: nothing wrong in what the check reads. The
		// failure was the RoCE GID index (NCCL_IB_GID_INDEX=3 fixed it),
		// which gpuprobe does not read (no GID table is collected).
		{name: "mlx5_bond_0:1", file: "nccl426-ib-hca-mlx5-bond-0-roce.txt", anchor: "-x NCCL_IB_HCA=mlx5_bond_0:1 -x NCCL_P2P_DISABLE=0 -x NCCL_SHM_DISABLE=0 -x NCCL_IB_DISABLE=0 -x NCCL_IB_CUDA_SUPPORT=0",
			run: checkNCCLEnv, node: jobNode(step(0, 1, "NCCL_DEBUG=INFO", "NCCL_IB_HCA=mlx5_bond_0:1", "NCCL_P2P_DISABLE=0", "NCCL_SHM_DISABLE=0", "NCCL_IB_DISABLE=0", "NCCL_IB_CUDA_SUPPORT=0"),
				net([]string{"lo", "eth0"}, []string{"mlx5_bond_0"})),
			want: Pass, summary: "6 NCCL_* variable(s) consistent"},
		// One node, a freeze with 4 GPUs worked around with P2P off; no
		// NVLink posted (sjeaugey: ACS): only slower, nothing to warn of
		// on a PCIe-only node.
		{name: "P2P off, PCIe only", file: "nccl631-p2p-disable-4gpus-freeze.txt", anchor: "There won't be any problem, just reduced performance",
			run: checkNCCLEnv, node: jobNode(oneNode(step(0, 1, "NCCL_P2P_DISABLE=1")), noNVLink),
			want: Pass},
		// H100 NVL pairs on NV12 with P2P and SHM off as a workaround:
		// GPU-to-GPU traffic leaves NVLink. The title says both were set;
		// "1" stands for the value.
		{name: "P2P and SHM off on NVLink", file: "nccl1608-h100nvl-p2p-shm-disable.txt", anchor: "GPU0     X      NV12    SYS",
			run: checkNCCLEnv, node: jobNode(oneNode(step(0, 1, "NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_SOCKET_IFNAME=lo")), nil),
			want: Warn, summary: "NCCL_P2P_DISABLE=1 on a node with NVLink"},
		// localhost on a 4-node job: every node its own rendezvous point.
		{name: "localhost on 4 nodes", file: "pytorch76069-master-addr-localhost-4-nodes.txt", anchor: "you should not be using `localhost`",
			run: checkMasterAddr, node: jobNode([]string{"SLURM_JOB_ID=100", "SLURM_STEP_ID=0", "SLURMD_NODENAME=gpu002", "SLURM_JOB_NODELIST=gpu[001-004]",
				"SLURM_STEP_NODELIST=gpu[001-004]", "SLURM_PROCID=1", "SLURM_LOCALID=0", "SLURM_STEP_TASKS_PER_NODE=1(x4)", "MASTER_ADDR=localhost"}, func(n *state.Node) {
				n.Slurm.Host.Resolved = map[string][]string{"localhost": {"127.0.0.1"}, "gpu001": {"10.0.0.1"}}
			}),
			want: Fail, summary: "MASTER_ADDR=localhost is a loopback address (127.0.0.1) on a 4-node job"},
		// JSC: the first node's InfiniBand name (node name + "i"), tested
		// on 8 nodes. On the first node its own addresses show it is
		// there; on the others nothing gpuprobe reads ties jwb0001i to
		// jwb0001. Was a failure there ("not a node of this job").
		{name: "JSC IB name on the first node", file: "itwinai438-jsc-master-addr-ib-suffix.txt", anchor: `export MASTER_ADDR="${MASTER_ADDR}i"`,
			run: checkMasterAddr, node: jsc("jwb0001", []string{"10.12.1.1", "10.13.1.1", "127.0.0.1"}),
			want: Pass, summary: "MASTER_ADDR=jwb0001i has the address of the job's first node jwb0001"},
		{name: "JSC IB name on another node", file: "itwinai438-jsc-master-addr-ib-suffix.txt", anchor: "Tested on 8 nodes with 4 GPUs per node",
			run: checkMasterAddr, node: jsc("jwb0005", []string{"10.12.1.5", "10.13.1.5", "127.0.0.1"}),
			want: Skip, summary: "it may be another interface of that node"},
	})
}

// FuzzNCCLListMatch: NCCL's list syntax never selects a name that is not
// there, and the unmatched entries of an including list are entries
// (non-empty, cut at ":" and ",").
func FuzzNCCLListMatch(f *testing.F) {
	for _, s := range []string{"mlx5_0:1,mlx5_1", "^=docker0,lo", "=eth0", "^", "=", ",,:", "eno1,eth0", "^=mlx5_0,mlx5_5,mlx5_6"} {
		f.Add(s)
	}
	have := []string{"lo", "eth0", "eno1", "ib0", "mlx5_0", "mlx5_10"}
	f.Fuzz(func(t *testing.T, val string) {
		sel, bad, exclude := ncclListMatch(val, have)
		for _, s := range sel {
			if !containsStr(have, s) {
				t.Errorf("%q selects %q", val, s)
			}
		}
		if exclude && len(bad) > 0 {
			t.Errorf("%q: exclusion with unmatched %q", val, bad)
		}
		for _, b := range bad {
			if b == "" || strings.ContainsAny(b, ",:") {
				t.Errorf("%q: entry %q", val, b)
			}
		}
	})
}

// publicCase is one public capture judged by a check: the file (verbatim,
// in dir) must still hold anchor, the line the case rests on, and run on
// node must give want with summary in its summary.
type publicCase struct {
	name, file, anchor string
	run                func(*state.Node, *Config) Result
	node               *state.Node
	want               Status
	summary            string
}

// runPublicCases runs each case as a subtest named by name, else file.
func runPublicCases(t *testing.T, dir string, cases []publicCase) {
	t.Helper()
	for _, c := range cases {
		name := c.name
		if name == "" {
			name = c.file
		}
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), c.anchor) {
				t.Fatalf("%s no longer holds %q", c.file, c.anchor)
			}
			r := c.run(c.node, DefaultConfig())
			if r.Status != c.want || !strings.Contains(r.Summary, c.summary) {
				t.Errorf("got %s %q (remedy %q), want %s %q", r.Status, r.Summary, r.Remedy, c.want, c.summary)
			}
		})
	}
}
