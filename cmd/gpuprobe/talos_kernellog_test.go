package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
)

// A talosctl dmesg log is dated by its bracketed RFC 3339 stamps, so
// gpu.xid's recurrence rule (xid.recurrence: 5 separate incidents within
// 24 h by default) can tell incidents apart by time on it. Five MMU faults
// (Xid 31, NVIDIA: RESTART_APP) from five processes on one GPU, in the line
// form of the ogkm446 fixture's Talos node: an hour apart they recur within
// the window and fail; eight hours apart no five fit in 24 h, and the GPU
// only warns. Undated (before nvl) a GPU's undated lines were one incident
// at most, and both logs warned alike: the rule could not tell them apart.
func TestTalosLogRecurrenceUsesItsTimes(t *testing.T) {
	start := time.Date(2026, 4, 22, 1, 0, 0, 123456789, time.UTC)
	for _, c := range []struct {
		gap    time.Duration
		want   check.Status
		also   string
		unlike []string
	}{
		{gap: time.Hour, want: check.Fail, also: "recurring: 5 separate incidents on this GPU alone within 4h0m0s (window 24h0m0s)", unlike: []string{"carry no time"}},
		{gap: 8 * time.Hour, want: check.Warn, unlike: []string{"recurring", "carry no time"}},
	} {
		t.Run(c.gap.String(), func(t *testing.T) {
			var b strings.Builder
			for i := range 5 {
				at := start.Add(time.Duration(i) * c.gap).Format(time.RFC3339Nano)
				fmt.Fprintf(&b, "192.168.11.119: kern: warning: [%s]: NVRM: Xid (PCI:0000:0b:00): 31, pid=%d, name=python3, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE\n", at, 1000+i)
			}
			path := filepath.Join(t.TempDir(), "talos-dmesg.txt")
			if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			_, out, errOut := runCLI(t, "check", "--kernel-log", path, "--checks", "gpu.xid", "--format", "json")
			doc := decode(t, out)
			text, status := "", check.Status("")
			for _, r := range doc.Checks {
				if r.ID == "gpu.xid" {
					status = r.Status
					text = r.Summary + "\n" + strings.Join(r.Details, "\n") + "\n" + r.Remedy
				}
			}
			if status != c.want {
				t.Errorf("gpu.xid %s, want %s\n%s%s", status, c.want, out, errOut)
			}
			if c.also != "" && !strings.Contains(text, c.also) {
				t.Errorf("report lacks %q:\n%s", c.also, text)
			}
			for _, u := range c.unlike {
				if strings.Contains(text, u) {
					t.Errorf("report holds %q:\n%s", u, text)
				}
			}
		})
	}
}
