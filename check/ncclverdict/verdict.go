// Package ncclverdict judges the facts the NCCL log parser (package nccl)
// found: which transport carried inter-node traffic, whether NCCL fell back
// to TCP, what went wrong, and whether that should fail a run. It is pure:
// no I/O, no parser, only state.NCCLFacts in and a Verdict out.
package ncclverdict

import "github.com/gpuprobe/gpuprobe/state"

// Inter-node transport verdicts (Verdict.InterNode).
const (
	InterGDRDMA  = "GDRDMA"  // inter-node connections over IB/RoCE with GPUDirect RDMA
	InterIB      = "IB"      // inter-node connections over IB/RoCE without GPUDirect RDMA
	InterSocket  = "Socket"  // inter-node traffic over TCP sockets
	InterOFI     = "OFI"     // aws-ofi-nccl / libfabric (EFA); see GDR for GPUDirect
	InterNone    = "none"    // provably one node: no inter-node traffic
	InterUnknown = "unknown" // the lines do not decide it; see Missing
)

// Verdict is what a log says about NCCL's transports, for the whole log
// and per communicator and process.
type Verdict struct {
	// InterNode is one of the Inter* constants.
	InterNode string `json:"inter_node"`
	// Summary is the one-line verdict a person reads first.
	Summary string `json:"summary"`
	// Evidence is the line the inter-node verdict rests on.
	Evidence *Evidence `json:"evidence,omitempty"`
	// Missing says, for "unknown", what the log lacks.
	Missing string `json:"missing,omitempty"`

	// TCPFallback: NCCL selected its own Socket (TCP) network module,
	// whether or not traffic left the node.
	TCPFallback       bool      `json:"tcp_fallback"`
	TCPFallbackReason *Evidence `json:"tcp_fallback_reason,omitempty"`
	// GDR: whether inter-node connections used GPUDirect RDMA; null when
	// the log does not show it.
	GDR *bool `json:"gdr"`
	// GDRConnections counts inter-node (NET) connection lines and those
	// with /GDRDMA.
	NetConnections int64 `json:"net_connections"`
	GDRConnections int64 `json:"gdr_connections"`
	// NetSelected is the network module NCCL chose: IB, Socket, OFI,
	// unknown, or a plugin's name; several joined by "," when processes
	// disagree.
	NetSelected  string   `json:"net_selected"`
	NCCLVersions []string `json:"nccl_versions"`
	// NRanks is the largest communicator size the log announces, or one
	// more than the largest rank a connection line names (NRanksInferred).
	NRanks         *int64 `json:"nranks"`
	NRanksInferred bool   `json:"nranks_inferred,omitempty"`
	// NNodes is known from NCCL's "nNodes" line, from a proof that the job
	// ran on one node, or from distinct host names (NNodesFrom says which).
	NNodes     *int64 `json:"nnodes,omitempty"`
	NNodesFrom string `json:"nnodes_from,omitempty"`
	Hosts      int    `json:"hosts"`

	CollNet bool `json:"collnet,omitempty"`
	NVLS    bool `json:"nvls,omitempty"`
	// Env holds the NCCL_* settings NCCL echoed, with every value seen.
	Env map[string][]string `json:"env,omitempty"`

	// Format is "2.2" when the log is NCCL 2.2's (INFO lines without the
	// word NCCL); absent otherwise.
	Format string `json:"format,omitempty"`
	// Limits says which of the parser's memory caps the log reached, and
	// what that leaves out.
	Limits string `json:"limits,omitempty"`

	Errors   []Finding `json:"errors"`
	Warnings []Finding `json:"warnings"`
	Notes    []Finding `json:"notes,omitempty"`

	Communicators []CommSummary `json:"communicators"`
	// CommunicatorsOmitted counts communicators left out of Communicators
	// to keep the report small.
	CommunicatorsOmitted int              `json:"communicators_omitted,omitempty"`
	Processes            []ProcessSummary `json:"processes"`
	// ProcessesOmitted counts processes left out of Processes to keep the
	// report small.
	ProcessesOmitted int             `json:"processes_omitted,omitempty"`
	Stats            state.NCCLStats `json:"stats"`
}

// Evidence is a line that supports a conclusion.
type Evidence struct {
	Location
	Text  string `json:"text"`
	Count int64  `json:"count,omitempty"` // lines of the same kind
}

// CommSummary describes one communicator. Communicators are identified by
// the commId NCCL >= 2.18 prints; older logs only have per-process comm
// pointers, so their communicators are grouped by size.
type CommSummary struct {
	ID        string `json:"id"`
	NRanks    int64  `json:"nranks,omitempty"`
	NNodes    int64  `json:"nnodes,omitempty"`
	RanksSeen int    `json:"ranks_seen"`
	Hosts     int    `json:"hosts"`
	API       string `json:"api,omitempty"` // ncclCommInitRank, ncclCommSplit, … (NCCL >= 2.21)
	Instances int    `json:"instances"`     // (process, comm pointer) pairs
	Started   int    `json:"init_start"`    // instances that printed "Init START"
	Complete  int    `json:"init_complete"` // instances that printed "Init COMPLETE"
	// Intra and Inter count connection lines by transport.
	Intra map[string]int64 `json:"intra,omitempty"`
	Inter map[string]int64 `json:"inter,omitempty"`
	GDR   *bool            `json:"gdr"`
	Ranks []RankSummary    `json:"ranks,omitempty"`
	// RanksOmitted counts ranks left out of Ranks.
	RanksOmitted int `json:"ranks_omitted,omitempty"`
}

// RankSummary is one rank of a communicator.
type RankSummary struct {
	Rank       int64            `json:"rank"`
	Host       string           `json:"host,omitempty"`
	PID        int64            `json:"pid,omitempty"`
	Comm       string           `json:"comm,omitempty"` // the process's communicator pointer
	CUDADev    int64            `json:"cuda_dev"`
	NVMLDev    int64            `json:"nvml_dev"`
	BusID      string           `json:"bus_id,omitempty"`
	Transports map[string]int64 `json:"transports,omitempty"`
	Peers      []PeerSummary    `json:"peers,omitempty"`
}

// PeerSummary is how one rank reached one peer.
type PeerSummary struct {
	Peer        int64  `json:"peer"`
	Transport   string `json:"transport"`
	Connections int64  `json:"connections"`
	Channels    string `json:"channels"` // channel numbers below 64, as ranges: "0-7,16"
}

// ProcessSummary is one process (host:pid).
type ProcessSummary struct {
	Host         string            `json:"host"`
	PID          int64             `json:"pid"`
	FirstLine    Location          `json:"first_line"`
	NCCLVersions []string          `json:"nccl_versions,omitempty"`
	Net          string            `json:"net,omitempty"`
	NetEvidence  *Evidence         `json:"net_evidence,omitempty"`
	GDR          string            `json:"gdr,omitempty"` // "enabled", "disabled", "partly disabled"
	GDRReasons   []string          `json:"gdr_disabled_reasons,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Ranks        []int64           `json:"ranks,omitempty"`
}

// Location is where a line came from.
type Location struct {
	Source string `json:"source,omitempty"`
	Line   int64  `json:"line"`
}

// Finding is one kind of warning, error or note, with the lines it came
// from. Repeats of the same finding (the same WARN from 512 ranks) are
// counted, not listed.
type Finding struct {
	Severity string     `json:"severity"`
	Code     string     `json:"code"`
	Message  string     `json:"message"`
	Hint     string     `json:"hint,omitempty"`
	Where    string     `json:"where,omitempty"` // host:pid of the first occurrence
	Count    int64      `json:"count"`
	Lines    []Location `json:"lines"`
}
