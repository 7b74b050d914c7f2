package kernel

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// TestGSPTimeoutBanner: the driver's "GSP Timeout" banner
// (kernel_gsp.c _kgspLogRpcTimeout, _kgspLogXid119 before it) is read per
// GPU and driver load; the Xid line after it stays an Xid; lines that only
// quote the words are not the banner.
func TestGSPTimeoutBanner(t *testing.T) {
	const stars = "*********************************"
	for _, tc := range []struct {
		name string
		log  []string
		want []state.GSPTimeoutEvent
		xids int
	}{
		{name: "595 driver: GPU prefix, cut before its Xid (issue 1230)",
			log: []string{
				"[   84.300482] NVRM: GPU6 _kgspCheckIfMemsysError: Unexpected error when checking for memory subsystem error: 0x72 ",
				"[   84.300488] NVRM: GPU6 _kgspLogRpcTimeout: " + stars + " GSP Timeout " + stars + "*",
			},
			want: []state.GSPTimeoutEvent{{GPU: "GPU6", Lines: 1}}},
		{name: "older driver: no GPU prefix, the Xid line after it",
			log: []string{
				"NVRM: _kgspLogXid119: " + stars + " GSP Timeout " + stars + "*",
				"NVRM: _kgspLogXid119: Note: Please also check logs above.",
				"NVRM: Xid (PCI:0000:01:00): 119, Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 1321",
			},
			want: []state.GSPTimeoutEvent{{Lines: 1}}, xids: 1},
		{name: "two GPUs, one twice, a driver load between",
			log: []string{
				"[ 1.0] NVRM: GPU0 _kgspLogRpcTimeout: " + stars + " GSP Timeout " + stars,
				"[ 2.0] NVRM: GPU1 _kgspLogRpcTimeout: " + stars + " GSP Timeout " + stars,
				"[ 3.0] NVRM: GPU0 _kgspLogRpcTimeout: " + stars + " GSP Timeout " + stars,
				"[ 4.0] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  595.71.05  Release Build  (root@epyc)  Fri Jul  3 11:27:00 AM UTC 2026",
				"[ 5.0] NVRM: GPU0 _kgspLogRpcTimeout: " + stars + " GSP Timeout " + stars,
			},
			want: []state.GSPTimeoutEvent{{GPU: "GPU0", Lines: 2}, {GPU: "GPU1", Lines: 1}, {GPU: "GPU0", Lines: 1, DriverLoad: 1}}},
		{name: "not the banner: quoted, or no NVRM prefix, or other words before it",
			log: []string{
				"[ 1.0] foo: NVRM: said *** GSP Timeout *** once",
				"[ 1.1] kernel: ***** GSP Timeout *****",
				"[ 1.2] NVRM: GPU6 _kgspLogRpcTimeout: Note: Please also check logs above.",
				"[ 1.3] NVRM: GPUx _kgspLogRpcTimeout: ***** GSP Timeout *****",
				"[ 1.4] NVRM: GSP Timeout without stars",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := readString(t, strings.Join(tc.log, "\n")+"\n")
			if !reflect.DeepEqual(l.GSPTimeouts, tc.want) {
				t.Errorf("GSP timeouts\n got %+v\nwant %+v", l.GSPTimeouts, tc.want)
			}
			if len(l.XIDs) != tc.xids {
				t.Errorf("XIDs %+v, want %d: the banner is no Xid", l.XIDs, tc.xids)
			}
		})
	}
}

// A saved log's wall-clock prefix dates the banner; a kmsg record its
// microseconds since boot.
func TestGSPTimeoutTime(t *testing.T) {
	boot := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	l := parseLog([]byte("3,901,21091872,-;NVRM: GPU2 _kgspLogRpcTimeout: ***** GSP Timeout *****\n"), boot)
	if len(l.GSPTimeouts) != 1 || !l.GSPTimeouts[0].Time.Equal(boot.Add(21091872*time.Microsecond)) {
		t.Errorf("kmsg: %+v", l.GSPTimeouts)
	}
}

// TestGSPTimeoutsBounded: a log naming more GPUs than any node has keeps
// maxGSPTimeouts events.
func TestGSPTimeoutsBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "[ 1.0] NVRM: GPU%d _kgspLogRpcTimeout: ***** GSP Timeout *****\n", i)
	}
	l := parseLog([]byte(b.String()), time.Time{})
	if len(l.GSPTimeouts) != maxGSPTimeouts {
		t.Fatalf("%d events kept, want %d", len(l.GSPTimeouts), maxGSPTimeouts)
	}
}
