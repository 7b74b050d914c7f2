package ncclras

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ras", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("testdata", "ras", name+".source")); err != nil {
		t.Fatalf("%s has no .source sidecar naming where it came from", name)
	}
	return b
}

func TestParseFixtures(t *testing.T) {
	for _, tc := range []struct {
		file                       string
		version                    string
		nodes, procs, gpus, groups int
		check                      func(t *testing.T, r *state.HangRAS)
	}{
		{file: "docs-healthy.txt", nodes: 4, procs: 32, gpus: 32, groups: 1, check: func(t *testing.T, r *state.HangRAS) {
			if g := r.Groups[0]; g.Comms != 8 || g.RanksPerComm != 4 || g.Status != "RUNNING" || g.Errors != "OK" {
				t.Errorf("group %+v", g)
			}
			if len(r.Comms)+len(r.Unresponsive)+len(r.Dead) != 0 {
				t.Errorf("a healthy report gave problems: %+v", r)
			}
		}},
		// A real answer (NCCL 2.28.9, one rank on one H100, run7-h100):
		// "Communicators... (0.000s)", and Errors and Warnings headings with
		// nothing under them.
		{file: "realgpu-h100-2.28.9-healthy.txt", version: "2.28.9", nodes: 1, procs: 1, gpus: 1, groups: 1, check: func(t *testing.T, r *state.HangRAS) {
			want := state.RASGroup{Group: 0, Comms: 1, Nodes: 1, RanksPerNode: "1", RanksPerComm: 1, RanksInGroup: 1, Status: "RUNNING", Errors: "OK"}
			if g := r.Groups[0]; g != want {
				t.Errorf("group %+v, want %+v", g, want)
			}
			if len(r.Comms)+len(r.Unresponsive)+len(r.Dead) != 0 || r.MissingProcesses+r.DeadProcesses+r.Timeouts != 0 {
				t.Errorf("a healthy report gave problems: %+v", r)
			}
			if r.Unparsed != 0 {
				t.Errorf("unparsed %d, want 0", r.Unparsed)
			}
		}},
		{file: "docs-mismatch.txt", nodes: 4, procs: 32, gpus: 32, groups: 1, check: func(t *testing.T, r *state.HangRAS) {
			if len(r.Comms) != 1 || r.Comms[0].Kind != "MISMATCH" || r.Comms[0].ID != "0-0" || r.Comms[0].Hash != "27a079b828ff1a75" {
				t.Fatalf("comms %+v", r.Comms)
			}
			s := r.Comms[0].Splits
			if len(s) != 1 || s[0].What != "collective operation counts" || len(s[0].Groups) != 2 {
				t.Fatalf("splits %+v", s)
			}
			a, b := s[0].Groups[0], s[0].Groups[1]
			if a.Ranks != 26 || a.Op != 6650 || len(a.Listed) != 0 || b.Ranks != 6 || b.Op != 6649 || len(b.Listed) != 6 {
				t.Errorf("groups %+v %+v", a, b)
			}
			if l := b.Listed[5]; l.Rank != 7 || l.GPU != "7" || l.PID != 483079 || l.Node != "172.16.64.210" {
				t.Errorf("last listed %+v", l)
			}
		}},
		{file: "docs-incomplete.txt", groups: 1, check: func(t *testing.T, r *state.HangRAS) {
			if r.MissingProcesses != 1 || len(r.Unresponsive) != 1 || r.Unresponsive[0] != (state.RASProcess{PID: 3487984, Node: "172.16.64.213", GPUs: "5"}) {
				t.Errorf("unresponsive %d %+v", r.MissingProcesses, r.Unresponsive)
			}
			if len(r.Comms) != 1 || r.Comms[0].MissingRanks != 1 || len(r.Comms[0].Missing) != 1 || r.Comms[0].Missing[0].Rank != 21 {
				t.Errorf("comms %+v", r.Comms)
			}
			if r.Timeouts != 2 || r.Groups[0].RanksPerNode != "7-8" || r.Groups[0].Errors != "INCOMPLETE" {
				t.Errorf("timeouts %d group %+v", r.Timeouts, r.Groups[0])
			}
		}},
		{file: "docs-dead.txt", check: func(t *testing.T, r *state.HangRAS) {
			if r.DeadProcesses != 1 || len(r.Dead) != 1 || r.Dead[0].PID != 3487984 || len(r.Unresponsive) != 0 {
				t.Errorf("dead %d %+v unresponsive %+v", r.DeadProcesses, r.Dead, r.Unresponsive)
			}
		}},
		{file: "issue-1911-mismatch.txt", version: "2.26.2", nodes: 4, procs: 32, gpus: 32, groups: 1, check: func(t *testing.T, r *state.HangRAS) {
			s := r.Comms[0].Splits[0]
			if s.What != "AllGather operation counts" || s.Groups[0].Op != 640 || s.Groups[0].Ranks != 30 || s.Groups[1].Op != 641 || len(s.Groups[1].Listed) != 2 {
				t.Errorf("split %+v", s)
			}
		}},
		{file: "issue-1762-incomplete.txt", version: "2.27.3", nodes: 2, procs: 10, gpus: 10, groups: 3, check: func(t *testing.T, r *state.HangRAS) {
			if len(r.Unresponsive) != 1 || r.Unresponsive[0].PID != 60004 {
				t.Errorf("unresponsive %+v", r.Unresponsive)
			}
			if len(r.Comms) != 2 || len(r.Comms[0].Missing) != 1 || r.Comms[0].Missing[0] != (state.RASRank{Rank: 1, GPU: "0", PID: 60004, Node: "10.4.109.13"}) {
				t.Errorf("comms %+v", r.Comms)
			}
			if r.Comms[1].MissingRanks != 255 || len(r.Comms[1].Missing) != 0 {
				t.Errorf("the cut rank line was kept: %+v", r.Comms[1])
			}
			if r.Unparsed != 1 {
				t.Errorf("unparsed %d, want 1 (the cut line)", r.Unparsed)
			}
			if r.Groups[2].Status != "NOCOMM" || r.Groups[2].Errors != "INCOMPLETE,MISMATCH" {
				t.Errorf("group 2 %+v", r.Groups[2])
			}
		}},
		{file: "source-formats.txt", version: "2.30.7", nodes: 64, procs: 512, gpus: 512, groups: 1, check: func(t *testing.T, r *state.HangRAS) {
			if len(r.Comms) != 3 {
				t.Fatalf("comms %+v", r.Comms)
			}
			if m := r.Comms[0].Missing; len(m) != 1 || m[0] != (state.RASRank{Rank: 512, GPU: "0", PID: 4121, Node: "10.0.8.64"}) {
				t.Errorf("missing %+v", m)
			}
			e := r.Comms[1]
			if e.Kind != "ERROR" || len(e.Splits) != 1 || e.Splits[0].What != "asynchronous errors" ||
				e.Splits[0].Groups[0].Value != "Remote process error" || e.Splits[0].Groups[0].Listed[0].GPU != "1 (NVML 3)" {
				t.Errorf("error block %+v", e)
			}
			mm := r.Comms[2].Splits
			if len(mm) != 2 || mm[0].Groups[1].Value != "ABORT" || mm[0].Groups[1].Listed[0].Rank != 44 {
				t.Errorf("status split %+v", mm)
			}
			ops := mm[1].Groups
			if len(ops) != 3 || ops[1].Op != 90209 || ops[1].Listed[0].Rank != 300 || ops[2].Op != 0 || ops[2].Listed[0].PID != 0 {
				t.Errorf("op split %+v", ops)
			}
			if r.Unparsed != 0 {
				t.Errorf("unparsed %d", r.Unparsed)
			}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := &state.HangRAS{}
			Parse(fixture(t, tc.file), r)
			if r.NCCLVersion != tc.version || r.Nodes != tc.nodes || r.Processes != tc.procs || r.GPUs != tc.gpus || len(r.Groups) != tc.groups {
				t.Fatalf("version %q nodes %d procs %d gpus %d groups %d", r.NCCLVersion, r.Nodes, r.Processes, r.GPUs, len(r.Groups))
			}
			tc.check(t, r)
		})
	}
}

func TestValidateAddr(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:28028":              "127.0.0.1:28028",
		"LOCALHOST:1":                  "127.0.0.1:1",
		":28028":                       "127.0.0.1:28028",
		"127.0.0.2:9000":               "127.0.0.2:9000",
		"[::1]:28028":                  "[::1]:28028",
		"[::ffff:127.0.0.1]:5":         "127.0.0.1:5",
		"10.0.0.1:28028":               "",
		"gpu064:28028":                 "",
		"localhost":                    "",
		"localhost:0":                  "",
		"localhost:65536":              "",
		"localhost:+80":                "",
		"[fe80::1%lo]:80":              "",
		"0.0.0.0:28028":                "",
		"127.0.0.1:28028\n":            "",
		strings.Repeat("1", 70) + ":1": "",
	} {
		got, err := ValidateAddr(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("ValidateAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// fakeRAS is a RAS port on loopback that speaks the client protocol as
// client_support.cc does and answers STATUS with serve. It stops with the
// test.
type fakeRAS struct {
	addr string
	seen []string
	mu   sync.Mutex
}

func startFake(t *testing.T, serve func(c net.Conn, cmd string)) *fakeRAS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRAS{addr: ln.Addr().String()}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				go func() { <-done; c.Close() }()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					cmd := strings.TrimSpace(line)
					f.mu.Lock()
					f.seen = append(f.seen, cmd)
					f.mu.Unlock()
					serve(c, cmd)
				}
			}()
		}
	}()
	return f
}

// replay answers as NCCL does and sends text for STATUS, then closes.
func replay(text []byte) func(c net.Conn, cmd string) {
	return func(c net.Conn, cmd string) {
		switch {
		case strings.HasPrefix(strings.ToUpper(cmd), "CLIENT PROTOCOL "):
			c.Write([]byte("SERVER PROTOCOL 2\n"))
		case strings.HasPrefix(strings.ToUpper(cmd), "TIMEOUT "):
			c.Write([]byte("OK\n"))
		case strings.EqualFold(cmd, "STATUS"), strings.EqualFold(cmd, "VERBOSE STATUS"):
			c.Write(text)
			c.Close()
		}
	}
}

func TestQueryReplaysRealReports(t *testing.T) {
	text := fixture(t, "docs-incomplete.txt")
	f := startFake(t, replay(text))
	r := Query(context.Background(), f.addr, Options{Timeout: 5 * time.Second, RASTimeout: 5 * time.Second, LocalAddrs: []string{"172.16.64.213"}})
	if r.Error != "" || !r.Answered || r.Protocol != 2 || r.Bytes != len(text) {
		t.Fatalf("%+v", r)
	}
	if len(r.Unresponsive) != 1 || !r.Unresponsive[0].Local {
		t.Errorf("the process on a local address is not marked local: %+v", r.Unresponsive)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.Join(f.seen, "|") != "CLIENT PROTOCOL 2|TIMEOUT 5|STATUS" {
		t.Errorf("the client sent %q, not NCCL's client.cc sequence", f.seen)
	}
}

func TestQueryRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	r := Query(context.Background(), addr, Options{Timeout: 2 * time.Second})
	if r.Answered || !strings.HasPrefix(r.Error, NotAvailable) {
		t.Errorf("refused: %+v", r)
	}
}

// The hostile ports: each must end within the deadline (plus scheduling
// slack), hold at most MaxReport of text, and say what went wrong.
func TestQueryHostile(t *testing.T) {
	const timeout = 700 * time.Millisecond
	huge := func(c net.Conn, cmd string) {
		switch {
		case strings.HasPrefix(cmd, "CLIENT"):
			c.Write([]byte("SERVER PROTOCOL 2\n"))
			return
		case strings.HasPrefix(cmd, "TIMEOUT"):
			c.Write([]byte("OK\n"))
			return
		}
		line := []byte("  Rank 1 -- GPU 0 managed by process 1 on node 10.0.0.1\n")
		for i := 0; i < (64<<20)/len(line); i++ {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	}
	trickle := func(c net.Conn, cmd string) {
		switch {
		case strings.HasPrefix(cmd, "CLIENT"):
			c.Write([]byte("SERVER PROTOCOL 2\n"))
			return
		case strings.HasPrefix(cmd, "TIMEOUT"):
			c.Write([]byte("OK\n"))
			return
		}
		for {
			if _, err := c.Write([]byte("J")); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, tc := range []struct {
		name    string
		serve   func(c net.Conn, cmd string)
		want    string
		answers bool
	}{
		{"huge", huge, "longer than", true},
		{"trickle", trickle, "no complete answer within", true},
		{"never answers", func(net.Conn, string) {}, "no complete answer within", false},
		{"not RAS", func(c net.Conn, _ string) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\x1b[31m")) }, "not SERVER PROTOCOL", false},
		{"endless handshake line", func(c net.Conn, _ string) {
			for i := 0; i < 1000; i++ {
				if _, err := c.Write([]byte(strings.Repeat("S", 1000))); err != nil {
					return
				}
			}
		}, "longer than 1024", false},
		{"closes at once", func(c net.Conn, _ string) { c.Close() }, "closed the connection", false},
		{"refuses TIMEOUT", func(c net.Conn, cmd string) {
			if strings.HasPrefix(cmd, "CLIENT") {
				c.Write([]byte("SERVER PROTOCOL 2\n"))
				return
			}
			c.Write([]byte("ERROR: Invalid timeout value\n"))
		}, "TIMEOUT: RAS answered", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFake(t, tc.serve)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			r := Query(context.Background(), f.addr, Options{Timeout: timeout, RASTimeout: time.Second})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if took > timeout+2*time.Second {
				t.Errorf("took %s with a %s deadline", took, timeout)
			}
			if !strings.Contains(r.Error, tc.want) || r.Answered != tc.answers {
				t.Errorf("error %q (answered %v), want %q", r.Error, r.Answered, tc.want)
			}
			if r.Bytes > MaxReport {
				t.Errorf("kept %d bytes", r.Bytes)
			}
			// What the client allocates must stay near the cap, not near what
			// a port sends (TestQueryHugeMemory measures the client alone).
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 && !raceEnabled {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
			if tc.name == "huge" && (!r.Truncated || len(r.Comms) != 0) {
				t.Errorf("huge: truncated %v comms %d", r.Truncated, len(r.Comms))
			}
		})
	}
}

// hugeServer, in a child process of the test binary (so that the parent's
// allocation count is the client's alone): a RAS port that answers the
// handshake and then sends 64 MiB of report lines.
func TestHelperHugeRAS(t *testing.T) {
	if os.Getenv("NCCLRAS_HUGE_SERVER") != "1" {
		t.Skip("a helper process for TestQueryHugeMemory")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }() // the parent went away
	line := []byte("  Rank 1 -- GPU 0 managed by process 1 on node 10.0.0.1\n")
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				cmd, err := br.ReadString('\n')
				if err != nil {
					return
				}
				switch {
				case strings.HasPrefix(cmd, "CLIENT"):
					c.Write([]byte("SERVER PROTOCOL 2\n"))
				case strings.HasPrefix(cmd, "TIMEOUT"):
					c.Write([]byte("OK\n"))
				default:
					for i := 0; i < (64<<20)/len(line); i++ {
						if _, err := c.Write(line); err != nil {
							return
						}
					}
					return
				}
			}
		}()
	}
}

// A port that sends 64 MiB: the client allocates a bounded amount (its
// buffer grows to the 1 MiB cap; the parse keeps a bounded state). The
// server runs in another process, so this process's allocations are the
// client's.
func TestQueryHugeMemory(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHugeRAS$")
	cmd.Env = append(os.Environ(), "NCCLRAS_HUGE_SERVER=1")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := Query(context.Background(), strings.TrimSpace(addr), Options{Timeout: 10 * time.Second, RASTimeout: time.Second})
	runtime.ReadMemStats(&after)
	if !r.Truncated || r.Bytes != MaxReport {
		t.Errorf("truncated %v, %d bytes: %s", r.Truncated, r.Bytes, r.Error)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 && !raceEnabled {
		t.Errorf("the client allocated %d MiB for a 1 MiB cap", alloc>>20)
	}
}

func TestQueryCancelled(t *testing.T) {
	f := startFake(t, func(net.Conn, string) {})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	r := Query(ctx, f.addr, Options{Timeout: time.Minute})
	if took := time.Since(start); took > 5*time.Second || r.Error == "" {
		t.Errorf("a cancelled run waited %s: %+v", took, r)
	}
}

func TestParseBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("Errors\n======\n\nINCOMPLETE\n")
	for i := 0; i < 5000; i++ {
		b.WriteString("  Process 1 on node 10.0.0.1 managing GPU 0\n")
	}
	b.WriteString("Warnings\n========\n\n")
	for i := 0; i < 500; i++ {
		b.WriteString("#0-0 (0000000000000001) MISMATCH\n  Communicator ranks have different status\n  2 ranks have status RUNNING\n")
		for k := 0; k < 100; k++ {
			b.WriteString("  Rank 1 -- GPU 0 managed by process 1 on node " + strings.Repeat("x", 200) + "\n")
		}
	}
	r := &state.HangRAS{}
	Parse([]byte(b.String()), r)
	if len(r.Unresponsive) != maxProcesses || len(r.Comms) != maxComms {
		t.Errorf("kept %d processes, %d comms", len(r.Unresponsive), len(r.Comms))
	}
	n := 0
	for _, c := range r.Comms {
		for _, s := range c.Splits {
			for _, g := range s.Groups {
				n += len(g.Listed)
				for _, l := range g.Listed {
					if len(l.Node) > maxField {
						t.Fatalf("node of %d bytes kept", len(l.Node))
					}
				}
			}
		}
	}
	if n > maxListed*4 {
		t.Errorf("kept %d listed ranks", n)
	}
}
