package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/check"
)

// Issue 26's "Done when", through the path a support ticket's log takes
// (`check --kernel-log`: the kernel reader, then gpu.xid and fabric.sxid):
// a log with each of Xid 108, 160, 162, a non-fatal 149 and a non-fatal 145
// subcode passes or warns; a fatal 144-150 subcode fails with NVIDIA's
// action; SXid 20009 printed Non-fatal does not fail.
//
// Where the lines come from:
//   - 145 RLW_RXPIPE: the line issue 26 quotes from a B200 log (V1 layout).
//   - 145 RLW_CTRL, 145 RLW_REMAP Fatal, 149 NETIR_BER_EVENT: gpud's NVLink 5
//     parser cases (leptonai/gpud, components/accelerator/nvidia/xid,
//     Test_NVLinkLogCoverage), log lines only, V2 (>=R575) layout.
//   - SXid 20009: the line issue 26 quotes (gpud's SXid parser case).
//   - 108, 160, 162: no posted log line was found; each is written in the
//     driver's Xid format ("NVRM: Xid (PCI:dddd:bb:dd): CODE, pid=..,
//     name=.., text") with the catalogue's description as its text. Their
//     verdict comes from the code alone (NVIDIA's catalogue: IGNORE for 108
//     and 160, no action for 162).
//
// Each log opens with the driver's load banner where the layout matters,
// as a real boot log does.
func TestIssue26KernelLogDoneWhen(t *testing.T) {
	const r575 = "[    9.871234] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  575.51.03  Release Build\n"
	for _, tc := range []struct {
		name string
		log  string
		xid  check.Status // gpu.xid
		sxid check.Status // fabric.sxid
		has  []string     // text the two results must hold
	}{
		{"Xid 108 NVLINK_REMOTE_TRANSLATION_ERROR",
			r575 + "[ 5120.004411] NVRM: Xid (PCI:0000:18:00): 108, pid=2201, name=python3, NVLink remote translation error\n",
			check.Pass, check.Pass, []string{"Xid 108", "IGNORE"}},
		{"Xid 160 CHANNEL_RETIREMENT_EVENT",
			r575 + "[ 5120.004411] NVRM: Xid (PCI:0000:18:00): 160, pid=2201, name=python3, Channel Retirement Event\n",
			check.Pass, check.Pass, []string{"Xid 160", "IGNORE"}},
		{"Xid 162 PSHC_REENGAGED",
			r575 + "[ 5120.004411] NVRM: Xid (PCI:0000:18:00): 162, Power Smoothing HW Circuitry capability reengaged\n",
			check.Pass, check.Pass, []string{"Xid 162"}},
		{"Xid 149 NETIR_BER_EVENT non-fatal",
			r575 + "[ 5120.004411] NVRM: Xid (PCI:0000:04:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 00 (0x00000013 0x00000000 0x00000000 0x00000000)\n",
			check.Pass, check.Pass, []string{"Xid 149", "IGNORE"}},
		{"Xid 145 RLW_CTRL non-fatal",
			r575 + "[ 5120.004411] NVRM: Xid (PCI:0000:04:00): 145, RLW_CTRL Nonfatal XC0 i0 Link 00 (0x00000003 0x80000000 0x00000000 0x00000000)\n",
			check.Pass, check.Pass, []string{"Xid 145", "IGNORE"}},
		{"Xid 145 RLW_RXPIPE non-fatal (issue 26's line, no banner)",
			"[ 7311.558190] NVRM: Xid (PCI:0000:03:00): 145, pid=1843, name=python3, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n",
			check.Pass, check.Pass, []string{"Xid 145", "IGNORE"}},
		{"Xid 145 RLW_REMAP fatal",
			r575 + "[ 5120.004411] NVRM: Xid (PCI:0000:04:00): 145, RLW_REMAP Fatal XC0 i0 Link 00 (0x00000004 0x00000040 0x00000000 0x00000000)\n",
			check.Fail, check.Pass, []string{"PCI 0000:04:00: Xid 145: RLW_REMAP", "NVIDIA's XID 144-150 Decode says RESET_GPU (severity Fatal)",
				"NVIDIA: RESET_GPU", "investigatory action CONTACT_SUPPORT", "Please contact your support organization"}},
		{"SXid 20009 printed Non-fatal",
			"[ 8001.220031] nvidia-nvswitch0: SXid (PCI:0000:06:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate\n",
			check.Skip, check.Warn, []string{"20009"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kern.log")
			if err := os.WriteFile(path, []byte(tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			_, out, errOut := runCLI(t, "check", "--kernel-log", path, "--checks", "gpu.xid,fabric.sxid", "--format", "json")
			doc := decode(t, out)
			status := map[string]check.Status{}
			text := ""
			for _, r := range doc.Checks {
				status[r.ID] = r.Status
				text += r.Summary + "\n" + strings.Join(r.Details, "\n") + "\n" + r.Remedy + "\n"
			}
			if status["gpu.xid"] != tc.xid || status["fabric.sxid"] != tc.sxid {
				t.Errorf("gpu.xid %s, fabric.sxid %s; want %s, %s\n%s%s", status["gpu.xid"], status["fabric.sxid"], tc.xid, tc.sxid, text, errOut)
			}
			for _, w := range tc.has {
				if !strings.Contains(text, w) {
					t.Errorf("results lack %q:\n%s", w, text)
				}
			}
			if strings.Contains(text, "no XIDs in the kernel log") && strings.Contains(tc.log, "NVRM: Xid (") {
				t.Errorf("an Xid was read, and the result says there was none:\n%s", text)
			}
		})
	}
}
