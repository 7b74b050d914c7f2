package check

// What an nccl-tests run should show, one row per shape, each with its
// source. A run whose shape (test, GPU model, nodes, GPUs per node, the
// network between nodes) matches no row is reported with its figure and
// "no expectation for this shape": expected bus bandwidth depends on scale
// and topology, not only on the GPU model, and a guess would be worse than
// nothing.

// busBWExpectation is one shape's healthy peak bus bandwidth.
type busBWExpectation struct {
	// Test is the nccl-tests binary ("all_reduce_perf").
	Test string
	// Model is matched against every rank's GPU name exactly as nccl-tests
	// prints it (cudaGetDeviceProperties' name).
	Model string
	// Nodes and GPUsPerNode are the run's shape; Network is how the nodes
	// talk ("" for one node: NVLink only).
	Nodes, GPUsPerNode int
	Network            string
	// Healthy is the bus bandwidth (GB/s) a healthy system of this shape
	// reaches at its best large size (1 GiB and up); below
	// busBWWarnFraction of it warns, below busBWFailFraction fails.
	Healthy float64
	Source  string
}

// The levels, as fractions of Healthy. A run at 80-100% of the healthy
// figure is reported as degraded, not failed: NVLink SHARP, the algorithm
// and the build move a healthy 8-GPU H100 between ~370 and ~480 GB/s.
const (
	busBWWarnFraction = 1.0
	busBWFailFraction = 0.8
)

// busBWJudgedFrom is the smallest size judged: smaller sizes do not reach
// peak bandwidth ("256M is too small to reach peak bandwidth",
// https://github.com/NVIDIA/nccl-tests/issues/212).
const busBWJudgedFrom = 1 << 30

var busBWExpectations = []busBWExpectation{
	{
		// One 8-GPU H100 SXM node (NVSwitch, NVLink 4): "With the protocol
		// overhead (~20%) NCCL can get an effective NVLink bandwidth of
		// 370GB/s ... On 8 GPUs, you should reach a peak busBw of ~480GB/s"
		// with NVLink SHARP (NCCL's maintainer in nccl-tests#212); 476 GB/s
		// on one 8x H100 node "looks to be in the expected range for H100"
		// (nccl-tests#290). Healthy is the ring figure (no NVLS), so a run
		// with NVLS disabled is not called degraded.
		Test: "all_reduce_perf", Model: "NVIDIA H100 80GB HBM3", Nodes: 1, GPUsPerNode: 8,
		Healthy: 360,
		Source:  "https://github.com/NVIDIA/nccl-tests/issues/212 (sjeaugey, 2024-05-06); https://github.com/NVIDIA/nccl-tests/issues/290 (AddyLaddy, 2025-03-03)",
	},
}
