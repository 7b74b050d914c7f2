package nccllog

import (
	"bytes"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	var a, b bytes.Buffer
	n, err := Write(&a, Options{Size: 1 << 20, Seed: 3, Ranks: 16, Hosts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(a.Len()) || n < 1<<20 || n > 2<<20 {
		t.Errorf("wrote %d bytes (buffer %d) for a 1 MiB request", n, a.Len())
	}
	if _, err := Write(&b, Options{Size: 1 << 20, Seed: 3, Ranks: 16, Hosts: 2}); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same seed must write the same log")
	}
	log := a.String()
	for _, want := range []string{"0: gpu-a000-node00:", "NCCL INFO NCCL version 2.23.4+cuda12.4", "[send] via NET/IB/", "/GDRDMA\n",
		"via P2P/CUMEM/read", " - Init COMPLETE", "NCCL WARN NET/IB : Got async event", "| loss "} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// TestInitMix: the connection-heavy shape is made of distinct connection
// lines, one fixed envelope per rank.
func TestInitMix(t *testing.T) {
	var a bytes.Buffer
	if _, err := Write(&a, Options{Size: 4 << 20, Seed: 1, Mix: "init"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(a.String(), "\n"), "\n")
	conns, distinct, envelopes := 0, map[string]bool{}, map[string]bool{}
	for _, l := range lines {
		env, msg, ok := strings.Cut(l, " NCCL INFO ")
		if !ok {
			t.Fatalf("not an NCCL line: %q", l)
		}
		envelopes[env] = true
		if strings.HasPrefix(msg, "Channel ") && strings.Contains(msg, " via ") {
			conns++
			distinct[l] = true
		}
	}
	if conns < len(lines)*9/10 || len(distinct) < conns*99/100 {
		t.Errorf("%d lines, %d connection lines, %d distinct", len(lines), conns, len(distinct))
	}
	if len(envelopes) != 512 {
		t.Errorf("%d envelopes, want one per rank", len(envelopes))
	}
	for _, want := range []string{"] [send] via NET/IB/", "/GDRDMA\n", " via P2P/IPC/read\n", "Trees [0] ", " - Init COMPLETE", "32 coll channels"} {
		if !strings.Contains(a.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{Ranks: 10, Hosts: 3}, {Transport: "carrier-pigeon"}, {Prefix: "tmux"}, {Mix: "bursty"}} {
		if _, err := Write(&bytes.Buffer{}, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, Options{Size: 1, Ranks: 8, Hosts: 2, Transport: "socket", Prefix: "none"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "gpu-a000-node0") || !strings.Contains(buf.String(), "NET/IB : No device found.") {
		t.Errorf("socket log without prefixes: %.200q", buf.String())
	}
}
