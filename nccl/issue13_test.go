package nccl

import (
	"bytes"
	"strings"
	"testing"
)

// Issue 13: each class of confident wrong verdict, on the real line shapes
// in testdata/issue13 (sources in its README). Each case failed before the
// fix with the verdict noted.

func issue13(t *testing.T, name string) *Verdict {
	t.Helper()
	return analyzeFile(t, "testdata/issue13/"+name)
}

// A torn write glued "->" to a host name; before: "TCP sockets on 2 nodes",
// exit 1, for one container.
func TestTornRecordIsNotAHost(t *testing.T) {
	v := issue13(t, "torn-container.log")
	if v.Hosts != 1 || v.InterNode == InterSocket || len(v.Problems(ProblemOptions{})) != 0 {
		t.Errorf("hosts %d, inter_node %s, problems %+v: %s", v.Hosts, v.InterNode, v.Problems(ProblemOptions{}), v.Summary)
	}
	for _, p := range v.Processes {
		if strings.ContainsAny(p.Host, "->") {
			t.Errorf("host %q carries the torn record's text", p.Host)
		}
	}
}

// One pid under two host strings is one process; before: 2 hosts and
// "TCP sockets on 2 nodes".
func TestDamagedHostSamePID(t *testing.T) {
	v := issue13(t, "damaged-host.log")
	if v.Hosts != 1 || v.InterNode == InterSocket {
		t.Errorf("hosts %d, inter_node %s: %s", v.Hosts, v.InterNode, v.Summary)
	}
}

// A glued host that no other process explains is kept, but does not make
// a Socket run multi-node on its own.
func TestGluedHostAloneIsNotANode(t *testing.T) {
	v := analyzeString(t, lines(
		"a:1:1 [0] NCCL INFO Using network Socket",
		"a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/readb:2:2 [1] NCCL INFO Using network Socket",
	))
	if v.InterNode == InterSocket || !strings.Contains(v.Missing, "glued") {
		t.Errorf("inter_node %s, missing %q", v.InterNode, v.Missing)
	}
}

// A host glued to other text on a connection line of its own (the parser's
// connItem path) is glued-only until the same thread prints a line where
// it stands alone.
func TestGluedConnectionHost(t *testing.T) {
	head := []string{
		"a:1:1 [0] NCCL INFO Using network Socket",
		"x/b:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC/read",
	}
	v := analyzeString(t, lines(head...))
	if !strings.Contains(v.Missing, "glued") {
		t.Errorf("b seen only glued: missing %q, processes %+v", v.Missing, v.Processes)
	}
	v = analyzeString(t, lines(append(head, "b:2:2 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/IPC/read")...))
	if strings.Contains(v.Missing, "glued") || v.Hosts != 2 {
		t.Errorf("b seen alone too: hosts %d, missing %q", v.Hosts, v.Missing)
	}
}

// Every record from one host, but a tree with two children: more than one
// node. Before: "none".
func TestTreesShowAnotherNode(t *testing.T) {
	v := issue13(t, "trees-one-host.log")
	if v.InterNode == InterNone || v.NNodes == nil || *v.NNodes < 2 || !strings.Contains(v.Missing, "one node's lines") {
		t.Errorf("inter_node %s, nnodes %v (%s), missing %q", v.InterNode, v.NNodes, v.NNodesFrom, v.Missing)
	}
	for _, tc := range []struct {
		m    string
		many bool
	}{
		{"Trees [0] 1/8/-1->0->-1 [1] 1/-1/-1->0->8", true},
		{"Trees [0] 17/24/-1->16->0 [1] 17/-1/-1->16->9", true},
		{"Trees [0] 153/146/162->155->154|154->155->153/146/162", true},
		{"Trees [0] 26->25->-1/-1/-1", false},
		{"Trees [0] 1/-1/-1->0->7|7->0->1/-1/-1 [1] 1/-1/-1->0->-1", false},
		{"Trees [0] -1/-1/-1->1->0 [1] 0/-1/-1->1->-1", false},
	} {
		if got := treeBranches([]byte(tc.m)); got != tc.many {
			t.Errorf("%q: two children %v, want %v", tc.m, got, tc.many)
		}
	}
}

// One pid driving all 8 ranks (nccl-tests -g 8) is one node, and with
// libibverbs missing NCCL 2.4 selected its Socket module. Before:
// "Inter-node traffic used TCP sockets", tcp_fallback from the Ring lines.
func TestOneProcessIsOneNode(t *testing.T) {
	v := issue13(t, "one-process-2.4.log")
	if v.InterNode != InterNone || !v.TCPFallback || v.NetSelected != "Socket" || len(v.Problems(ProblemOptions{})) != 0 {
		t.Errorf("inter_node %s, tcp_fallback %v, net %s, problems %+v: %s", v.InterNode, v.TCPFallback, v.NetSelected, v.Problems(ProblemOptions{}), v.Summary)
	}
	if !hasCode(v.Warnings, "net_on_one_node") {
		t.Errorf("NET between GPUs of one process should be warned: %+v", v.Warnings)
	}
	// Without the Ring lines it is the libibverbs line that shows Socket.
	v = analyzeString(t, lines(
		"ZBOX-EN1080K:10379:10379 [0] misc/ibvwrap.cu:63 NCCL WARN Failed to open libibverbs.so[.1]",
		"ZBOX-EN1080K:10379:10379 [0] NCCL INFO NET/Socket : Using [0]enp5s0:192.168.1.10<0>",
	))
	if !v.TCPFallback || v.NetSelected != "Socket" || v.TCPFallbackReason == nil || v.TCPFallbackReason.Line != 1 {
		t.Errorf("tcp_fallback %v (%+v), net %s", v.TCPFallback, v.TCPFallbackReason, v.NetSelected)
	}
}

// NCCL 2.2 printed "INFO" without "NCCL". Before: zero records, "run with
// NCCL_DEBUG=INFO".
func TestNCCL22Lines(t *testing.T) {
	v := issue13(t, "nccl-2.2.log")
	if v.Stats.Records != 12 || v.NetSelected != "IB" || v.Hosts != 4 || v.Format != "2.2" ||
		strings.Contains(v.Missing, "NCCL_DEBUG=INFO") || !strings.Contains(v.Summary, "NCCL 2.2") {
		t.Errorf("records %d, net %s, hosts %d, format %q, summary %s", v.Stats.Records, v.NetSelected, v.Hosts, v.Format, v.Summary)
	}
	v = issue13(t, "nccl-2.2-socket.log")
	if !v.TCPFallback || v.NetSelected != "Socket" || !hasCode(v.Warnings, "no_ibverbs") {
		t.Errorf("tcp_fallback %v, net %s, warnings %+v", v.TCPFallback, v.NetSelected, v.Warnings)
	}
	// A foreign INFO line is not a record.
	if recs := ParseLine([]byte("2025-11-12 20:41:43,851 - INFO - starting")); len(recs) != 0 {
		t.Errorf("foreign INFO line parsed: %+v", recs)
	}
}

// A launcher's [pod] tag names the host NCCL printed empty. Before: "all 2
// ranks print from one host ()" and "none".
func TestPodPrefixEmptyHost(t *testing.T) {
	v := issue13(t, "pod-prefix.log")
	if v.Hosts != 2 || v.InterNode == InterNone {
		t.Errorf("hosts %d, inter_node %s: %s", v.Hosts, v.InterNode, v.Summary)
	}
	for _, p := range v.Processes {
		if p.Host != "trainer-node-0-0" && p.Host != "trainer-node-0-1" {
			t.Errorf("host %q", p.Host)
		}
	}
	// An empty host name on its own is not "one host".
	v = analyzeString(t, lines(
		":22901:22901 [0] NCCL INFO comm 0x8d57d40 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 7000 - Init COMPLETE",
		":22901:22901 [0] NCCL INFO comm 0x8d57d41 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 8000 - Init COMPLETE",
	))
	if v.InterNode == InterNone || strings.Contains(v.Summary, "()") {
		t.Errorf("empty host: %s", v.Summary)
	}
	// Rank and job-step tags do not name a host.
	for _, l := range []string{"[rank3]::1:2 [0] NCCL INFO x", "[1,0]<stdout>::1:2 [0] NCCL INFO x", "[155] :1:2 [0] NCCL INFO x"} {
		if r := ParseLine([]byte(l)); len(r) != 1 || r[0].Host != "" {
			t.Errorf("%q: %+v", l, r)
		}
	}
}

// ANSI colour codes and their residue stay out of names. Before:
// net_selected "\x1b[1mIB\x1b[0m,IB" and 3 hosts for 2.
func TestANSIResidue(t *testing.T) {
	v := issue13(t, "ansi.log")
	if v.NetSelected != "IB" || v.Hosts != 2 || v.InterNode != InterGDRDMA {
		t.Errorf("net %q, hosts %d, inter_node %s", v.NetSelected, v.Hosts, v.InterNode)
	}
	for _, p := range v.Processes {
		if strings.ContainsAny(p.Host, "[\x1b") {
			t.Errorf("host %q", p.Host)
		}
	}
	for _, c := range v.Communicators {
		for k := range c.Inter {
			if strings.Contains(k, "comm") {
				t.Errorf("transport name %q carries the communicator", k)
			}
		}
	}
}

// The text report ends with one newline, whatever the verdict.
func TestTextEndsWithNewline(t *testing.T) {
	for _, name := range []string{"torn-container.log", "nccl-2.2.log", "trees-one-host.log"} {
		var buf bytes.Buffer
		if err := issue13(t, name).WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		if out := buf.String(); !strings.HasSuffix(out, ".\n") || strings.HasSuffix(out, "\n\n") {
			t.Errorf("%s: text ends %q", name, out[max(0, len(out)-20):])
		}
	}
}
