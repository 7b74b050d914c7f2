package exporter

import (
	"bytes"
	"context"
	"flag"
	simnode "github.com/gpuprobe/gpuprobe/sim/node"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	"github.com/gpuprobe/gpuprobe/state"
)

var update = flag.Bool("update", false, "rewrite golden files")

// daemonFor builds a daemon over a simulated node, as 'serve' wires it.
func daemonFor(t testing.TB, spec string, perLink bool) *Daemon {
	t.Helper()
	s, err := simulate.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	src, err := simnode.Sources(s)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := check.Select(nil, nil)
	var checks []check.Check
	for _, c := range all {
		if c.Scope == check.NodeScope { // as 'serve' judges
			checks = append(checks, c)
		}
	}
	cfg := check.DefaultConfig()
	return &Daemon{
		Exporter: New(perLink),
		Interval: time.Hour,
		Timeout:  10 * time.Second,
		Collect: func(ctx context.Context) *state.Node {
			n := collect.Node(ctx, collect.Options{Sources: src, CallTimeout: 5 * time.Second})
			n.Sources = nil // durations vary run to run
			return n
		},
		Judge: func(ctx context.Context, n *state.Node) []check.Result { return check.Run(ctx, n, cfg, checks) },
	}
}

// The series a fault must move, compared with golden expositions.
var goldenNames = []string{
	"gpuprobe_node_healthy", "gpuprobe_check_status", "gpuprobe_gpu_row_remap_pending", "gpuprobe_gpu_lost",
	"gpuprobe_nvlink_links_up", "gpuprobe_gpu_fabric_registered", "gpuprobe_gpu_ecc_errors_total",
	"gpuprobe_gpu_clock_event_active", "gpuprobe_gpu_pcie_link_width", "gpuprobe_gpu_persistence_mode",
	"gpuprobe_gpu_compute_processes", "gpuprobe_collect_success", "gpuprobe_simulated",
}

func TestGoldenExpositions(t *testing.T) {
	for _, tc := range []struct{ name, spec string }{
		{"healthy", "dgx-h100"},
		{"row-remap-pending", "dgx-h100:row-remap-pending=3"},
		{"gpu-lost", "dgx-h100:gpu-lost=5"},
		{"nvlink-down", "dgx-h100:nvlink-down=2"},
		{"fabric-incomplete", "dgx-h100:fabric-incomplete"},
		{"ecc-uncorrectable", "dgx-h100:ecc-uncorrectable=4"},
		{"hw-slowdown", "dgx-h100:hw-slowdown=5"},
		{"pcie-x8", "dgx-h100:pcie-x8=1"},
		{"persistence-off", "dgx-h100:persistence-off"},
		{"leftover-process", "dgx-h100:leftover-process=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := daemonFor(t, tc.spec, false)
			d.Cycle(context.Background())
			path := filepath.Join("testdata", tc.name+".prom")
			if *update {
				got, err := testutil.CollectAndFormat(d.Exporter, expfmt.TypeTextPlain, goldenNames...)
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(path, got, 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./exporter -update)", err)
			}
			if err := testutil.CollectAndCompare(d.Exporter, bytes.NewReader(want), goldenNames...); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestFaultsMoveTheirSeries(t *testing.T) {
	healthy := daemonFor(t, "dgx-h100", false)
	healthy.Cycle(context.Background())
	if v := testutil.ToFloat64(gauge(t, healthy.Exporter, "gpuprobe_node_healthy")); v != 1 {
		t.Fatalf("healthy node_healthy = %v", v)
	}
	faulty := daemonFor(t, "dgx-h100:row-remap-pending=3", false)
	faulty.Cycle(context.Background())
	if v := testutil.ToFloat64(gauge(t, faulty.Exporter, "gpuprobe_node_healthy")); v != 0 {
		t.Fatalf("faulty node_healthy = %v", v)
	}
}

// gauge picks one unlabelled series out of the exporter.
func gauge(t *testing.T, e *Exporter, name string) prometheus.Collector {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "x"})
			g.Set(mf.Metric[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("%s not exported", name)
	return nil
}

func TestPedanticAndCardinality(t *testing.T) {
	for _, perLink := range []bool{false, true} {
		d := daemonFor(t, "dgx-h100", perLink)
		d.Cycle(context.Background())
		d.Exporter.XIDs.Add(GPU{"2", "GPU-x", "0000:4c:00.0"}, 79, time.Now(), 7)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(d.Exporter)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("pedantic gather (perLink=%v): %v", perLink, err)
		}
		n := 0
		for _, mf := range mfs {
			n += len(mf.Metric)
		}
		// Default budget: 1000 series for the whole exposition, Go and
		// process collectors included (about 45 more in 'serve').
		if !perLink && n > 900 {
			t.Errorf("default exposition has %d gpuprobe series, budget 900", n)
		}
		if perLink && n < 720 {
			t.Errorf("per-link exposition has only %d series", n)
		}
		t.Logf("perLink=%v: %d gpuprobe series", perLink, n)
	}
}

func TestFailedCycleServesPreviousDataAsStale(t *testing.T) {
	d := daemonFor(t, "dgx-h100", false)
	good := d.Cycle(context.Background())
	d.Timeout = time.Nanosecond // the next cycle overruns
	d.Cycle(context.Background())
	s := d.Exporter.Latest()
	if s.Success || !s.Stale || s.Node != good.Node || !s.At.Equal(good.At) {
		t.Fatalf("after an overrun: success=%v stale=%v same node=%v", s.Success, s.Stale, s.Node == good.Node)
	}
	var buf bytes.Buffer
	out, _ := testutil.CollectAndFormat(d.Exporter, expfmt.TypeTextPlain, "gpuprobe_collect_success", "gpuprobe_collect_stale", "gpuprobe_collect_failures_total", "gpuprobe_node_healthy")
	buf.Write(out)
	// The healthy node's last verdict is not carried over as 1: a node
	// that cannot be judged now is not reported healthy.
	for _, want := range []string{"gpuprobe_collect_success 0", "gpuprobe_collect_stale 1", "gpuprobe_collect_failures_total 1", "gpuprobe_node_healthy 0"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("missing %q in\n%s", want, buf.String())
		}
	}
}

func TestXIDCounterCountsEachKernelRecordOnce(t *testing.T) {
	c := NewXIDCounter()
	g := GPU{"2", "GPU-x", "0000:4c:00.0"}
	now := time.Now()
	c.Add(g, 79, now, 100)
	c.Add(g, 79, now, 100) // the same record, read again next cycle
	c.Add(g, 79, now.Add(time.Second), 101)
	c.Add(g, 48, now, 0) // from NVML events: no sequence, always counted
	c.Add(g, 48, now, 0)
	reg := prometheus.NewPedanticRegistry()
	e := New(false)
	e.XIDs = c
	reg.MustRegister(e)
	want := `
# HELP gpuprobe_gpu_xid_errors_total XID events seen since the daemon started, by XID code.
# TYPE gpuprobe_gpu_xid_errors_total counter
gpuprobe_gpu_xid_errors_total{gpu="2",pci_bus_id="0000:4c:00.0",severity="critical",uuid="GPU-x",xid="48"} 2
gpuprobe_gpu_xid_errors_total{gpu="2",pci_bus_id="0000:4c:00.0",severity="critical",uuid="GPU-x",xid="79"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gpuprobe_gpu_xid_errors_total"); err != nil {
		t.Error(err)
	}
}

func TestWriteTextfileIsAtomic(t *testing.T) {
	d := daemonFor(t, "dgx-h100", false)
	s := d.Cycle(context.Background())
	dir := t.TempDir()
	path := filepath.Join(dir, "gpuprobe.prom")
	if err := WriteTextfile(path, s, false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte("gpuprobe_node_healthy 1")) {
		t.Fatalf("textfile: %v\n%.300s", err, data)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
	if err := WriteTextfile(filepath.Join(dir, "no", "such", "dir.prom"), s, false); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// NVML's violation counters are exported raw, in seconds, one counter per
// policy the GPU answered for.
func TestViolationCountersInSeconds(t *testing.T) {
	e := New(false)
	n := &state.Node{Host: "n1", NVML: &state.NVML{Available: true, DeviceCount: 1, GPUs: []state.GPU{{
		Index: 0, UUID: "GPU-a", PCIBusID: "0000:10:00.0",
		Violations: []state.Violation{{Policy: "thermal", ReferenceTimeUs: 1, ViolationNs: 42_500_000_000}, {Policy: "board_limit", ViolationNs: 0}},
	}}}}
	e.Update(&Snapshot{Node: n, At: time.Now(), Success: true})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	want := `
# HELP gpuprobe_gpu_violation_seconds_total Cumulative time a perf policy held the GPU below its application clocks (nvmlDeviceGetViolationStatus), by policy: power, thermal, sync_boost, board_limit, low_utilization, reliability, total_app_clocks, total_base_clocks.
# TYPE gpuprobe_gpu_violation_seconds_total counter
gpuprobe_gpu_violation_seconds_total{gpu="0",pci_bus_id="0000:10:00.0",policy="board_limit",uuid="GPU-a"} 0
gpuprobe_gpu_violation_seconds_total{gpu="0",pci_bus_id="0000:10:00.0",policy="thermal",uuid="GPU-a"} 42.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gpuprobe_gpu_violation_seconds_total"); err != nil {
		t.Error(err)
	}
}
