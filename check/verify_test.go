package check

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// verifyNode is an 8-GPU node of the model, every GPU on Gen5 x16 (or the
// given link) and NVSwitch (unless pcie), with Verify's figures.
func verifyNode(name string, gpus int, nvswitch bool, ms ...state.Measurement) *state.Node {
	n := &state.Node{NVML: &state.NVML{Available: true}, Verify: &state.Verify{Source: "measured", Tier: "quick", Measurements: ms}}
	for i := 0; i < gpus; i++ {
		g := state.GPU{Index: i, Name: name, PCIBusID: "0000:" + string(rune('1'+i)) + "0:00.0",
			PCIe: &state.PCIe{CurrentGen: 5, MaxGen: 5, CurrentWidth: 16, MaxWidth: 16}}
		if nvswitch {
			g.NVLinks = []state.NVLink{{Link: 0, Up: true, RemoteType: "switch"}}
		}
		n.NVML.GPUs = append(n.NVML.GPUs, g)
	}
	return n
}

// each gives every one of n GPUs the kind's figure, then overrides.
func each(kind string, n int, v float64, over map[int]float64) []state.Measurement {
	var out []state.Measurement
	for i := 0; i < n; i++ {
		x := v
		if o, ok := over[i]; ok {
			x = o
		}
		out = append(out, state.Measurement{Kind: kind, GPU: i, Peer: -1, Value: x, Unit: "GB/s"})
	}
	return out
}

func watched(w state.LoadWatch) []state.Measurement {
	ms := each(state.MeasureCompute, 4, 59, nil)
	for i := range ms {
		ms[i].Unit = "TFLOP/s"
		lw := state.LoadWatch{Samples: 10, MinSMClockMHz: 1755, MaxSMClockMHz: 1980, MaxClockMHz: 1980, ThrottleReasons: clockSWPowerCap}
		if i == 1 {
			lw = w
		}
		ms[i].Load = &lw
	}
	return ms
}

const h100 = "NVIDIA H100 80GB HBM3"

func TestVerifyChecks(t *testing.T) {
	trained := verifyNode(h100, 8, true, each(state.MeasureH2D, 8, 54, map[int]float64{2: 25})...)
	trained.NVML.GPUs[2].PCIe.CurrentGen = 4
	for _, tc := range []struct {
		name   string
		run    func(*state.Node, *Config) Result
		node   *state.Node
		status Status
		gpus   []int
		want   string
	}{
		{"no verify: skip", checkVerifyH2D, &state.Node{}, Skip, nil, "verify did not run"},
		{"run: figures judged pass", checkVerifyRun, verifyNode(h100, 2, true, each(state.MeasureH2D, 2, 54, nil)...), Pass, nil, "measured 2 GPUs"},
		{"run: nothing measured warns", checkVerifyRun, verifyNode(h100, 2, true), Warn, nil, "nothing was judged"},
		{"run: only figures no check judges warns", checkVerifyRun,
			&state.Node{Verify: &state.Verify{Source: "nvbandwidth", File: "x", Measurements: []state.Measurement{{Kind: "figure", GPU: 0, Peer: -1, Path: "host_to_device_memcpy_sm", Value: 25}}}},
			Warn, nil, "nothing was judged: no figure of a kind verify judges (read: host_to_device_memcpy_sm)"},
		{"healthy h2d", checkVerifyH2D, verifyNode(h100, 8, true, each(state.MeasureH2D, 8, 54.5, nil)...), Pass, nil, "104% of expected (Gen5 x16"},
		{"slow host link fails by the table and the siblings", checkVerifyH2D, verifyNode(h100, 8, true, each(state.MeasureH2D, 8, 54.5, map[int]float64{3: 14})...),
			Fail, []int{3}, "GPU 3 (0000:40:00.0): host → device 14.0 GB/s is 27% of the 52.3 GB/s expected"},
		{"80% of expected warns", checkVerifyD2H, verifyNode(h100, 8, true, each(state.MeasureD2H, 8, 54.5, map[int]float64{5: 42})...), Warn, []int{5}, "80% of the 52.3"},
		{"a link trained down says so", checkVerifyH2D, trained, Fail, []int{2}, "at collection the link ran Gen4 x16 of Gen5 x16"},
		{"measurement error names the call", checkVerifyH2D,
			verifyNode(h100, 2, true, state.Measurement{Kind: state.MeasureH2D, GPU: 1, Peer: -1, Error: "cuMemcpyHtoD on GPU 1: CUDA_ERROR_LAUNCH_FAILED"}),
			Error, []int{1}, "cuMemcpyHtoD on GPU 1"},
		{"unknown model: no expectation, siblings judge", checkVerifyD2D, verifyNode("NVIDIA Foo 9000", 4, false, each(state.MeasureD2D, 4, 1000, map[int]float64{0: 600})...),
			Fail, []int{0}, "60% of the median 1000.0 GB/s of this node's 4 GPUs"},
		{"unknown model healthy: no expectation, never a guess", checkVerifyD2D, verifyNode("NVIDIA Foo 9000", 4, false, each(state.MeasureD2D, 4, 1000, nil)...),
			Pass, nil, "no expectation for NVIDIA Foo 9000"},
		{"two GPUs: no outlier rule", checkVerifyD2D, verifyNode("NVIDIA Foo 9000", 2, false, each(state.MeasureD2D, 2, 1000, map[int]float64{0: 500})...), Pass, nil, "no expectation"},
		{"h100 d2d healthy", checkVerifyD2D, verifyNode(h100, 8, true, each(state.MeasureD2D, 8, 1450, nil)...), Pass, nil, "108% of expected"},
		{"compute healthy (sw power cap is normal at full load)", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{Samples: 10, MaxClockMHz: 1980, ThrottleReasons: clockSWPowerCap})...), Pass, nil, "no throttling"},
		{"hw slowdown under load fails", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{ThrottleReasons: clockHWSlowdown | clockHWThermal})...), Fail, []int{1}, "hw_slowdown, hw_thermal_slowdown"},
		{"hw slowdown names the hottest temperature read", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{MinSMClockMHz: 1200, MaxSMClockMHz: 1980, MaxClockMHz: 1980, MaxTempC: 91, MaxPowerW: 600, ThrottleReasons: clockHWSlowdown})...), Fail, []int{1}, "(hw_slowdown; SM clock 1200–1980 of 1980 MHz, 91 °C, 600 W)"},
		{"a temperature not read is not said (no 0 °C)", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{MinSMClockMHz: 1200, MaxSMClockMHz: 1980, MaxClockMHz: 1980, MaxPowerW: 600, ThrottleReasons: clockHWSlowdown})...), Fail, []int{1}, "(hw_slowdown; SM clock 1200–1980 of 1980 MHz, 600 W)"},
		{"power brake fails", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{ThrottleReasons: clockHWPowerBrake})...), Fail, []int{1}, "hw_power_brake_slowdown"},
		{"sw thermal warns", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{ThrottleReasons: clockSWThermal})...), Warn, []int{1}, "slowdown temperature"},
		{"ECC growth fails", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{ECCDelta: 2})...), Fail, []int{1}, "2 uncorrectable ECC errors under load"},
		{"Xid under load fails", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{XIDs: []int{79}})...), Fail, []int{1}, "Xid 79 logged under load"},
		{"lost under load fails", checkVerifyCompute, verifyNode(h100, 4, true, watched(state.LoadWatch{Lost: true})...), Fail, []int{1}, "fell off the bus"},
		{"memtest mismatch fails", checkVerifyMemTest,
			verifyNode(h100, 2, true, state.Measurement{Kind: state.MeasureMemTest, GPU: 0, Peer: -1, Bytes: 1 << 30}, state.Measurement{Kind: state.MeasureMemTest, GPU: 1, Peer: -1, Bytes: 1 << 30, Mismatches: 7}),
			Fail, []int{1}, "7 words of 1024 MiB read back wrong"},
		{"peer staged over NVLink fails", checkVerifyPeer,
			verifyNode(h100, 2, true, state.Measurement{Kind: state.MeasurePeer, GPU: 0, Peer: 1, Value: 20, Path: "p2p-unsupported", Unit: "GB/s"}),
			Fail, []int{0, 1}, "refuses peer access"},
		{"peer over PCIe judged against the link", checkVerifyPeer,
			verifyNode("NVIDIA L40S", 2, false, state.Measurement{Kind: state.MeasurePeer, GPU: 0, Peer: 1, Value: 20, Path: "p2p", Unit: "GB/s"}),
			Fail, []int{0, 1}, "GPU 0 → GPU 1 20.0 GB/s is 38% of the 52.3 GB/s expected (PCIe peer"},
		{"verify could not run: error", checkVerifyRun, &state.Node{Verify: &state.Verify{Source: "measured", Error: "cuMemcpyPeer on GPU 1: hung"}}, Error, nil, "cuMemcpyPeer on GPU 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run(tc.node, DefaultConfig())
			var gpus []int
			for _, d := range r.Devices {
				gpus = append(gpus, d.Index)
			}
			if r.Status != tc.status || !strings.Contains(r.Summary+strings.Join(r.Details, "\n"), tc.want) || len(gpus) != len(tc.gpus) {
				t.Fatalf("%s on %v: %s\n%s\nwant %s on %v naming %q", r.Status, gpus, r.Summary, strings.Join(r.Details, "\n"), tc.status, tc.gpus, tc.want)
			}
			for i := range gpus {
				if gpus[i] != tc.gpus[i] {
					t.Fatalf("GPUs %v, want %v", gpus, tc.gpus)
				}
			}
		})
	}
}

// A pair slow against its siblings fails naming both GPUs, also where the
// table has no row (B200 peers).
func TestVerifyPeerOutlierWithoutRow(t *testing.T) {
	var ms []state.Measurement
	for a := 0; a < 4; a++ {
		for b := 0; b < 4; b++ {
			if a != b {
				v := 740.0
				if a == 1 && b == 2 {
					v = 300
				}
				ms = append(ms, state.Measurement{Kind: state.MeasurePeer, GPU: a, Peer: b, Value: v, Path: "p2p", Unit: "GB/s"})
			}
		}
	}
	r := checkVerifyPeer(verifyNode("NVIDIA B200 180GB HBM3e", 4, true, ms...), DefaultConfig())
	if r.Status != Fail || len(r.Devices) != 2 || r.Devices[0].Index != 1 || r.Devices[1].Index != 2 || !strings.Contains(r.Summary, "GPU 1 → GPU 2 300.0 GB/s is 41% of the median") {
		t.Fatalf("%s %v: %s", r.Status, r.Devices, r.Summary)
	}
}

// Every verify check runs only in verify: check's selection never holds one.
func TestVerifyChecksOnlyInVerify(t *testing.T) {
	cs, err := Select(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.HasPrefix(c.ID, "verify.") {
			t.Errorf("check selects %s", c.ID)
		}
	}
	vs, _ := VerifyChecks(nil, nil)
	if len(vs) != 9 { // 7 on what verify measures, 2 on saved outputs (verify --from)
		t.Errorf("%d verify checks", len(vs))
	}
}

// verify's drains and check's are each their owner's: one never lifts or
// overwrites the other's.
func TestVerifyDrainOwner(t *testing.T) {
	drained := func(reason string) slurmstate.NodeInfo {
		return slurmstate.NodeInfo{Name: "n1", State: "IDLE+DRAIN", Base: "IDLE", Flags: []string{"DRAIN"}, Reason: reason}
	}
	checkReason := "gpuprobe: gpu.xid node gpu=1 Xid 79"
	verifyReason := "gpuprobe-verify: verify.h2d node gpu=3 host to device 14.0 GB/s"
	fail := []DrainFailure{{ID: "verify.h2d", Summary: "host to device 14.0 GB/s", GPUs: []int{3}}}
	now := time.Now()
	for _, tc := range []struct {
		name   string
		node   slurmstate.NodeInfo
		fails  []DrainFailure
		prefix string
		want   DrainAction
	}{
		{"verify fails on an idle node: drains with its prefix", slurmstate.NodeInfo{Name: "n1", State: "IDLE", Base: "IDLE"}, fail, VerifyReasonPrefix, DrainSet},
		{"verify passes: lifts its own drain", drained(verifyReason), nil, VerifyReasonPrefix, DrainResume},
		{"verify passes: leaves check's drain", drained(checkReason), nil, VerifyReasonPrefix, DrainNone},
		{"verify fails: does not overwrite check's drain", drained(checkReason), fail, VerifyReasonPrefix, DrainNone},
		{"check passes: leaves verify's drain", drained(verifyReason), nil, "", DrainNone},
	} {
		d, _ := DecideQuarantine(QuarantineInput{Node: tc.node, Failures: tc.fails, Config: DefaultDrainConfig(), Now: now, Prefix: tc.prefix})
		if d.Action != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, d.Action, d.Why, tc.want)
		}
		if d.Action == DrainSet && !strings.HasPrefix(d.Reason, VerifyReasonPrefix+" verify.h2d node gpu=3 ") {
			t.Errorf("%s: reason %q", tc.name, d.Reason)
		}
		if d.Action == DrainSet {
			if r, err := ParseReason(d.Reason); err != nil || r.Prefix != VerifyReasonPrefix || r.Check != "verify.h2d" {
				t.Errorf("%s: reason %q parses as %+v, %v", tc.name, d.Reason, r, err)
			}
		}
	}
}

// Every figure of the table has a source and a basis.
func TestExpectationTableSourced(t *testing.T) {
	for _, r := range ExpectationTable() {
		if r.Value <= 0 || r.Source == "" || r.Basis == "" {
			t.Errorf("row %+v lacks a value, source or basis", r)
		}
	}
	if e, ok := PCIeExpectation(6, 16); ok {
		t.Errorf("Gen6 has an expectation (%v) without a measurement behind it", e)
	}
}

// verify's levels are validated: shares of a figure, warn above fail.
func TestVerifyConfigValidated(t *testing.T) {
	for _, bad := range []string{"verify: {warn_percent: 60, fail_percent: 80}", "verify: {outlier_percent: 120}", "verify: {warn_percent: -1}"} {
		cfg := DefaultConfig()
		if err := ParseConfig([]byte(bad), cfg); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	cfg := DefaultConfig()
	if err := ParseConfig([]byte("verify: {warn_percent: 90, fail_percent: 50, outlier_percent: 60}"), cfg); err != nil || cfg.Verify.FailPercent != 50 {
		t.Errorf("a valid verify block: %v %+v", err, cfg.Verify)
	}
}
