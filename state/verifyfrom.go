package state

// MeasureFigure is a figure a --from tool printed that has no kind of its
// own in gpuprobe's measurements (nvbandwidth's bidirectional, SM-copy and
// latency test cases): kept as printed, with Path naming the test case and
// Unit the tool's, and reported without an expectation.
const MeasureFigure = "figure"

// FromRun is what a saved benchmark output read with `verify --from` says
// beyond its figures: the run's shape and the tool's own checks, as printed.
// One of its parts is set, after Verify.Source.
type FromRun struct {
	Collective  *CollectiveRun  `json:"collective,omitempty"`
	Diag        *DiagRun        `json:"diag,omitempty"`
	Nvbandwidth *NvbandwidthRun `json:"nvbandwidth,omitempty"`
}

// CollectiveRun is an nccl-tests output (all_reduce_perf, all_gather_perf,
// ...): its header, its ranks, its own checks and what the NCCL INFO lines
// in the same output say about the transport. The size table is in
// Verify.Measurements (MeasureBusBW, one per row, in the order printed).
type CollectiveRun struct {
	// Test is the binary ("all_reduce_perf") as the output names it
	// ("# Collective test starting: ...", a command line in the file) or,
	// failing that, the file name; empty when nothing says.
	Test string `json:"test,omitempty"`
	// Headers counts the "# nThread ..." header lines. nccl-tests built
	// with MPI prints one for the whole job; built without, every process
	// prints its own and runs a world of its own.
	Headers int `json:"headers"`
	// NThread and NGpus are the first header's, per process.
	NThread int `json:"n_thread,omitempty"`
	NGpus   int `json:"n_gpus,omitempty"`
	// Ranks are the "#  Rank  N ... on HOST device D [BUS] MODEL" lines, in
	// the order printed; Header is the header (0-based) they follow.
	Ranks []CollectiveRank `json:"ranks,omitempty"`
	// CommRanks are the distinct nranks values of the NCCL INFO "comm ...
	// rank R nranks N ..." lines; empty without NCCL_DEBUG=INFO.
	CommRanks []int `json:"comm_ranks,omitempty"`
	// Nodes is the largest nNodes of the NCCL INFO "comm ... nRanks N
	// nNodes M ..." lines (NCCL 2.12 on); 0 when none says.
	Nodes int `json:"nodes,omitempty"`
	// Transports are the NCCL INFO lines that name a transport: the first
	// of each kind and name.
	Transports []TransportLine `json:"transports,omitempty"`
	// WrongCounted says the table's check column is "#wrong" (a count of
	// wrong elements, in Measurement.Mismatches); the oldest nccl-tests
	// print "error" (a relative error) instead, which is not recorded.
	WrongCounted bool `json:"wrong_counted,omitempty"`
	// OutOfBounds are the "# Out of bounds values : N OK|FAILED" lines.
	OutOfBounds []OutOfBounds `json:"out_of_bounds,omitempty"`
	// AvgBusBW are the "# Avg bus bandwidth : X" lines, GB/s: an average
	// over every size, small ones included.
	AvgBusBW []float64 `json:"avg_bus_bw,omitempty"`
	// NCCLVersion is "2.21.5+cuda12.4" from "NCCL version ..." lines.
	NCCLVersion string `json:"nccl_version,omitempty"`
}

// CollectiveRank is one "# Rank" line of an nccl-tests header.
type CollectiveRank struct {
	Header int    `json:"header"`
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Device int    `json:"device"`
	BusID  string `json:"bus_id,omitempty"`
	Model  string `json:"model,omitempty"`
}

// TransportLine is one NCCL INFO line naming a transport. Kind is
// "network" ("Using network IB", "NET/IB : Using ...") or "channel" (a
// channel's "via NET/Socket/0", "via P2P/IPC", "via SHM"); Name is what
// follows as printed ("IB", "Socket", "AWS Libfabric", "NET/IB", "P2P").
type TransportLine struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// OutOfBounds is one "# Out of bounds values : N OK" line.
type OutOfBounds struct {
	Count  int    `json:"count"`
	Status string `json:"status"`
	Line   int    `json:"line"`
}

// DiagRun is a `dcgmi diag` output (text table or -j JSON).
type DiagRun struct {
	Format        string `json:"format"` // "text" or "json"
	DCGMVersion   string `json:"dcgm_version,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	DeviceIDs     string `json:"device_ids,omitempty"`
	// Tests are the test lines, in the order printed.
	Tests []DiagTest `json:"tests,omitempty"`
	// Errors are what the tool printed as its own failure to run
	// ("Error: Unable to complete diagnostic ...", JSON runtime_error).
	Errors []string `json:"errors,omitempty"`
	// Tables counts the result tables (srun with several tasks prints one
	// each).
	Tables int `json:"tables"`
}

// DiagTest is one test of a dcgmi diag run: its overall result and its
// per-GPU results, as printed.
type DiagTest struct {
	Category string `json:"category,omitempty"`
	Name     string `json:"name"`
	// Result is the test's own line ("Pass", "Fail", "Skip - All",
	// "Fail - GPU: 1"); empty when only per-GPU results were printed.
	Result string       `json:"result,omitempty"`
	GPUs   []DiagResult `json:"gpus,omitempty"`
	// Messages are the warning and info text printed with the test.
	Messages []string `json:"messages,omitempty"`
	Line     int      `json:"line,omitempty"`
}

// DiagResult is one GPU's result of a test.
type DiagResult struct {
	GPU    int    `json:"gpu"`
	Status string `json:"status"`
}

// NvbandwidthRun is an nvbandwidth output.
type NvbandwidthRun struct {
	Version string `json:"version,omitempty"`
	Driver  string `json:"driver,omitempty"`
	// TestCases are those run, in order, with their SUM lines.
	TestCases []NvbandwidthCase `json:"test_cases,omitempty"`
	// Waived counts "Waived" test cases.
	Waived int `json:"waived,omitempty"`
}

// NvbandwidthCase is one "Running NAME." block.
type NvbandwidthCase struct {
	Name string   `json:"name"`
	Sum  *float64 `json:"sum,omitempty"`
	Line int      `json:"line"`
}
