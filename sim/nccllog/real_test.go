package nccllog

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// realSample is a small corpus in the forms the envelope rename must
// handle: a launcher prefix, a WARN with a source tag, a torn line with two
// envelopes, a glued host, a bare version line, a foreign line.
var realSample = [][]byte{
	[]byte(`node1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:4242:4242 [0] NCCL INFO NET/IB : No device found.
NCCL version 2.7.8+cuda11.0
node1:4242:4250 [0] NCCL INFO Channel 00 : 0[1b000] -> 1[1c000] via P2P/IPC
node1:4242:4250 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]
node1:4242:4250 [0] NCCL INFO comm 0x7f00 rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE
`),
	[]byte(`[3] gpu-b:77:91 [-1] NCCL INFO Ring 00 : 3 -> 0 [send] via NET/Socket/0
adp-ugpu-b:78:78 [1] NCCL INFO gpu-b:79:80 [2] NCCL INFO Ring 01 : 1 -> 2 via P2P/IPC
2019-02-11 09:47:49,051 46393 INFO     Wrapping distributed manually
`),
}

func TestWriteReal(t *testing.T) {
	var a, b, c bytes.Buffer
	mix, err := WriteReal(&a, realSample, 64<<10, 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteReal(&b, realSample, 64<<10, 7); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same logs and seed must write the same bytes")
	}
	if _, err := WriteReal(&c, realSample, 64<<10, 8); err != nil || bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("another seed must interleave otherwise")
	}
	if mix.Bytes != int64(a.Len()) || mix.Bytes < 64<<10 || mix.Bytes > 64<<10+200 || !bytes.HasSuffix(a.Bytes(), []byte("\n")) {
		t.Errorf("wrote %d bytes (mix says %d) for 64 KiB", a.Len(), mix.Bytes)
	}
	lines := strings.Split(strings.TrimSuffix(a.String(), "\n"), "\n")
	if int64(len(lines)) != mix.Lines {
		t.Errorf("mix counts %d lines, the log has %d", mix.Lines, len(lines))
	}
	// 6 of the sample's 9 lines start with an NCCL INFO record, 2 of
	// those with a connection (the torn line's first record is not one).
	if mix.Info == 0 || mix.ConnShare() < 0.30 || mix.ConnShare() > 0.37 {
		t.Errorf("line mix %v: want a third connection lines", mix)
	}

	// Undo the rename: every line is a line of the sample, every replica
	// a distinct process, and replicas interleave.
	orig := map[string]bool{}
	for _, l := range realSample {
		for _, s := range strings.Split(strings.TrimSuffix(string(l), "\n"), "\n") {
			orig[s] = true
		}
	}
	env := regexp.MustCompile(`:([0-9]+)([0-9]{6}):([0-9]+) \[(-?[0-9]+)\]`)
	procs := map[string]map[string]bool{} // host:pid in the sample -> renamed ones
	prevReplica, switches := "", 0
	for _, l := range lines {
		replica := ""
		back := env.ReplaceAllStringFunc(l, func(m string) string {
			s := env.FindStringSubmatch(m)
			replica = s[2]
			return ":" + s[1] + ":" + s[3] + " [" + s[4] + "]"
		})
		if !orig[back] {
			t.Fatalf("line %q is not a sample line with its pids renamed (back: %q)", l, back)
		}
		for _, s := range env.FindAllStringSubmatch(l, -1) {
			pid := s[1]
			if procs[pid] == nil {
				procs[pid] = map[string]bool{}
			}
			procs[pid][s[1]+s[2]] = true
		}
		if replica != "" {
			if prevReplica != "" && replica != prevReplica {
				switches++
			}
			prevReplica = replica
		}
	}
	if len(procs["4242"]) < 2*RealReplicas {
		t.Errorf("pid 4242 renamed to %d distinct pids, want one per replica", len(procs["4242"]))
	}
	if switches < len(lines)/(2*RealMaxRun) {
		t.Errorf("only %d switches between replicas in %d lines: not interleaved", switches, len(lines))
	}
	if !strings.Contains(a.String(), "\nNCCL version 2.7.8+cuda11.0\n") || !strings.Contains(a.String(), "adp-ugpu-b:78") {
		t.Error("lines without an envelope, or the glued host, were changed")
	}
}

func TestRenameEnvelopes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"h:1:2 [0] NCCL INFO x", "h:1000042:2 [0] NCCL INFO x"},
		{"a:1:2 [3] NCCL INFO b:4:5 [-1] NCCL INFO y", "a:1000042:2 [3] NCCL INFO b:4000042:5 [-1] NCCL INFO y"},
		{"12:34:56 [x] not an envelope", "12:34:56 [x] not an envelope"},
		{"09:47:49,051 46393 INFO", "09:47:49,051 46393 INFO"},
		{"[job:5665 :0:5665] Caught signal", "[job:5665 :0:5665] Caught signal"},
	} {
		if got := string(RenameEnvelopes(nil, []byte(c.in), 42)); got != c.want {
			t.Errorf("RenameEnvelopes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
