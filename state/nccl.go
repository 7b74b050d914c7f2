package state

import "encoding/json"

// NCCLLog is what the NCCL collector read from the logs given with
// --nccl-log: the facts the parser found, no verdict. check/ncclverdict
// judges them, so a replayed snapshot is judged by today's rules.
type NCCLLog struct {
	Files []string   `json:"files"`
	Error string     `json:"error,omitempty"`
	Facts *NCCLFacts `json:"facts,omitempty"`
	// LegacyVerdict is the "verdict" object snapshots written before the
	// facts existed carried. It is kept only so that such a snapshot still
	// loads; nccl.transport asks for the log to be collected again.
	LegacyVerdict json.RawMessage `json:"verdict,omitempty"`
}

// NCCL network evidence strengths (NCCLNetEvidence.Strength): how directly a
// line shows the network module NCCL uses.
const (
	NCCLStrengthPlugin  = 1 // a plugin was loaded (it may still find no device)
	NCCLStrengthInit    = 2 // init lines that only the selected module prints
	NCCLStrengthDecided = 3 // "Using network X" or a connection line via NET/X
)

// NCCLFacts is everything the NCCL log parser keeps: per process, per
// communicator instance and per rank, plus counts over the whole log. Every
// list is bounded by the parser's caps (Stats.Untracked counts what did not
// fit).
type NCCLFacts struct {
	Stats NCCLStats `json:"stats"`
	// Versions are the NCCL versions printed, in order of appearance.
	Versions []string `json:"nccl_versions"`
	// Format is "2.2" when the log's records are NCCL 2.2's (no "NCCL" word
	// in the envelope), else empty.
	Format  string `json:"format,omitempty"`
	CollNet bool   `json:"collnet,omitempty"`
	NVLS    bool   `json:"nvls,omitempty"`
	// Env holds every value seen for each NCCL_* setting NCCL echoed.
	Env map[string][]string `json:"env,omitempty"`
	// NRanks are the distinct communicator sizes announced, ascending.
	NRanks []int64 `json:"nranks_announced,omitempty"`
	// NRanksListed is the longest ring order listing ("Channel 00/08 :
	// 0 5 4 …"): every rank of a communicator, so a lower bound of its
	// size; 0 when none.
	NRanksListed int64 `json:"nranks_listed,omitempty"`
	// NetPlugin is the first line that shows a network plugin or library
	// outside NCCL's core loaded (a net plugin's symbols looked up, a
	// plugin loaded, libfabric talking): the job may span nodes even when
	// one host prints.
	NetPlugin *NCCLLine `json:"net_plugin,omitempty"`
	// NNodes is the largest "nNodes" NCCL printed; 0 when none.
	NNodes int64 `json:"nnodes,omitempty"`
	// MultiNode is a line that shows more than one node whatever the host
	// names say: a Trees line where a rank has two children (the tree is a
	// chain inside a node), or "localRanks L" smaller than "nRanks N".
	MultiNode *NCCLLine `json:"multi_node,omitempty"`
	// MaxRank is the largest rank any line named; -1 when none.
	MaxRank int64 `json:"max_rank"`
	// Ranks are the ranks seen on connection and communicator lines.
	Ranks []NCCLRange `json:"ranks,omitempty"`
	// Connections counts connection lines by transport class (P2P, SHM,
	// NET, COLLNET, other).
	Connections map[string]int64 `json:"connections,omitempty"`
	// NetConnections counts NET connection lines by network class and
	// GDR, with the first of each.
	NetConnections []NCCLNetConns `json:"net_connections,omitempty"`
	// NetNames counts NET connection lines by module name as printed.
	NetNames        map[string]int64 `json:"net_names,omitempty"`
	Processes       []NCCLProcess    `json:"processes"`
	Findings        []NCCLFinding    `json:"findings"`
	FindingsDropped int64            `json:"findings_dropped,omitempty"`
	// Run is set when the log came from `gpuprobe nccl run`.
	Run *NCCLRun `json:"run,omitempty"`
}

// NCCLStats describes what the parser read.
type NCCLStats struct {
	Inputs         []string `json:"inputs"`
	Bytes          int64    `json:"bytes"`
	Lines          int64    `json:"lines"`
	Records        int64    `json:"records"`
	Duplicates     int64    `json:"duplicates_dropped"`
	TruncatedLines int64    `json:"truncated_lines"`
	MaxLineBytes   int      `json:"max_line_bytes,omitempty"` // where over-long lines were cut
	ForeignLines   int64    `json:"foreign_lines"`
	Processes      int      `json:"processes"`
	Threads        int      `json:"threads"`
	// Untracked counts records that went past a memory cap: processes past
	// the process cap share one "(more processes)" entry, communicators
	// past theirs are counted only.
	Untracked       int64 `json:"untracked_records,omitempty"`
	FindingsDropped int64 `json:"findings_dropped,omitempty"`
	// ProcessCap is the number of processes tracked one by one; set when
	// the log had more.
	ProcessCap int `json:"process_cap,omitempty"`
	// OrphanCap is the number of ranks whose connection lines are kept
	// while no communicator line has claimed them, over all processes; set
	// when the log had more (their lines past it are only counted).
	OrphanCap int `json:"orphan_cap,omitempty"`
}

// NCCLLoc is a line: an index into Stats.Inputs and a 1-based line number.
type NCCLLoc struct {
	Input int32 `json:"input"`
	Line  int64 `json:"line"`
}

// NCCLLine is a line with its (clipped) text.
type NCCLLine struct {
	NCCLLoc
	Text string `json:"text"`
}

// NCCLRange is an inclusive range of ranks.
type NCCLRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// NCCLNetConns counts NET connection lines of one network class (IB,
// Socket, OFI, FastSocket, other) with or without /GDRDMA.
type NCCLNetConns struct {
	Class string   `json:"class"`
	GDR   bool     `json:"gdr"`
	Lines int64    `json:"lines"`
	First NCCLLine `json:"first"`
}

// NCCLNetEvidence is the strongest line that shows a process using a
// network class.
type NCCLNetEvidence struct {
	Class    string `json:"class"`
	Strength int    `json:"strength"` // NCCLStrength*
	NCCLLine
}

// NCCLProcess is one host:pid.
type NCCLProcess struct {
	Host string `json:"host"`
	PID  int64  `json:"pid"`
	// Kind is empty for a host:pid process, "no_envelope" for the records
	// that had no host:pid:tid, "overflow" for processes past the cap.
	Kind  string  `json:"kind,omitempty"`
	First NCCLLoc `json:"first_line"`
	// GluedOnly: every record of this process had its host name glued to
	// the text of a torn record before it, so the host name may be wrong.
	GluedOnly bool              `json:"glued_only,omitempty"`
	Net       []NCCLNetEvidence `json:"net,omitempty"`
	// NetName is the module name behind the FastSocket and other classes.
	NetName string `json:"net_name,omitempty"`
	// NoIB: "NET/IB : No device found." or libibverbs could not be opened.
	NoIB *NCCLLine `json:"no_ib,omitempty"`
	// IBDisabled: NCCL_IB_DISABLE=1.
	IBDisabled *NCCLLine `json:"ib_disabled,omitempty"`
	// SocketDevices is NCCL's "NET/Socket : Using [0]…" line.
	SocketDevices *NCCLLine `json:"socket_devices,omitempty"`
	HCAs          int       `json:"hcas,omitempty"`
	GDREnabled    bool      `json:"gdr_enabled,omitempty"`
	// GDRDisabledHCAs has bit i set for HCA i (< 64) NCCL reported GPU
	// Direct RDMA disabled for; GDRDisabledLines counts those lines and
	// GDRDisabledWhy lists their finding codes once each.
	GDRDisabledHCAs  uint64   `json:"gdr_disabled_hcas,omitempty"`
	GDRDisabledLines int      `json:"gdr_disabled_lines,omitempty"`
	GDRDisabledWhy   []string `json:"gdr_disabled_why,omitempty"`
	// LoopbackIf / OtherIf: a bootstrap or socket interface list that is
	// all loopback / has a real interface.
	LoopbackIf bool              `json:"loopback_if,omitempty"`
	OtherIf    bool              `json:"other_if,omitempty"`
	Versions   []string          `json:"nccl_versions,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Comms      []NCCLComm        `json:"comms,omitempty"`
	// Orphans are connection lines no communicator line claimed, by the
	// printing rank.
	Orphans []NCCLRankConns `json:"orphans,omitempty"`
	// RingListing is the longest ring order listing ("Channel 00/02 :
	// 0   1") this process printed. NCCL prints it from rank 0 only
	// (src/graph/rings.cc), so the process holds rank 0 of a communicator
	// of that size; RingListingDev is the printing thread's [dev].
	RingListing    int64 `json:"ring_listing,omitempty"`
	RingListingDev int64 `json:"ring_listing_dev,omitempty"`
	// TreeRanks are the ranks this process's Trees lines name as their
	// printer ("Trees [0] 1/-1/-1->0->-1" is rank 0's), with the printing
	// thread's [dev], in rank order.
	TreeRanks []NCCLRankDev `json:"tree_ranks,omitempty"`
}

// NCCLRankDev is a rank and the CUDA device ([dev]) of the thread that
// printed as it.
type NCCLRankDev struct {
	Rank int64 `json:"rank"`
	Dev  int64 `json:"dev"`
}

// NCCLComm is one communicator instance: a communicator as one process
// holds it.
type NCCLComm struct {
	Ptr uint64 `json:"ptr"`
	// CommID is NCCL >= 2.18's communicator id ("0x…"); empty before.
	CommID     string        `json:"comm_id,omitempty"`
	Rank       int64         `json:"rank"` // -1 when unknown, as the counts below
	NRanks     int64         `json:"nranks"`
	NNodes     int64         `json:"nnodes"`
	LocalRanks int64         `json:"local_ranks"`
	CUDADev    int64         `json:"cuda_dev"`
	NVMLDev    int64         `json:"nvml_dev"`
	BusID      string        `json:"bus_id,omitempty"`
	API        string        `json:"api,omitempty"`
	Started    bool          `json:"init_start,omitempty"`
	Completed  bool          `json:"init_complete,omitempty"`
	First      NCCLLoc       `json:"first_line"`
	Conns      NCCLRankConns `json:"conns"`
}

// NCCLRankConns is what one rank's connection lines said.
type NCCLRankConns struct {
	Rank       int64                `json:"rank"`
	Lines      int64                `json:"lines"`
	Net        int64                `json:"net"` // NET lines
	GDR        int64                `json:"gdr"` // NET lines with /GDRDMA
	Transports []NCCLTransportCount `json:"transports,omitempty"`
	Peers      []NCCLPeer           `json:"peers,omitempty"`
}

// NCCLTransportCount counts a rank's connection lines over one transport.
type NCCLTransportCount struct {
	Name  string `json:"name"`  // "NET/IB/GDRDMA", "P2P/IPC/read"
	Class string `json:"class"` // P2P, SHM, NET, COLLNET, other
	Lines int64  `json:"lines"`
}

// NCCLPeer is how a rank reached one peer.
type NCCLPeer struct {
	Peer      int64  `json:"peer"`
	Transport string `json:"transport"`
	Lines     int64  `json:"lines"`
	Channels  uint64 `json:"channels"` // bit c: channel c (< 64)
}

// NCCLFinding is one kind of WARN, error trace or foreign line the parser
// recognised, counted. Code names what it is; check/ncclverdict decides its
// severity and remedy.
type NCCLFinding struct {
	Code    string    `json:"code"`
	Key     string    `json:"key,omitempty"`
	Message string    `json:"message"`
	Where   string    `json:"where,omitempty"` // host:pid of the first occurrence
	Count   int64     `json:"count"`
	Lines   []NCCLLoc `json:"lines"`
}

// NCCLRun is what `gpuprobe nccl run` knows about the command it ran.
type NCCLRun struct {
	// UserEnv holds NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE as the
	// user set them (absent: gpuprobe set its default or nothing).
	UserEnv map[string]string `json:"user_env,omitempty"`
	// OutputErrors maps "stdout"/"stderr" to the error that stopped passing
	// the command's output on.
	OutputErrors map[string]string `json:"output_errors,omitempty"`
}
