package nccl

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds are lines that sit on the parser's edges: every envelope form,
// damaged ones, and records cut at awkward places.
var fuzzSeeds = []string{
	"",
	"NCCL ",
	"NCCL INFO",
	"NCCL WARN",
	"NCCL version ",
	":1:2 [3] NCCL INFO ",
	"h:1:2 [ NCCL INFO x",
	"h:1:2 [] NCCL INFO x",
	"h::2 [0] NCCL INFO x",
	"h:1:2 [0] ] NCCL WARN x",
	"a:1:2 [0] NCCL INFO b:3:4 [1] NCCL INFO c:5:6 [2] NCCL INFO Ring 04 : 7[7] -> 3[3] via P2P/IPC",
	"a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [receive] via",
	"a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/",
	"a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/9999999999999999999999/GDRDMA(PCI)/Shared",
	"a:1:2 [0] NCCL INFO comm 0xffffffffffffffffff rank -1 nranks 99999999999999999999 commId 0x",
	"a:1:2 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE [RO]; OOB",
	"a:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 99 '",
	"a:1:2 [0] NCCL INFO proxy.cc:878 -> 6 [",
	"  | 2024-12-04T05:27:39.074Zalgo-1:18057:18130 [0] NCCL INFO Using network AWS Libfabric | algo-1:18057:18130 [0] NCCL INFO Using network AWS Libfabric",
	"[1,0]<stdout>:NCCL version 2.5.6+cuda10.2",
	"\r\r\rh:1:2 [0] NCCL INFO Using network IB\r 45%|####",
	"x:1:2 [0] z.c:1 (f) NCCL WARN NET/IB : Got completion from peer 1.2.3.4<5> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
}

func addCorpusSeeds(f *testing.F, each func(line string)) {
	logs, _ := filepath.Glob("testdata/logs/*.log")
	more, _ := filepath.Glob("testdata/issue13/*.log")
	logs = append(logs, more...)
	for _, path := range logs {
		raw, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(raw), "\n") {
			each(l)
		}
	}
	for _, s := range fuzzSeeds {
		each(s)
	}
}

// FuzzParseLine: no line may panic the parser, and what it returns must
// come from the line.
func FuzzParseLine(f *testing.F) {
	addCorpusSeeds(f, func(l string) { f.Add([]byte(l)) })
	f.Fuzz(func(t *testing.T, line []byte) {
		recs := ParseLine(line)
		// NCCL's marker, or NCCL 2.2's bare INFO/WARN (one per line).
		n := bytes.Count(line, markNCCL) + min(1, bytes.Count(line, []byte(" INFO "))+bytes.Count(line, []byte(" WARN ")))
		if len(recs) > n {
			t.Fatalf("%d records from %d markers", len(recs), n)
		}
		for _, r := range recs {
			if !bytes.Contains(line, []byte(r.Message)) || !bytes.Contains(line, []byte(r.Host)) || !bytes.Contains(line, []byte(r.Source)) {
				t.Fatalf("record %+v has text that is not in the line", r)
			}
			if r.Kind >= numKinds || r.Level == "" {
				t.Fatalf("record %+v", r)
			}
		}
	})
}

// FuzzAnalyze: no input may panic the analyzer; the parallel reader and
// the live stream must agree; the line count must be exact.
func FuzzAnalyze(f *testing.F) {
	for _, path := range []string{"042", "044", "055", "015", "033"} {
		raw, err := os.ReadFile("testdata/logs/" + path + ".log")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(strings.Join(fuzzSeeds, "\n")))
	if more, _ := filepath.Glob("testdata/issue13/*.log"); len(more) > 0 {
		for _, path := range more {
			raw, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw)
		}
	}
	f.Add([]byte(gdrLog))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := judge(context.Background(), Input{Name: "fuzz", Reader: bytes.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		wantLines := int64(bytes.Count(data, []byte("\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			wantLines++
		}
		if v.Stats.Lines != wantLines || v.Stats.Bytes != int64(len(data)) {
			t.Fatalf("stats %+v for %d lines, %d bytes", v.Stats, wantLines, len(data))
		}
		switch v.InterNode {
		case InterGDRDMA, InterIB, InterSocket, InterOFI, InterNone, InterUnknown:
		default:
			t.Fatalf("inter_node %q", v.InterNode)
		}
		if err := v.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := v.WriteJSON(io.Discard); err != nil {
			t.Fatal(err)
		}
		a := NewAnalyzer()
		s := a.Stream("fuzz")
		step := 1 + len(data)%13
		for i := 0; i < len(data); i += step {
			s.Write(data[i:min(i+step, len(data))])
		}
		s.Close()
		want := comparable(t, v)
		if got := comparable(t, a.Verdict()); got != want {
			t.Fatalf("stream and reader disagree:\n got %s\nwant %s", got, want)
		}
		// The file reader with tiny blocks: lines span many blocks.
		if len(data) > 0 {
			a = NewAnalyzer()
			src := a.source("fuzz")
			if err := a.readAtFile(context.Background(), src, bytes.NewReader(data), int64(len(data)), int64(1+len(data)%37)); err != nil {
				t.Fatal(err)
			}
			if got := comparable(t, a.Verdict()); got != want {
				t.Fatalf("block reader and reader disagree:\n got %s\nwant %s", got, want)
			}
			a = NewAnalyzer()
			if err := a.readMapped(context.Background(), a.source("fuzz"), &mapping{data: data}, int64(1+len(data)%41)); err != nil {
				t.Fatal(err)
			}
			if got := comparable(t, a.Verdict()); got != want {
				t.Fatalf("mapped block reader and reader disagree:\n got %s\nwant %s", got, want)
			}
		}
	})
}
