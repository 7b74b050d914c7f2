package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
)

// Issue 26: verdicts from NVIDIA's Xid Catalog
// (third_party/nvidia-xid-catalog/xids.txt) where the earlier table (a copy
// of NVSentinel's CSV) drained healthy nodes or missed codes.
func TestIssue26XIDVerdicts(t *testing.T) {
	for _, tc := range []struct {
		code     int
		want     XIDSeverity
		mnemonic string
	}{
		{108, XIDIgnored, "NVLINK_REMOTE_TRANSLATION_ERROR"}, // catalogue: IGNORE (CSV: report issue)
		{160, XIDIgnored, "CHANNEL_RETIREMENT_EVENT"},        // catalogue: IGNORE (CSV: RESTART_BM)
		{162, XIDIgnored, "PSHC_REENGAGED"},                  // power smoothing re-engaged, no action (CSV: RESET_GPU)
		{163, XIDWarning, "PSHC_DISENGAGED"},                 // "No GPU reset required"
		{164, XIDWarning, "PSHC_LOW_LIFETIME"},
		{165, XIDWarning, "PSHC_ZERO_LIFETIME"},
		{166, XIDWarning, "NVLINK_SECURE_CRYPTO_ERR"},
		{167, XIDCritical, "PCIE_FATAL_TIMEOUT"},
		{168, XIDWarning, "REDUCED_GPU_MEMORY_CAPACITY"},
		{169, XIDCritical, "SEC2_HALT_ERROR"},
		{170, XIDWarning, "NVLINK_SECURE_OTHER"},
		{171, XIDCritical, "UNCORRECTABLE_DRAM_ERROR"}, // detail of Xid 48
		{172, XIDCritical, "UNCORRECTABLE_SRAM_ERROR"},
	} {
		got := XIDLookup(tc.code, nil)
		if got.Severity != tc.want || !strings.Contains(got.Meaning, tc.mnemonic) || got.Remedy == "" {
			t.Errorf("Xid %d: %+v, want %s naming %s", tc.code, got, tc.want, tc.mnemonic)
		}
	}
	// Through gpu.xid: a kernel log with 108, 160 and 162 does not fail.
	n := healthy(func(n *state.Node) {
		n.Kernel = kernelState(86400, []state.XIDEvent{{Code: 108, BusID: "0000:10:00"}, {Code: 160, BusID: "0000:10:00"}, {Code: 162, BusID: "0000:11:00"}})
	})
	if r := checkXID(n, DefaultConfig()); r.Status == Fail {
		t.Errorf("108/160/162 must not fail gpu.xid: %+v", r)
	}
	n = healthy(func(n *state.Node) {
		n.Kernel = kernelState(86400, []state.XIDEvent{{Code: 167, BusID: "0000:10:00"}})
	})
	if r := checkXID(n, DefaultConfig()); r.Status != Fail || !strings.Contains(r.Summary, "167") {
		t.Errorf("167 PCIE_FATAL_TIMEOUT must fail gpu.xid: %+v", r)
	}
}

// The driver's "Non-fatal" decides: SXid 20009 (RX Short Error Rate,
// CHECK_LINK_MECHANICAL_CONNECTIONS/FATAL in NVSentinel's table) printed
// Non-fatal warns, it does not drain the node.
func TestIssue26SXidNonFatal(t *testing.T) {
	ev := state.SXIDEvent{Code: 20009, Device: "nvswitch0", BusID: "0000:06:00.0", Severity: "non-fatal", Message: "Link 04 RX Short Error Rate"}
	n := healthy(func(n *state.Node) { n.Kernel = &state.Kernel{SXIDs: []state.SXIDEvent{ev}} })
	if r := checkSXid(n, DefaultConfig()); r.Status != Warn || !strings.Contains(r.Summary, "20009") {
		t.Errorf("SXid 20009 printed Non-fatal: %+v, want a warning", r)
	}
}

// DCGM warns while Fabric Manager is still training the links.
func TestIssue26FabricInProgressWarns(t *testing.T) {
	n := healthy(func(n *state.Node) { n.NVML.GPUs[1].Fabric.State = "in_progress" })
	if r := checkFabric(n, DefaultConfig()); r.Status != Warn || !strings.Contains(r.Summary, "in progress") {
		t.Errorf("registration in progress: %+v, want a warning", r)
	}
}

// Issue 26: remedy texts in NVIDIA's words (the pinned catalogue,
// third_party/nvidia-xid-catalog/xids.txt, and nvml.h), not gpuprobe's
// guesses. Xid 110's text was fixed before this test; 45's and the row-remap
// failure's fail on the code before it.
func TestIssue26RemedyTexts(t *testing.T) {
	for _, tc := range []struct {
		code int
		want []string
	}{
		// "To recover, revert any recent system hardware modifications and
		// cold reset the system."
		{110, []string{"revert any recent hardware changes", "cold-reset the system"}},
		// "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)"
		{45, []string{"restart Fabric Manager", "Solo: RESTART_FM", "follow those"}},
	} {
		r := XIDLookup(tc.code, nil).Remedy
		for _, w := range tc.want {
			if !strings.Contains(r, w) {
				t.Errorf("Xid %d remedy %q, want %q in it", tc.code, r, w)
			}
		}
	}
	// Row remap failure: nvml.h's failureOccurred ("a row remapping ever
	// failed in the past") is not "no spare rows left"; NVIDIA's RMA
	// process needs its field diagnostics.
	n := healthy(func(n *state.Node) {
		n.NVML.GPUs[0].RemappedRows = &state.RemappedRows{Failure: true, Uncorrectable: 1}
	})
	r := checkRowRemap(n, DefaultConfig())
	fix := r.Remedy
	if r.Status != Fail || strings.Contains(fix, "no spare rows") || !strings.Contains(fix, "field diagnostics") {
		t.Errorf("row remap failure: %s, fix %q; want fail, NVIDIA's field diagnostics, no claim of spare rows", r.Status, fix)
	}
}
