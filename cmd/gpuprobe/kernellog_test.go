package main

import (
	"os"
	"strings"
	"testing"
)

// A saved journal from a real Xid 79 report is judged as the node it came
// from: fell off the bus, Xid 79 and 154, each counted, and gpu.xid fails.
// Issue 26: the fallen-off notice joins the two Xid 79 lines (one finding);
// it is the first loss's own notice, so two losses, not three (kernel log
// corpus: the driver prints both records for one loss).
func TestCheckKernelLog(t *testing.T) {
	const log = "testdata/kernel-log-rtx4080-xid79.txt"
	code, out, errOut := runCLI(t, "check", "--kernel-log", log, "--checks", "gpu.xid", "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (gpu.xid fails); stderr %s", code, errOut)
	}
	for _, want := range []string{`"status": "fail"`, "Xid 79: GPU has fallen off the bus (2 times)", "Xid 154", "GPU has fallen off the bus"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runStdin(t, string(data), "check", "--kernel-log", "-", "--checks", "gpu.xid")
	if code != 1 || !strings.Contains(out, "Xid 154") {
		t.Errorf("--kernel-log - (stdin): exit %d:\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "check", "--kernel-log", log, "--xid-window", "1h")
	if code != 2 || !strings.Contains(errOut, "drop --xid-window") {
		t.Errorf("--kernel-log with --xid-window: exit %d, stderr %q; want a usage error", code, errOut)
	}
	code, _, errOut = runCLI(t, "check", "--kernel-log", log, "--simulate", "dgx-h100")
	if code != 2 || !strings.Contains(errOut, "excludes --simulate") {
		t.Errorf("--kernel-log with --simulate: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "check", "--kernel-log", "/nonexistent/dmesg.txt")
	if code != 2 || !strings.Contains(errOut, "/nonexistent/dmesg.txt") {
		t.Errorf("missing --kernel-log: exit %d, stderr %q; want an error naming the file", code, errOut)
	}
}
