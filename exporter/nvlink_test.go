package exporter

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// gaugeByGPU gathers one gauge family, by its gpu label.
func gaugeByGPU(t *testing.T, c prometheus.Collector, name string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "gpu" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// The expectation series is nvlink.state's own: the platform's count on a
// DGX whose every link is down (where links_up < links_expected is the
// alert), and nothing once the config turns the platform off.
func TestNVLinkExpectedSeriesFromThePlatform(t *testing.T) {
	d := daemonFor(t, "dgx-h100:nvlinks-lost", false)
	d.Cycle(context.Background())
	want, up := gaugeByGPU(t, d.Exporter, "gpuprobe_nvlink_links_expected"), gaugeByGPU(t, d.Exporter, "gpuprobe_nvlink_links_up")
	if len(want) != 8 || len(up) != 8 {
		t.Fatalf("expected %v, up %v: want 8 GPUs each", want, up)
	}
	for gpu, w := range want {
		if w != 18 || up[gpu] != 0 {
			t.Errorf("GPU %s: %g links up of %g expected, want 0 of 18", gpu, up[gpu], w)
		}
	}
	none := check.DefaultConfig()
	none.Platform.Profile = "none"
	d = daemonFor(t, "dgx-h100:nvlinks-lost", false)
	d.Config = none
	d.Cycle(context.Background())
	if got := gaugeByGPU(t, d.Exporter, "gpuprobe_nvlink_links_expected"); len(got) != 0 {
		t.Errorf("platform none: expectation series %v, want none", got)
	}
}

// PCIe cards: an unbridged A100 lists its 12 links, all down. It used to
// show as 0 of 12 (the alert fired); the platform expects 0 of it, and 12
// of its bridged neighbour. An unknown model gets no expectation series.
func TestNVLinkExpectedSeriesPCIe(t *testing.T) {
	gpu := func(i int, name string, listed, up int) state.GPU {
		g := state.GPU{Index: i, Name: name, Fabric: &state.Fabric{State: "not_supported"}}
		for l := 0; l < listed; l++ {
			g.NVLinks = append(g.NVLinks, state.NVLink{Link: l, Up: l < up})
		}
		return g
	}
	for _, tc := range []struct {
		name string
		gpus []state.GPU
		want map[string]float64
	}{
		{"A100 PCIe, one bridged, one not", []state.GPU{gpu(0, "NVIDIA A100 80GB PCIe", 12, 12), gpu(1, "NVIDIA A100 80GB PCIe", 12, 0)}, map[string]float64{"0": 12, "1": 0}},
		{"unknown model", []state.GPU{gpu(0, "NVIDIA A40", 4, 0), gpu(1, "NVIDIA A40", 4, 0)}, map[string]float64{}},
		// MIG on: nothing is required of the links (nvlink.state skips the GPU).
		{"H100 with MIG on", []state.GPU{gpu(0, "NVIDIA H100 80GB HBM3", 18, 18), func() state.GPU {
			g := gpu(1, "NVIDIA H100 80GB HBM3", 18, 0)
			g.MIG = &state.MIG{Current: true}
			return g
		}()}, map[string]float64{"0": 18, "1": 0}},
	} {
		n := &state.Node{NVML: &state.NVML{Available: true, GPUs: tc.gpus}, Topology: &topostate.Topology{Virtualization: topostate.Virtualization{Kind: "none"}}}
		got := gaugeByGPU(t, gpusOnly{n}, "gpuprobe_nvlink_links_expected")
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: GPU %s expected %g, want %g", tc.name, k, got[k], v)
			}
		}
	}
}
