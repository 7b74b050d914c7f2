package kernel

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// The driver's failed GPU initialisations, in the forms drivers print them
// (kernel-open/nvidia/nv.c nv_start_device; RM's RmInitAdapter): the lines
// are real ones from public threads (NVIDIA/gpu-operator#649 and #1146,
// open-gpu-kernel-modules#789, a GTX 980 passthrough post with the older
// unnamed form).
func TestInitFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  []string
		want []state.InitFailureEvent
	}{
		{name: "two GPUs, repeated, rm_init_adapter line folded",
			log: []string{
				"[  594.281578] NVRM: GPU 0000:04:01.0: RmInitAdapter failed! (0x11:0x45:2525)",
				"[  594.281732] NVRM: GPU 0000:04:01.0: rm_init_adapter failed, device minor number 0",
				"[  599.105589] NVRM: GPU 0000:04:02.0: RmInitAdapter failed! (0x11:0x45:2525)",
				"[  599.105759] NVRM: GPU 0000:04:02.0: rm_init_adapter failed, device minor number 1",
				"[  608.800921] NVRM: GPU 0000:04:01.0: RmInitAdapter failed! (0x11:0x45:2525)",
				"[  608.801099] NVRM: GPU 0000:04:01.0: rm_init_adapter failed, device minor number 0",
			},
			want: []state.InitFailureEvent{
				{BusID: "0000:04:01.0", Message: "RmInitAdapter failed! (0x11:0x45:2525)", Lines: 2},
				{BusID: "0000:04:02.0", Message: "RmInitAdapter failed! (0x11:0x45:2525)", Lines: 1},
			}},
		{name: "RM's reasons before it are no failure of their own",
			log: []string{
				"[  903.609564] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM",
				"[  903.610907] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
				"[  903.611884] NVRM: GPU 0000:98:00.0: rm_init_adapter failed, device minor number 0",
			},
			want: []state.InitFailureEvent{{BusID: "0000:98:00.0", Message: "RmInitAdapter failed! (0x62:0x65:1792)", Lines: 1}}},
		{name: "older driver: no GPU named",
			log: []string{
				"[   32.920601] NVRM: RmInitAdapter failed! (0x23:0x56:451)",
				"[   32.920612] NVRM: rm_init_adapter failed for device bearing minor number 0",
			},
			want: []state.InitFailureEvent{{Message: "RmInitAdapter failed! (0x23:0x56:451)", Lines: 1, Minors: []int{0}}}},
		// Two GPUs failing on such a driver: one event, both minor numbers
		// (the lines cannot say which RmInitAdapter line was whose).
		{name: "older driver: two GPUs, by minor number",
			log: []string{
				"[   32.920601] NVRM: RmInitAdapter failed! (0x23:0x56:451)",
				"[   32.920612] NVRM: rm_init_adapter failed for device bearing minor number 3",
				"[   33.100601] NVRM: RmInitAdapter failed! (0x23:0x56:451)",
				"[   33.100612] NVRM: rm_init_adapter failed for device bearing minor number 1",
				"[   40.920601] NVRM: RmInitAdapter failed! (0x23:0x56:451)",
				"[   40.920612] NVRM: rm_init_adapter failed for device bearing minor number 3",
				"[   41.000000] NVRM: rm_init_adapter failed for device bearing minor number 255",
			},
			want: []state.InitFailureEvent{{Message: "RmInitAdapter failed! (0x23:0x56:451)", Lines: 3, Minors: []int{1, 3}}}},
		// NVreg_GpuInitOnProbe=1: the probe starts the GPU and logs its own
		// line after nv_start_device's (kernel-open/nvidia/nv-pci.c
		// nv_pci_probe, 595.45.04: "NVRM: Device start failed for
		// %04x:%02x:%02x.%x (ret=%d)"). The lines are built from the
		// source's formats, not copied from a posted log.
		{name: "init on probe: Device start failed folded",
			log: []string{
				"[    9.812345] NVRM: GPU 0000:1b:00.0: RmInitAdapter failed! (0x22:0x56:894)",
				"[    9.812401] NVRM: GPU 0000:1b:00.0: rm_init_adapter failed, device minor number 2",
				"[    9.812433] NVRM: Device start failed for 0000:1b:00.0 (ret=-5)",
				"[    9.812450] nvidia: probe of 0000:1b:00.0 failed with error -5",
			},
			want: []state.InitFailureEvent{{BusID: "0000:1b:00.0", Message: "RmInitAdapter failed! (0x22:0x56:894)", Lines: 1}}},
		{name: "init on probe: only the probe's line",
			log:  []string{"3,1207,9812433,-;NVRM: Device start failed for 0000:1B:00.0 (ret=-12)"},
			want: []state.InitFailureEvent{{BusID: "0000:1b:00.0", Message: "Device start failed for 0000:1B:00.0 (ret=-12)", Lines: 1}}},
		{name: "init on probe: no function named",
			log: []string{
				"[    9.812433] NVRM: Device start failed for (ret=-5)",
				"[    9.812434] NVRM: Device start failed for ",
			}},
		{name: "only the kernel interface's line",
			log:  []string{"Dec  2 11:49:53 worker4 kernel: [  885.242457] NVRM: GPU 0000:0a:00.0: rm_init_adapter failed, device minor number 5"},
			want: []state.InitFailureEvent{{BusID: "0000:0a:00.0", Message: "rm_init_adapter failed, device minor number 5", Lines: 1}}},
		{name: "a later driver load is an event of its own",
			log: []string{
				"[   10.000000] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:894)",
				"[   50.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
				"[   60.000000] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:894)",
			},
			want: []state.InitFailureEvent{
				{BusID: "0000:01:00.0", Message: "RmInitAdapter failed! (0x22:0x56:894)", Lines: 1},
				{BusID: "0000:01:00.0", Message: "RmInitAdapter failed! (0x22:0x56:894)", Lines: 1, DriverLoad: 1},
			}},
		{name: "not ours: another message quoting it, no NVRM prefix",
			log: []string{
				"[    1.000000] foo: NVRM said GPU 0000:01:00.0: RmInitAdapter failed!",
				"[    1.000001] NVRM: see RmInitAdapter failed! in the guide",
				"[    1.000002] NVRM: GPU zz:01:00.0: RmInitAdapter failed! (0x22:0x56:894)",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := readString(t, strings.Join(tc.log, "\n")+"\n")
			if !reflect.DeepEqual(l.InitFailures, tc.want) {
				t.Errorf("init failures\n got %+v\nwant %+v", l.InitFailures, tc.want)
			}
			if len(l.XIDs) != 0 {
				t.Errorf("XIDs %+v: an init failure is no Xid", l.XIDs)
			}
		})
	}
}

// A /dev/kmsg record is dated from its microseconds since boot; a saved
// log's wall-clock prefix dates it when boot is unknown.
func TestInitFailureTime(t *testing.T) {
	boot := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	l := parseLog([]byte("3,901,21091872,-;NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:894)\n"), boot)
	if len(l.InitFailures) != 1 || !l.InitFailures[0].Time.Equal(boot.Add(21091872*time.Microsecond)) {
		t.Errorf("kmsg: %+v", l.InitFailures)
	}
	l = parseLog([]byte("2026-06-01T15:55:06.218036+00:00 host kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:894)\n"), time.Time{})
	if len(l.InitFailures) != 1 || l.InitFailures[0].Time.IsZero() {
		t.Errorf("journal: %+v", l.InitFailures)
	}
}

// The real log the corpus keeps (cmpunlocker issue 4): one GPU, its
// failures counted, its osInitNvMapping lines not.
func TestInitFailureCorpusLog(t *testing.T) {
	data, err := os.ReadFile("../cmd/gpuprobe/testdata/kernel-logs/cmpunlocker4-dmesg-rminitadapter-no-xid.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Count(string(data), "RmInitAdapter failed!")
	l := parseLog(data, time.Time{})
	if len(l.InitFailures) != 1 || l.InitFailures[0].BusID != "0000:01:00.0" || l.InitFailures[0].Lines != want || want == 0 {
		t.Errorf("init failures %+v, want one on 0000:01:00.0 with %d lines", l.InitFailures, want)
	}
}

// TestInitFailuresBounded: a log naming more functions than any node has
// keeps maxInitFailures events, not one per line.
func TestInitFailuresBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "[ 1.0] NVRM: GPU 0000:%02x:%02x.0: RmInitAdapter failed! (0x22:0x56:894)\n", i/32, i%32)
	}
	l := parseLog([]byte(b.String()), time.Time{})
	if len(l.InitFailures) != maxInitFailures {
		t.Fatalf("%d events kept, want %d", len(l.InitFailures), maxInitFailures)
	}
}
