package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuprobe/gpuprobe/check"
)

// Issue 26, the peers' own test suites: the 35 NVLink 5 (Xid 144-150) log
// lines of gpud's Test_NVLinkLogCoverage (leptonai/gpud,
// components/accelerator/nvidia/xid/nvlink_logs_test.go, commit
// 1892ff580c71115b2d441661b20759f5f83d4095, Apache-2.0; log lines only, no
// code), each run alone through check --kernel-log. gpud's verdict is kept
// beside each (gpudFatal: its EventTypeFatal; otherwise its Warning). The
// expected gpu.xid verdict is NVIDIA's XID 144-150 Decode sheet's
// (third_party/nvidia-xid-catalog): RESET_GPU/RESTART_BM fail, IGNORE and
// XID_154_EVAL do not. Where they differ, NVIDIA's sheet wins: the four
// 146 TLW_RX/TLW_TX PIPE lines with Error Status 0x4 that the driver prints
// "Fatal" decode to RESET_GPU (severity Fatal), which gpud reports as a
// warning. Agreement with gpud: 31 of 35 lines; the 4 are those.
func TestIssue26PeerNVLink5Lines(t *testing.T) {
	const r575 = "[    9.871234] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  575.51.03  Release Build\n"
	agree := 0
	cases := []struct {
		name      string
		line      string
		gpudFatal bool
		fail      bool // NVIDIA's decode: the GPU needs a reset
	}{
		{"144_SAW_MVB_nonfatal", "NVRM: Xid (PCI:0000:04:00): 144, SAW_MVB Nonfatal XC0 i0 Link 00 (0x00000001 0x00000001 0x00000000 0x00000000)", false, false},
		{"144_SAW_MVB_fatal", "NVRM: Xid (PCI:0000:04:00): 144, SAW_MVB Fatal XC0 i0 Link 00 (0x00000001 0x00000002 0x00000000 0x00000000)", true, true},
		{"145_RLW_CTRL_nonfatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_CTRL Nonfatal XC0 i0 Link 00 (0x00000003 0x80000000 0x00000000 0x00000000)", false, false},
		{"145_RLW_REMAP_nonfatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 00 (0x00000004 0x00000001 0x00000000 0x00000000)", false, false},
		{"145_RLW_REMAP_fatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_REMAP Fatal XC0 i0 Link 00 (0x00000004 0x00000040 0x00000000 0x00000000)", true, true},
		{"145_RLW_REMAP_nonfatal_status100", "NVRM: Xid (PCI:0000:04:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 00 (0x00000004 0x00000100 0x00000000 0x00000000)", false, false},
		{"145_RLW_RSPCOL_nonfatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_RSPCOL Nonfatal XC0 i0 Link 00 (0x00000005 0x00000001 0x00000000 0x00000000)", false, false},
		{"145_RLW_RSPCOL_fatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_RSPCOL Fatal XC0 i0 Link 00 (0x00000005 0x00000002 0x00000000 0x00000000)", true, true},
		{"145_RLW_RXPIPE_nonfatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 00 (0x00000006 0x00000001 0x00000000 0x00000000)", false, false},
		{"145_RLW_SRC_TRACK_fatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_SRC_TRACK Fatal XC0 i0 Link 00 (0x00000007 0x00000001 0x00000000 0x00000000)", true, true},
		{"145_RLW_SRC_TRACK_nonfatal2", "NVRM: Xid (PCI:0000:04:00): 145, RLW_SRC_TRACK Nonfatal XC0 i0 Link 00 (0x00000007 0x00000002 0x00000000 0x00000000)", false, false},
		{"145_RLW_SRC_TRACK_nonfatal4", "NVRM: Xid (PCI:0000:04:00): 145, RLW_SRC_TRACK Nonfatal XC0 i0 Link 00 (0x00000007 0x00000004 0x00000000 0x00000000)", false, false},
		{"145_RLW_TAGSTATE_nonfatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_TAGSTATE Nonfatal XC0 i0 Link 00 (0x00000008 0x00000001 0x00000000 0x00000000)", false, false},
		{"145_RLW_TAGSTATE_fatal", "NVRM: Xid (PCI:0000:04:00): 145, RLW_TAGSTATE Fatal XC0 i0 Link 00 (0x00000008 0x00000002 0x00000000 0x00000000)", true, true},
		{"146_TLW_CTRL_nonfatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_CTRL Nonfatal XC0 i0 Link 00 (0x00000009 0x00000001 0x00000000 0x00000000)", false, false},
		{"146_TLW_CTRL_fatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_CTRL Fatal XC0 i0 Link 00 (0x00000009 0x00000004 0x00000000 0x00000000)", true, true},
		{"146_TLW_RX_PIPE0_nonfatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_RX/TLW_RX_PIPE0 Nonfatal XC0 i0 Link 00 (0x0000000a 0x00000001 0x00000000 0x00000000)", false, false},
		{"146_TLW_RX_PIPE0_fatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_RX/TLW_RX_PIPE0 Fatal XC0 i0 Link 00 (0x0000000a 0x00000004 0x00000000 0x00000000)", false, true},
		{"146_TLW_RX_PIPE1_nonfatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_RX/TLW_RX_PIPE1 Nonfatal XC0 i0 Link 00 (0x0000000b 0x00000001 0x00000000 0x00000000)", false, false},
		{"146_TLW_RX_PIPE1_fatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_RX/TLW_RX_PIPE1 Fatal XC0 i0 Link 00 (0x0000000b 0x00000004 0x00000000 0x00000000)", false, true},
		{"146_TLW_TX_PIPE0_nonfatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_TX/TLW_TX_PIPE0 Nonfatal XC0 i0 Link 00 (0x0000000c 0x00000001 0x00000000 0x00000000)", false, false},
		{"146_TLW_TX_PIPE0_fatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_TX/TLW_TX_PIPE0 Fatal XC0 i0 Link 00 (0x0000000c 0x00000004 0x00000000 0x00000000)", false, true},
		{"146_TLW_TX_PIPE1_nonfatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_TX/TLW_TX_PIPE1 Nonfatal XC0 i0 Link 00 (0x0000000d 0x00000001 0x00000000 0x00000000)", false, false},
		{"146_TLW_TX_PIPE1_fatal", "NVRM: Xid (PCI:0000:04:00): 146, TLW_TX/TLW_TX_PIPE1 Fatal XC0 i0 Link 00 (0x0000000d 0x00000004 0x00000000 0x00000000)", false, true},
		{"147_TREX_nonfatal", "NVRM: Xid (PCI:0000:04:00): 147, TREX Nonfatal XC0 i0 Link 00 (0x0000000e 0x00000001 0x00000000 0x00000000)", false, false},
		{"148_NVLPW_nonfatal", "NVRM: Xid (PCI:0000:04:00): 148, NVLPW_CTRL/NVLPW Nonfatal XC0 i0 Link 00 (0x0000000f 0x80000000 0x00000000 0x00000000)", false, false},
		{"149_NETIR_INT_fatal", "NVRM: Xid (PCI:0000:04:00): 149, NETIR/NETIR_INT Fatal XC0 i0 Link 00 (0x00000018 0x00000000 0x00000000 0x00000000)", true, true},
		{"149_NETIR_BER_EVENT_nonfatal_es0", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 00 (0x00000013 0x00000000 0x00000000 0x00000000)", false, false},
		{"149_NETIR_BER_EVENT_nonfatal_es1", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 00 (0x00000013 0x00000001 0x00000000 0x00000000)", false, false},
		{"149_NETIR_MFDE_EVENT_fatal", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_MFDE_EVENT Fatal XC0 i0 Link 00 (0x00000014 0x00000001 0x00000000 0x00000000)", true, true},
		{"149_NETIR_MFDE_EVENT_nonfatal", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_MFDE_EVENT Nonfatal XC0 i0 Link 00 (0x00000014 0x00000003 0x00000000 0x00000000)", false, false},
		{"149_NETIR_LINK_EVT_down_00000011", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_LINK_EVT/NETIR_LINK_DOWN Fatal XC0 i0 Link 00 (0x00000011 0x00000000 0x00000000 0x00000000)", true, true},
		{"149_NETIR_LINK_EVT_down_01000011", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_LINK_EVT/NETIR_LINK_DOWN Fatal XC0 i0 Link 00 (0x01000011 0x00000000 0x00000000 0x00000000)", true, true},
		{"149_NETIR_LINK_EVT_down_02500011", "NVRM: Xid (PCI:0000:04:00): 149, NETIR_LINK_EVT/NETIR_LINK_DOWN Fatal XC0 i0 Link 00 (0x02500011 0x00000000 0x00000000 0x00000000)", true, true},
		{"150_MSE_WATCHDOG_fatal", "NVRM: Xid (PCI:0000:04:00): 150, MSE_WATCHDOG Fatal XC0 i0 Link 00 (0x00000000 0x00000000 0x00000000 0x00000000)", true, true},
	}
	for _, tc := range cases {
		path := filepath.Join(t.TempDir(), "kern.log")
		if err := os.WriteFile(path, []byte(r575+"[ 5120.004411] "+tc.line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, out, errOut := runCLI(t, "check", "--kernel-log", path, "--checks", "gpu.xid", "--format", "json")
		doc := decode(t, out)
		var st check.Status
		for _, r := range doc.Checks {
			if r.ID == "gpu.xid" {
				st = r.Status
			}
		}
		if failed := st == check.Fail; failed != tc.fail || st == "" || st == check.Error {
			t.Errorf("%s: gpu.xid %q, want fail=%v (NVIDIA's decode)\n%s", tc.name, st, tc.fail, errOut)
		}
		if (st == check.Fail) == tc.gpudFatal {
			agree++
		}
	}
	if agree != 31 {
		t.Errorf("agreement with gpud: %d of %d lines, the comment says 31", agree, len(cases))
	}
}
