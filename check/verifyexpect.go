package check

import (
	"fmt"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// The expected figures of `gpuprobe verify`, in one table with a source
// per row (docs/verify.md prints it with the URLs). Every figure is what a
// healthy GPU achieves, not a line rate: the verdict is "% of expected"
// against verify.warn_percent and verify.fail_percent. A platform or kind
// with no row has no expectation, never a guess: its figures are reported
// and judged only against the node's own GPUs (verify.outlier_percent).

// Expectation is one expected figure and where it comes from.
type Expectation struct {
	Value float64 // GB/s or TFLOP/s
	// Basis says how Value follows from the source ("Gen5 x16: 63.0 GB/s
	// line rate × 0.83 achieved").
	Basis string
	// Source names the row's source (a datasheet, a measurement in a
	// public thread); docs/verify.md gives the URLs.
	Source string
}

// expectRow is one platform's figures (0: no expectation for that kind).
type expectRow struct {
	// model is the GPU model (check/platform.go's modelOf key and form);
	// mem narrows it by the name's memory size ("80GB") where the models
	// differ in HBM ("" any).
	key  string
	form gpuForm
	mem  string
	// d2d is GB/s counted once (a copy reads and writes each byte: HBM
	// moves twice this); peer is GB/s one way between two GPUs on the
	// NVSwitch fabric; fp32 is TFLOP/s of an FMA loop.
	d2d, peer, fp32             float64
	d2dSrc, peerSrc, fp32Src    string
	d2dBasis, peerBasis, fpBase string
}

// hbmAchieved is the share of the datasheet HBM bandwidth a device-local
// copy-engine copy reaches: nvbandwidth's device_local_copy on GB300 gives
// 3,312 GB/s counted once per GPU (13,249 summed over 4, OCI's GB300 quick
// start), 83% of the 4,000 GB/s ceiling of 8 TB/s moved twice. 0.8 keeps
// a margin; nvbandwidth#48 shows a GPU (H20-3e) where the copy reaches only
// 46%, so a platform is added here only with its own measurement or this
// factor's caveat in docs/verify.md.
const hbmAchieved = 0.8

// expectTable: sources in docs/verify.md ("Expected figures").
var expectTable = []expectRow{
	// H100 SXM5: HBM3 3.35 TB/s, FP32 67 TFLOP/s at 1,980 MHz boost
	// (NVIDIA H100 datasheet); 132 SMs × 128 FP32 lanes × 2 flops ×
	// 1,590 MHz base = 53.7 TFLOP/s: a loaded GPU must not fall below its
	// base clock. NVLink4 one way: 371–380 GB/s measured with
	// p2pBandwidthLatencyTest on 8× H100 80GB HBM3 (NVIDIA/nccl#1264).
	{key: "h100", form: formSXM,
		d2d: 3350 / 2 * hbmAchieved, d2dSrc: "NVIDIA H100 datasheet (3.35 TB/s HBM3)", d2dBasis: "3,350 GB/s ÷ 2 (read + write) × 0.8 achieved",
		peer: 370, peerSrc: "NVIDIA/nccl#1264 (p2pBandwidthLatencyTest, 8× H100 SXM: 371–380 GB/s one way)", peerBasis: "NVLink4 × 18 measured one way",
		fp32: 53.7, fp32Src: "NVIDIA H100 datasheet (67 TFLOP/s FP32 at 1,980 MHz); 1,590 MHz base clock", fpBase: "FP32 FMA at the base clock (67 × 1,590/1,980)"},
	// H200 SXM: the H100's die and NVLink4 with HBM3e 4.8 TB/s (NVIDIA
	// H200 datasheet).
	{key: "h200", form: formSXM,
		d2d: 4800 / 2 * hbmAchieved, d2dSrc: "NVIDIA H200 datasheet (4.8 TB/s HBM3e)", d2dBasis: "4,800 GB/s ÷ 2 × 0.8 achieved",
		peer: 370, peerSrc: "NVIDIA/nccl#1264 (the same NVLink4 × 18 as H100 SXM)", peerBasis: "NVLink4 × 18 measured one way",
		fp32: 53.7, fp32Src: "NVIDIA H200 datasheet (67 TFLOP/s FP32); H100 die and clocks", fpBase: "FP32 FMA at the base clock (67 × 1,590/1,980)"},
	// A100 SXM4 80GB and 40GB: HBM2e 2,039 / HBM2 1,555 GB/s, FP32 19.5
	// TFLOP/s at 1,410 MHz, base 1,095 MHz (NVIDIA A100 datasheet);
	// NVLink3 × 12: "~230 GB/s" effective one way (NVIDIA/nccl-tests#149,
	// NCCL's maintainer: 20 GB/s per link with SM copies, CE copies more).
	{key: "a100", form: formSXM, mem: "80GB",
		d2d: 2039 / 2 * hbmAchieved, d2dSrc: "NVIDIA A100 datasheet (2,039 GB/s HBM2e)", d2dBasis: "2,039 GB/s ÷ 2 × 0.8 achieved",
		peer: 230, peerSrc: "NVIDIA/nccl-tests#149 (A100 NVLink3 × 12: ~230 GB/s effective)", peerBasis: "NVLink3 × 12 effective one way",
		fp32: 15.1, fp32Src: "NVIDIA A100 datasheet (19.5 TFLOP/s FP32 at 1,410 MHz); 1,095 MHz base clock", fpBase: "FP32 FMA at the base clock (19.5 × 1,095/1,410)"},
	{key: "a100", form: formSXM,
		d2d: 1555 / 2 * hbmAchieved, d2dSrc: "NVIDIA A100 datasheet (1,555 GB/s HBM2, 40GB)", d2dBasis: "1,555 GB/s ÷ 2 × 0.8 achieved",
		peer: 230, peerSrc: "NVIDIA/nccl-tests#149 (A100 NVLink3 × 12: ~230 GB/s effective)", peerBasis: "NVLink3 × 12 effective one way",
		fp32: 15.1, fp32Src: "NVIDIA A100 datasheet (19.5 TFLOP/s FP32 at 1,410 MHz); 1,095 MHz base clock", fpBase: "FP32 FMA at the base clock (19.5 × 1,095/1,410)"},
	// B200: HBM3e 8 TB/s per GPU (NVIDIA HGX B200 page). No published
	// one-way NVLink5 copy or FP32 FMA measurement was found: no row for
	// them (outliers only).
	{key: "b200", form: formSXM,
		d2d: 8000 / 2 * hbmAchieved, d2dSrc: "NVIDIA HGX B200 (8 TB/s HBM3e per GPU)", d2dBasis: "8,000 GB/s ÷ 2 × 0.8 achieved"},
}

// pcieAchieved is the share of a PCIe link's per-direction line rate a
// pinned copy-engine copy reaches: 57.06 GB/s on H100 Gen5 x16 (90.6%,
// NVIDIA/nvbandwidth#6), 25.13 GB/s on A100-SXM4 Gen4 x16 (79.8%,
// NVIDIA/nvbandwidth#42), 24–27 GB/s on RTX 4090 Gen4 x16 (nvbandwidth#15),
// 26.34 GB/s peer over Gen4 ("almost 80% of full PCIe Gen 4 speeds",
// nvbandwidth#50). TLP headers cap it near 90% with 256-byte payloads.
const pcieAchieved = 0.83

// pcieLaneGBps is one lane's data rate per direction after line encoding
// (PCIe base specification: 2.5/5 GT/s 8b/10b, 8/16/32 GT/s 128b/130b).
// Gen6 (FLIT mode) is left out until a measurement is at hand.
var pcieLaneGBps = map[int]float64{1: 0.25, 2: 0.5, 3: 8 * 128.0 / 130 / 8, 4: 16 * 128.0 / 130 / 8, 5: 32 * 128.0 / 130 / 8}

// PCIeExpectation is the host copy a link of this generation and width
// should carry one way.
func PCIeExpectation(gen, width int) (Expectation, bool) {
	lane, ok := pcieLaneGBps[gen]
	if !ok || width <= 0 {
		return Expectation{}, false
	}
	line := lane * float64(width)
	return Expectation{Value: line * pcieAchieved,
		Basis:  fmt.Sprintf("Gen%d x%d: %.1f GB/s line rate × %.2f achieved", gen, width, line, pcieAchieved),
		Source: "PCIe line rate; achieved share from NVIDIA/nvbandwidth#6, #42, #50"}, true
}

// hostLinkExpectation is what a GPU's host copies should reach: from the
// link's maximum generation and width (nvmlDeviceGetMaxPcieLinkGeneration
// is the most the GPU and the system can train together). The current
// link at collection is not used: an idle GPU slows its link on purpose.
func hostLinkExpectation(g *state.GPU) (Expectation, bool) {
	if g == nil || g.PCIe == nil {
		return Expectation{}, false
	}
	return PCIeExpectation(g.PCIe.MaxGen, g.PCIe.MaxWidth)
}

// rowFor finds the table row of a GPU from NVML's name.
func rowFor(name string) (expectRow, bool) {
	m, ok := modelOf(name)
	if !ok {
		return expectRow{}, false
	}
	up := strings.ToUpper(name)
	for _, r := range expectTable {
		if r.key == m.key && r.form == m.form && (r.mem == "" || strings.Contains(up, r.mem)) {
			return r, true
		}
	}
	return expectRow{}, false
}

// ModelExpectation is the table's figure of a kind (d2d, peer over the
// NVSwitch fabric, compute) for a GPU model by NVML name.
func ModelExpectation(kind, name string) (Expectation, bool) {
	r, ok := rowFor(name)
	if !ok {
		return Expectation{}, false
	}
	var e Expectation
	switch kind {
	case state.MeasureD2D:
		e = Expectation{Value: r.d2d, Basis: r.d2dBasis, Source: r.d2dSrc}
	case state.MeasurePeer:
		e = Expectation{Value: r.peer, Basis: r.peerBasis, Source: r.peerSrc}
	case state.MeasureCompute:
		e = Expectation{Value: r.fp32, Basis: r.fpBase, Source: r.fp32Src}
	}
	return e, e.Value > 0
}

// ExpectationRow is one row of the table for docs/verify.md's test.
type ExpectationRow struct {
	Model, Kind string
	Expectation
}

// ExpectationTable lists every figure of the table, for the docs and their
// test.
func ExpectationTable() []ExpectationRow {
	var out []ExpectationRow
	for _, r := range expectTable {
		model := r.key
		if r.mem != "" {
			model += " " + r.mem
		}
		for _, k := range []struct {
			kind        string
			v           float64
			basis, from string
		}{{state.MeasureD2D, r.d2d, r.d2dBasis, r.d2dSrc}, {state.MeasurePeer, r.peer, r.peerBasis, r.peerSrc}, {state.MeasureCompute, r.fp32, r.fpBase, r.fp32Src}} {
			if k.v > 0 {
				out = append(out, ExpectationRow{Model: model, Kind: k.kind, Expectation: Expectation{Value: k.v, Basis: k.basis, Source: k.from}})
			}
		}
	}
	for gen := 3; gen <= 5; gen++ {
		e, _ := PCIeExpectation(gen, 16)
		out = append(out, ExpectationRow{Model: fmt.Sprintf("PCIe Gen%d x16", gen), Kind: state.MeasureH2D + "/" + state.MeasureD2H, Expectation: e})
	}
	return out
}
