package kernel

import (
	"bytes"
	"encoding/json"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzReadLog feeds the saved-log reader (the path of check --kernel-log)
// arbitrary text, seeded with the real logs of the corpus: it never panics,
// joins only indented lines and a fallen-off notice's own NVRM: lines (a
// log without them is read one record a line),
// bounds what it joins, and reads the same events twice.
func FuzzReadLog(f *testing.F) {
	seeds, _ := filepath.Glob("../cmd/gpuprobe/testdata/kernel-logs/*.txt")
	seeds = append(seeds, "../cmd/gpuprobe/testdata/kernel-log-rtx4080-xid79.txt")
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`3,1311,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\x0aNVRM: fallen off the bus` + "\n SUBSYSTEM=pci\n"))
	f.Add([]byte("[x] a\n    b\n\n \n"))
	f.Add([]byte("3,901,21091872,-;NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:894)\n" +
		"[   32.920612] NVRM: rm_init_adapter failed for device bearing minor number 0\n"))
	f.Add([]byte("[    9.812401] NVRM: GPU 0000:1b:00.0: rm_init_adapter failed, device minor number 2\n" +
		"3,1207,9812433,-;NVRM: Device start failed for 0000:1b:00.0 (ret=-5)\n" +
		"[   33.100612] NVRM: rm_init_adapter failed for device bearing minor number 254\n"))
	f.Add([]byte("[   84.300488] NVRM: GPU6 _kgspLogRpcTimeout: ***** GSP Timeout *****\n" +
		"NVRM: _kgspLogXid119: ***** GSP Timeout *****\n"))
	// NVIDIA NVSentinel's parser test lines (testdata/nvsentinel).
	if b, err := os.ReadFile("testdata/nvsentinel/cases.json"); err == nil {
		var c struct{ Cases []struct{ Input string } }
		if json.Unmarshal(b, &c) == nil {
			for _, x := range c.Cases {
				f.Add([]byte(x.Input))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		a, err := readLog(open, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := readLog(open, time.Time{})
		if len(a.XIDs) != len(b.XIDs) || len(a.SXIDs) != len(b.SXIDs) {
			t.Fatalf("two reads differ: %d/%d XIDs, %d/%d SXids", len(a.XIDs), len(b.XIDs), len(a.SXIDs), len(b.SXIDs))
		}
		for _, ev := range a.XIDs {
			if ev.Code < 0 || ev.Code > 100000 || len(ev.Message) > maxRecord {
				t.Fatalf("event out of bounds: %+v", ev)
			}
		}
		if len(a.InitFailures) != len(b.InitFailures) {
			t.Fatalf("two reads differ: %d/%d init failures", len(a.InitFailures), len(b.InitFailures))
		}
		for _, ev := range a.InitFailures {
			if ev.Lines < 1 || len(ev.Message) > maxLine || ev.BusID != "" && !busid.Valid(ev.BusID) || len(ev.Minors) > maxMinors || ev.BusID != "" && len(ev.Minors) > 0 {
				t.Fatalf("init failure out of bounds: %+v", ev)
			}
		}
		if len(a.GSPTimeouts) != len(b.GSPTimeouts) || len(a.GSPTimeouts) > maxGSPTimeouts {
			t.Fatalf("GSP timeouts: %d/%d events", len(a.GSPTimeouts), len(b.GSPTimeouts))
		}
		for _, ev := range a.GSPTimeouts {
			if ev.Lines < 1 || ev.GPU != "" && !isGPUInstance(ev.GPU) {
				t.Fatalf("GSP timeout out of bounds: %+v", ev)
			}
		}
		lines := bytes.Split(data, []byte("\n"))
		recs := records(data)
		if len(recs) > len(lines) {
			t.Fatalf("%d records from %d lines", len(recs), len(lines))
		}
		for _, r := range recs {
			if bytes.IndexByte(r, '\n') >= 0 || len(r) > maxRecord+len(data) {
				t.Fatalf("record %q", r)
			}
		}
		// Only two kinds of line join the record before them: one indented
		// to its message's column, and the NVRM:-prefixed lines that go on
		// a fallen-off-the-bus notice (dmesg -t prints each with its own
		// prefix, issue 26). A log with neither is one record a line.
		joinable := bytes.Contains(data, []byte("NVRM: The NVIDIA GPU "))
		for _, l := range lines {
			joinable = joinable || len(l) > 0 && l[0] == ' '
		}
		if !joinable && len(recs) != len(lines) {
			t.Fatalf("no indented line and no fallen-off notice, yet %d records from %d lines", len(recs), len(lines))
		}
	})
}
