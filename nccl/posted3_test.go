package nccl

import "testing"

// TestTopoPathDumpNotANetwork: NCCL_DEBUG_SUBSYS=GRAPH path dumps start
// with a topology node, "NET/5 :GPU/0-4000 (6/10.0/SYS) …" (printNodePaths
// in src/graph/paths.cc: "%s/%lX :", later "%s/%lx-%lx :"). posted/157.log
// (nccl#1519) read net_selected "7" before 2026-11-28.
func TestTopoPathDumpNotANetwork(t *testing.T) {
	v := analyzeFile(t, "testdata/posted/157.log")
	if v.NetSelected != "unknown" || v.InterNode != "unknown" {
		t.Errorf("net_selected %q, inter_node %q", v.NetSelected, v.InterNode)
	}
	for name, want := range map[string]bool{
		"5": true, "0-5": true, "1-1a": true, "12": true, "0-4000": true,
		"IB": false, "Socket": false, "IBext_v8": false, "AWS Libfabric": false, "OFI": false,
		"FastSocket": false, "Plugin": false, "": false, "A": false, "5x": false,
	} {
		if got := topoNodeID([]byte(name)); got != want {
			t.Errorf("topoNodeID(%q) = %v", name, got)
		}
	}
}
