package benchout_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/benchout"
	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// corpus is every real output under testdata/real with the verdict read
// from it and its thread (the .source beside each file says where it is
// from and what the thread concluded). want is the check's status and a
// part of its summary; each comment says why the verdict is right.
var corpus = []struct {
	file, source, check string
	status              check.Status
	summary             string
	rows                int // measurements parsed
}{
	// One 8x H100 node, 4 GiB: 473.60 GB/s. NCCL's maintainer calls 476
	// "in the expected range for H100" for this very run: a pass against
	// the single-node H100 row, judged at the 1 GiB+ sizes.
	{"nccltests290_all_reduce_perf_h100x8_1node.txt", "nccl-tests", "verify.nccl_tests", check.Pass, "all_reduce_perf peak busbw 473.60 GB/s at 4 GiB, 132% of the 360 GB/s", 6},
	// Two nodes x 8 H100 over IB: no row for a 2-node H100 shape (the
	// thread gives 46-48 GB/s per NIC, not a busbw for this shape), and no
	// NCCL INFO lines to say which network: the figure, no guess.
	{"nccltests290_h100x16_2node.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "155.57 GB/s at 8 GiB; no expectation for this shape (16 rank(s) on 2 node(s), 8 GPU(s) per node", 11},
	// Oracle's tutorial calls 219-223 GB/s the result of a healthy
	// 2 x 8 A100 RoCE cluster; gpuprobe has no row for that shape, so it
	// reports the figure and says so.
	{"oci_a100x16_2node_roce_10g.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "222.88 GB/s at 10 GiB; no expectation", 1},
	// Sizes stop at 128 MiB: too small to reach peak (nccl-tests#212),
	// so the 22.86 GB/s is not judged either way.
	{"cscs_gh200x2_2node_slingshot.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "largest size 128 MiB is under 1 GiB", 8},
	// Two headers, both processes "Rank 0": each ran a one-rank world
	// (built without MPI): measured nothing, whatever the figures.
	{"nccltests107_v100x2_nranks1.txt", "nccl-tests", "verify.nccl_tests", check.Error, "measured nothing: every process reports nranks 1", 0},
	// The rows only, no header: the shape is unknown and the largest row
	// is 512 MiB, so no verdict on the 5 GB/s - which is what a reader
	// without the rest of the post can honestly say.
	{"nccl1453_h100_3node_tagged_low.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "largest size 512 MiB is under 1 GiB", 10},
	// Old format ("error" column, no root): parsed, no #wrong count, and
	// 128 MiB at most. TCP is only in the thread's prose: without NCCL
	// INFO lines the output cannot tell sockets from a slow fabric.
	{"nccl450_tcp100g_oldformat.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "largest size 128 MiB", 5},
	// Rows to 32 MiB only (the excerpt): not judged.
	{"nccltests232_h100_2node_tree_excerpt.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "largest size 32 MiB", 5},
	// DCGM 4.4.2, every test and GPU line Pass; the thread confirms the
	// pass is genuine (injected errors before the run are ignored).
	{"dcgm124_dcgm442_r2_1gpu.txt", "dcgmi-diag", "verify.dcgmi_diag", check.Pass, "3 test(s) passed, 0 skipped on GPU 0 (DCGM 4.4.2)", 6},
	// Deployment passes, every plugin "Skip - All" (twice: two srun
	// tasks): Skip is not a failure, so the verdict is a pass that says
	// how much was skipped.
	{"gnosia93_dcgm339_rtxpro6000x2_r3.txt", "dcgmi-diag", "verify.dcgmi_diag", check.Pass, "18 test(s) passed, 12 skipped", 30},
	// JSON from DCGM 3.1.0 (NVIDIA's own fixture): all PASS on 8 GPUs.
	{"dcgm_jsonresult_test_dcgm310_8gpu.json", "dcgmi-diag", "verify.dcgmi_diag", check.Pass, "10 test(s) passed, 0 skipped on GPU 0,1,2,3,4,5,6,7 (DCGM 3.1.0)", 17},
	// aws-do-eks' own sample of an MPIJob with EFA left out: NCCL says
	// "Using network Socket" and the table tops out at 2.00 GB/s at 1 GiB.
	// No header (the sample elides it): no shape, so no expectation; the
	// socket line is the finding, and a warning is what it earns.
	{"awsdoeks_karpenter_socket_1gpu_2node.txt", "nccl-tests", "verify.nccl_tests", check.Warn, "TCP sockets: NCCL used Socket (line 2", 31},
	// The same sample with EFA: "Using network AWS Libfabric", 2.83 GB/s
	// at 1 GiB. Not sockets, no shape: the figure, no expectation.
	{"awsdoeks_karpenter_efa_1gpu_2node.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "peak busbw 2.83 GB/s at 1 GiB; no expectation for this shape", 31},
	// DCGM 3.3.9 on 4 A10G: Targeted Power prints "Pass - GPUs: 0, 2, 3"
	// on the test's line and "Fail - GPU: 1" on the next (dcgmi's
	// HelperDisplayGpuResults lists passed, then failed, warned, skipped
	// GPUs); the warning names GPU 1's power. GPU 1 failed.
	{"sagemaker_dcgm339_a10gx4_targeted_power_fail.txt", "dcgmi-diag", "verify.dcgmi_diag", check.Fail, "GPU 1 failed Targeted Power: Warning: GPU 1 Max power of 224.1 did not reach desired power minimum", 20},
	// nccl-tests#252: a RING rerun on two nodes, rows 512 MiB-8 GiB only
	// (the excerpt starts at the column heading); the maintainer: "that
	// looks great with ~24GB/s per NIC". No header, no shape: the figure
	// and no expectation, and no false alarm on a good run.
	{"nccltests252_ring_2node_excerpt.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "peak busbw 97.37 GB/s at 4 GiB; no expectation for this shape", 5},
	// Two DGX Sparks (GB10), all_gather_perf at 16 GiB only, before the
	// MTU change the poster proposes: 18.94 GB/s. all_gather on 2 x 1 GB10
	// has no row: reported, not judged.
	{"dgxspark25_gb10x2_all_gather_16g.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "all_gather_perf peak busbw 18.94 GB/s at 16 GiB; no expectation for this shape (2 rank(s) on 2 node(s), 1 GPU(s) per node, NVIDIA GB10", 1},
	// nvbandwidth#48: device_local_copy on 8 H20-3e, ~1116 GB/s each. The
	// GPUs are named by the output ("Device 0: NVIDIA H20-3e"), so the
	// summary names the model it has no row for, not "an unnamed GPU";
	// the 8 agree, so nothing stands out among them.
	{"nvbandwidth48_h20_3e_x8_device_local_copy.txt", "nvbandwidth", "verify.d2d", check.Pass, "8 GPUs at 1115.7–1117.2 GB/s; no expectation for NVIDIA H20-3e", 8},
	// A DGX-2 (12 of its 16 V100s), old nccl-tests format: all_gather
	// rows have no redop and no root column. The run finished (31 rows to
	// 8 GiB) and its own validation failed: "Out of bounds values : 4
	// FAILED", error 1e+00 at 4 and 8 GiB. Wrong data: a failure, and the
	// rows must be read, not called missing.
	{"dgx2_v100x12_all_gather_oob_failed.txt", "nccl-tests", "verify.nccl_tests", check.Fail, "out of bounds values: 4 FAILED", 31},
	// The same node's broadcast_perf, old format (root, no redop):
	// 122.15 GB/s at 8 GiB, validation OK. No row for broadcast on 12 x
	// V100: the figure, no expectation.
	{"dgx2_v100x12_broadcast_oldformat.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "broadcast_perf peak busbw 122.15 GB/s at 8 GiB; no expectation for this shape (12 rank(s) on 1 node(s), 12 GPU(s) per node, Tesla V100-SXM3-32GB", 31},
	// Two A3 Mega nodes x 8 H100: 338.82 GB/s at 8 GiB. The one-node
	// H100 row is for 8 ranks on one node; this is 16 on 2, with no INFO
	// line naming the network: no expectation, and the row is not
	// stretched to fit.
	{"a3mega_h100x16_2node_tcpxo.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "all_reduce_perf peak busbw 338.82 GB/s at 8 GiB; no expectation for this shape (16 rank(s) on 2 node(s), 8 GPU(s) per node, NVIDIA H100 80GB HBM3, network not shown)", 31},
	// ml-engineering's "-r 2 output on a faulty node": GPU Memory rows
	// pasted without the table's head; GPU 0 failed on thermal
	// violations, GPUs 1-7 passed. A headless excerpt is read (and said
	// to be one), the failure named, the 45-byte pieces rejoined.
	{"mleng_dcgm_r2_h100_gpu0_thermal_excerpt.txt", "dcgmi-diag", "verify.dcgmi_diag", check.Fail, "GPU 0 failed GPU Memory: Warning: GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0 Verify that the cooling on this machine is functional", 9},
	// nccl-tests#264: 8 H100, GPU Memory "Fail - All", every GPU's warning
	// "Error using CUDA API cuInit ... 'system not yet initialized'"; the
	// thread: fixed by starting the fabric manager. dcgmi's test could
	// not use CUDA at all (DCGM files DCGM_FR_CUDA_API under software):
	// an error saying so, not a hardware failure of the GPUs.
	{"nccltests264_dcgm338_h100x8_cuinit_fabricmanager.txt", "dcgmi-diag", "verify.dcgmi_diag", check.Error, "GPU Memory could not use CUDA (Error using CUDA API cuInit", 13},
	// 8 RTX 3090 in a dcgm-exporter pod: PCIe "Fail - All", its one
	// warning a CUDA API error ("unsupported display driver / cuda driver
	// combination"): the container's CUDA could not talk to the driver.
	// An error, not a failure of the GPUs; the API name, cut at 45
	// bytes by dcgmi, reads whole.
	{"k8sdoc_dcgm330_rtx3090x8_pcie_cuda_mismatch.txt", "dcgmi-diag", "verify.dcgmi_diag", check.Error, "PCIe could not use CUDA (Error using CUDA API cudaDeviceGetByPCIBusId on every GPU)", 11},
	// One node, 2 A100 in Docker, NCCL_DEBUG=INFO: "Using network Socket"
	// (NCCL sets up a net plugin even when no peer is remote) but "nNodes
	// 1" and every channel P2P: no socket carried data, so no socket
	// warning; 512 MiB at most, so no figure judged either.
	{"notes_a100x2_1node_docker_socket_p2p.txt", "nccl-tests", "verify.nccl_tests", check.Skip, "largest size 512 MiB is under 1 GiB", 3},
	// nvbandwidth#34: 8 A100 SXM, the peer read test's own data check
	// found a wrong value and asserted; no figure. An error that says the
	// copy's data was wrong (not only "ASSERT"), not a pass, and no GPU
	// named: the thread never found the cause.
	{"nvbandwidth34_a100x8_read_ce_pattern_assert.txt", "nvbandwidth", "verify.run", check.Error, "nvbandwidth's check of the copied data found a wrong value (Invalid value when checking the pattern at 0x70a640000000), and stopped", 0},
	// nvbandwidth: h2d/d2h/peer are judged with verify's own kinds by the
	// measured-run checks; here the parse must give the right kinds.
	{"aznhc_nvbandwidth_v0.10_2gpu.txt", "nvbandwidth", "", "", "", 6},
	{"nvbandwidth50_a6000x6_d2d_read.txt", "nvbandwidth", "", "", "", 0},
	{"nvbandwidth15_rtx4090x8_h2d_d2h.txt", "nvbandwidth", "", "", "", 16},
	{"nvbandwidth42_a100_h2d_sm_512m.txt", "nvbandwidth", "", "", "", 1},
}

func parseFile(t *testing.T, name string) *state.Verify {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata/real", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := benchout.Parse(name, f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func TestNcclTestsDcgmiNvbandwidthCorpusVerdicts(t *testing.T) {
	files, _ := filepath.Glob("testdata/real/*")
	listed := map[string]bool{}
	for _, c := range corpus {
		listed[c.file] = true
	}
	for _, f := range files {
		b := filepath.Base(f)
		if strings.HasSuffix(b, ".source") {
			if _, err := os.Stat(strings.TrimSuffix(f, ".source")); err != nil {
				t.Errorf("%s has no output beside it", b)
			}
			continue
		}
		if !listed[b] {
			t.Errorf("%s is in the corpus but has no verdict here", b)
		}
		if _, err := os.Stat(f + ".source"); err != nil {
			t.Errorf("%s has no .source", b)
		}
	}
	for _, c := range corpus {
		t.Run(c.file, func(t *testing.T) {
			v := parseFile(t, c.file)
			if v.Source != c.source || v.File != c.file {
				t.Fatalf("Source, File = %q, %q, want %q, %q", v.Source, v.File, c.source, c.file)
			}
			if len(v.Measurements) != c.rows {
				t.Errorf("%d measurements, want %d", len(v.Measurements), c.rows)
			}
			if c.check == "" {
				return
			}
			checks, err := check.VerifyChecks([]string{c.check}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := check.Run(context.Background(), &state.Node{Verify: v}, check.DefaultConfig(), checks)[0]
			if r.Status != c.status || !strings.Contains(r.Summary, c.summary) {
				t.Errorf("%s = %s %q, want %s containing %q\n%s", c.check, r.Status, r.Summary, c.status, c.summary, strings.Join(r.Details, "\n"))
			}
		})
	}
}

func TestNvbandwidthKinds(t *testing.T) {
	v := parseFile(t, "aznhc_nvbandwidth_v0.10_2gpu.txt")
	got := map[string]int{}
	for _, m := range v.Measurements {
		got[m.Kind]++
		if m.Kind == state.MeasurePeer && (m.Peer < 0 || m.GPU == m.Peer || m.Value < 276 || m.Value > 277) {
			t.Errorf("peer %+v", m)
		}
		if m.Kind == state.MeasureH2D && (m.Path != "host_to_device_memcpy_ce" || m.Peer != -1 || m.Value < 25.9) {
			t.Errorf("h2d %+v", m)
		}
	}
	if got[state.MeasureH2D] != 2 || got[state.MeasureD2H] != 2 || got[state.MeasurePeer] != 2 {
		t.Errorf("kinds %v, want 2 h2d, 2 d2h, 2 peer", got)
	}
	// "<-": the copy goes column to row: GPU 1 -> GPU 0 is row 0, column 1.
	for _, m := range v.Measurements {
		if m.Kind == state.MeasurePeer && m.GPU == 1 && (m.Peer != 0 || m.Value != 276.07) {
			t.Errorf("read_ce <- direction: %+v, want GPU 1 -> 0 at 276.07", m)
		}
	}
	// No Running line (elided in the post): the matrix has no test case,
	// so it is not guessed into a kind.
	v = parseFile(t, "nvbandwidth50_a6000x6_d2d_read.txt")
	if tc := v.From.Nvbandwidth.TestCases; len(tc) != 0 || v.From.Nvbandwidth.Version != "v0.8" {
		t.Errorf("test cases %+v version %q", tc, v.From.Nvbandwidth.Version)
	}
	v = parseFile(t, "nvbandwidth42_a100_h2d_sm_512m.txt")
	if m := v.Measurements[0]; m.Kind != state.MeasureFigure || m.Path != "host_to_device_memcpy_sm" || m.Value != 25.13 {
		t.Errorf("SM copy: %+v, want a figure (not an h2d of verify's kind)", m)
	}
	if len(v.Devices) != 1 || v.Devices[0].PCIBusID != "00000000:99:00" || v.Devices[0].Name != "NVIDIA A100-SXM4-40GB" {
		t.Errorf("devices %+v", v.Devices)
	}
}

func TestNcclTestsHeaderFacts(t *testing.T) {
	v := parseFile(t, "nccltests290_h100x16_2node.txt")
	c := v.From.Collective
	if c.Headers != 1 || len(c.Ranks) != 16 || c.Ranks[15].Host != "node007" || c.Ranks[15].Model != "NVIDIA H100 80GB HBM3" || c.Ranks[15].BusID != "0xc1" {
		t.Errorf("header facts: %d headers, ranks %+v", c.Headers, c.Ranks)
	}
	if len(c.AvgBusBW) != 1 || c.AvgBusBW[0] != 142.735 || len(c.OutOfBounds) != 1 || !c.WrongCounted {
		t.Errorf("footer: %+v %+v %v", c.AvgBusBW, c.OutOfBounds, c.WrongCounted)
	}
	v = parseFile(t, "cscs_gh200x2_2node_slingshot.txt")
	if v.From.Collective.Test != "all_reduce_perf" || v.Measurements[7].Bytes != 134217728 || v.Measurements[7].Value != 22.86 {
		t.Errorf("test %q last row %+v", v.From.Collective.Test, v.Measurements[7])
	}
	// "comm ... nRanks 2 nNodes 1 localRanks 2" (NCCL 2.20.5).
	if c := parseFile(t, "notes_a100x2_1node_docker_socket_p2p.txt").From.Collective; c.Nodes != 1 || len(c.CommRanks) != 1 || c.CommRanks[0] != 2 {
		t.Errorf("nodes %d, comm ranks %v, want 1 node of 2 ranks", c.Nodes, c.CommRanks)
	}
	v = parseFile(t, "nccl1453_h100_3node_tagged_low.txt")
	if m := v.Measurements[6]; m.Bytes != 67108864 || m.Value != 5.27 {
		t.Errorf("tagged row: %+v, want 64 MiB at 5.27", m)
	}
}

// NCCL 2.4 named a ring's transport on "Ring NN :" lines, not "Channel":
// the lines are nccl#398's (2 x 8 V100 on TCP, NCCL 2.4.8), the rows
// around them left out. The socket must be seen.
func TestNcclTestsOldRingLines(t *testing.T) {
	const log = `# nThread 1 nGpus 1 minBytes 262144 maxBytes 536870912 step: 2(factor) warmup iters: 5 iters: 25 validation: 0 
#   Rank  7 Pid   8166 on ip-172-31-0-112 device  7 [0x00] Tesla V100-SXM2-32GB
#   Rank  8 Pid   8537 on ip-172-31-13-129 device  0 [0x00] Tesla V100-SXM2-32GB
ip-172-31-0-112:8162:8221 [3] NCCL INFO Ring 00 : 3[3] -> 2[2] via P2P/IPC
ip-172-31-13-129:8544:8601 [7] NCCL INFO Ring 00 : 15 -> 0 [send] via NET/Socket/0
ip-172-31-0-112:8166:8224 [7] NCCL INFO Ring 00 : 7 -> 8 [send] via NET/Socket/0
`
	v, err := benchout.ParseBytes("nccl398.txt", []byte(log))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range v.From.Collective.Transports {
		got = append(got, tr.Kind+" "+tr.Name)
	}
	if strings.Join(got, ",") != "channel P2P,channel NET/Socket" {
		t.Errorf("transports %v, want the P2P ring and the socket ring", got)
	}
}
