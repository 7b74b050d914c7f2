package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// Platform is what the node is built to be: its GPU count, the NVLinks
// each GPU must have up, and whether an NVSwitch fabric joins them. It
// comes from the platform (the GPU model and the DMI product name, or the
// config), never from the node's own majority: a node whose every GPU lost
// every link still knows it should have 18 per GPU.
//
// Each expectation is known or not on its own: the GPU model alone fixes
// the links of an SXM GPU (every HGX board wires all of them), but not how
// many GPUs its board holds (HGX boards come with 4 and 8). Where neither
// the model nor the DMI decides, the field stays unknown and no
// expectation is imposed; nothing is guessed. docs/checks.md ("Platform
// profile") lists every number with its source.
type Platform struct {
	// Name is the profile: "dgx-h100", "hgx-h100" (an SXM model on a board
	// the DMI does not name), "pcie-l40s", "pcie-a100" (an NVLink bridge
	// is optional), a configured profile, or "unknown".
	Name string
	// GPUs is the GPU count of the platform; 0 = not known.
	GPUs int
	// NVLinks is how many NVLinks each GPU has up when healthy; meaningful
	// when LinksKnown. With Bridge the links exist only where an NVLink
	// bridge is fitted (PCIe cards): a GPU with none up is not judged, one
	// with some up must have all NVLinks up.
	NVLinks    int
	LinksKnown bool
	Bridge     bool
	// NVSwitch says whether NVSwitches join the GPUs; nil = not known.
	NVSwitch *bool
	// IBPorts is how many RDMA ports the platform's compute fabric has at
	// least (one ConnectX per GPU on a DGX); 0 = not known. A minimum: the
	// storage/in-band HCAs come on top, in numbers sites choose.
	IBPorts int
	// Basis says what decided the profile (or why it is unknown), for results.
	Basis string
}

// Known reports whether any expectation comes from the platform.
func (p Platform) Known() bool { return p.GPUs > 0 || p.LinksKnown || p.NVSwitch != nil }

// gpuForm is how a GPU model attaches to its board.
type gpuForm int

const (
	formSXM      gpuForm = iota // SXM module on an HGX baseboard: every NVLink wired
	formPCIe                    // PCIe card without NVLink
	formBridge                  // PCIe card whose NVLinks exist only with a bridge fitted
	formMultiple                // Grace-Blackwell: the board decides (NVL72/NVL36 trays or NVL4)
)

// gpuModel is one row of the model table (docs/checks.md, "Platform profile").
type gpuModel struct {
	key     string // profile suffix: "h100" in "hgx-h100", "dgx-h100"
	dgx     string // the DGX product token this model ships in ("" = none)
	form    gpuForm
	nvlinks int
}

// modelOf finds a GPU model from NVML's name (nvmlDeviceGetName). The
// match is deliberately narrow: a name it does not know is an unknown
// platform, never the nearest guess. Names as NVML reports them: "NVIDIA
// A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-40GB",
// "NVIDIA H100 80GB HBM3" (SXM5), "NVIDIA H100 PCIe", "NVIDIA H100 NVL",
// "NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA B200", "NVIDIA GB200",
// "NVIDIA L40S", "NVIDIA A10" (../shared/realdata captures and the
// issues cited in docs/checks.md).
func modelOf(name string) (gpuModel, bool) {
	n := strings.ToUpper(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "NVIDIA ")
	n = strings.TrimPrefix(n, "TESLA ")
	has := strings.Contains
	switch {
	// A100 SXM4: 12 third-generation NVLinks (A100 whitepaper).
	case strings.HasPrefix(n, "A100-SXM") || strings.HasPrefix(n, "A100 SXM"):
		return gpuModel{key: "a100", dgx: "A100", form: formSXM, nvlinks: 12}, true
	// A100 PCIe: a 3-bridge NVLink pair, 600 GB/s = 12 links (A100 PCIe product brief).
	case strings.HasPrefix(n, "A100") && has(n, "PCIE"):
		return gpuModel{key: "a100", form: formBridge, nvlinks: 12}, true
	// H100 PCIe and H100 NVL: bridge pairs, 600 GB/s = 12 NVLink4 links.
	case strings.HasPrefix(n, "H100") && (has(n, "PCIE") || has(n, "NVL")):
		return gpuModel{key: "h100", form: formBridge, nvlinks: 12}, true
	// H100 SXM5 ("H100 80GB HBM3"): 18 fourth-generation NVLinks.
	case strings.HasPrefix(n, "H100") && (has(n, "HBM3") || has(n, "SXM")):
		return gpuModel{key: "h100", dgx: "H100", form: formSXM, nvlinks: 18}, true
	// H200 NVL: 2- or 4-way bridge, 900 GB/s per GPU = 18 links.
	case strings.HasPrefix(n, "H200") && has(n, "NVL"):
		return gpuModel{key: "h200", form: formBridge, nvlinks: 18}, true
	// H200 SXM ("NVIDIA H200"): 18 NVLink4 links. GH200 starts "GH200".
	case n == "H200" || strings.HasPrefix(n, "H200 ") && (has(n, "HBM3") || has(n, "SXM")):
		return gpuModel{key: "h200", dgx: "H200", form: formSXM, nvlinks: 18}, true
	// B200: 18 fifth-generation NVLinks (HGX/DGX B200).
	case n == "B200" || strings.HasPrefix(n, "B200 ") || strings.HasPrefix(n, "B200-"):
		return gpuModel{key: "b200", dgx: "B200", form: formSXM, nvlinks: 18}, true
	// GB200: 18 NVLink5 links in NVL72/NVL36 racks, but GB200 NVL4 boards
	// wire four GPUs together, and the name does not tell them apart.
	case strings.HasPrefix(n, "GB200"):
		return gpuModel{key: "gb200", form: formMultiple}, true
	// A30: a bridge pair, 200 GB/s = 4 NVLink3 links.
	case n == "A30" || strings.HasPrefix(n, "A30 ") || strings.HasPrefix(n, "A30-PCIE"):
		return gpuModel{key: "a30", form: formBridge, nvlinks: 4}, true
	}
	// PCIe cards without NVLink (their datasheets list none).
	for _, m := range []string{"L40S", "L40", "L4", "A10", "A10G", "A16", "A2", "T4"} {
		if n == m {
			return gpuModel{key: strings.ToLower(m), form: formPCIe}, true
		}
	}
	return gpuModel{}, false
}

// dgxProduct returns the model token of an NVIDIA DGX product name
// ("A100" for "DGXA100 920-23687-2531-001", "H100" for "DGX H100"), or ""
// when the DMI does not name a DGX. Spaces, hyphens and underscores are
// dropped and case ignored, so "DGX H100", "DGX-H100" and "DGXH100" match
// alike; the vendor must be NVIDIA.
func dgxProduct(d *topostate.DMI) string {
	if d == nil || !strings.EqualFold(strings.TrimSpace(d.SysVendor), "NVIDIA") {
		return ""
	}
	p := strings.ToUpper(d.ProductName)
	p = strings.NewReplacer(" ", "", "-", "", "_", "").Replace(p)
	// The DGX-2 names itself "NVIDIA DGX-2" (lablup/backend.ai#113), the
	// DGX A100 "DGXA100 920-…": a leading "NVIDIA" is allowed.
	rest, ok := strings.CutPrefix(strings.TrimPrefix(p, "NVIDIA"), "DGX")
	if !ok {
		return ""
	}
	for _, tok := range []string{"A100", "H100", "H200", "B200"} {
		if strings.HasPrefix(rest, tok) {
			return tok
		}
	}
	return ""
}

// dgxFits: the DGX H100 and DGX H200 are one chassis (NVIDIA DGX H100/H200
// User Guide), so either product name fits either GPU.
func dgxFits(product, gpu string) bool {
	if product == gpu {
		return true
	}
	hopper := func(s string) bool { return s == "H100" || s == "H200" }
	return hopper(product) && hopper(gpu)
}

// DetectPlatform decides the platform from the node's GPU model and DMI
// product name alone. It is pure: the same state gives the same profile.
func DetectPlatform(n *state.Node) Platform {
	unknown := func(why string) Platform { return Platform{Name: "unknown", Basis: why} }
	if n.NVML == nil || !n.NVML.Available {
		return unknown("no NVML: the GPU model is not known")
	}
	if n.Topology == nil {
		// Without the topology there is neither the DMI nor the word on
		// bare metal versus a guest, whose NVLinks the hypervisor decides.
		return unknown("the topology (DMI, virtualization) was not collected")
	}
	if t := n.Topology; t.Virtualization.VM() {
		// A guest sees the NVLinks and GPUs the hypervisor passes through
		// (one SXM GPU of an HGX board, without its links), not the board's.
		return unknown("a virtual machine: the hypervisor decides which GPUs and NVLinks the guest sees")
	}
	names := map[string]bool{}
	for _, g := range n.NVML.GPUs {
		if g.Name != "" {
			names[g.Name] = true
		}
	}
	if len(names) == 0 {
		return unknown("NVML names no GPU model")
	}
	if len(names) > 1 {
		var all []string
		for nm := range names {
			all = append(all, nm)
		}
		sort.Strings(all)
		return unknown("GPUs of different models (" + strings.Join(all, ", ") + ")")
	}
	var name string
	for nm := range names {
		name = nm
	}
	m, ok := modelOf(name)
	if !ok {
		return unknown(fmt.Sprintf("GPU model %q is not in the platform table", name))
	}
	dmi := n.Topology.DMI
	f, t := false, true
	switch m.form {
	case formPCIe:
		return Platform{Name: "pcie-" + m.key, NVLinks: 0, LinksKnown: true, NVSwitch: &f,
			Basis: fmt.Sprintf("%s: a PCIe card without NVLink", name)}
	case formBridge:
		return Platform{Name: "pcie-" + m.key, NVLinks: m.nvlinks, LinksKnown: true, Bridge: true, NVSwitch: &f,
			Basis: fmt.Sprintf("%s: a PCIe card with %d NVLinks when an NVLink bridge is fitted", name, m.nvlinks)}
	case formMultiple:
		return unknown(fmt.Sprintf("%s: GB200 NVL72/NVL36 trays and GB200 NVL4 boards wire NVLink differently and neither the model nor the DMI tells them apart (set platform.profile)", name))
	}
	if tok := dgxProduct(dmi); tok != "" && m.dgx != "" && dgxFits(tok, m.dgx) {
		// Every DGX A100, H100, H200 and B200 holds 8 GPUs on NVSwitches.
		// ... and one ConnectX compute port per GPU (docs/checks.md).
		return Platform{Name: "dgx-" + strings.ToLower(tok), GPUs: 8, NVLinks: m.nvlinks, LinksKnown: true, NVSwitch: &t, IBPorts: 8,
			Basis: fmt.Sprintf("DMI %q %q with %s", dmi.SysVendor, dmi.ProductName, name)}
	}
	board := "no DMI"
	if dmi != nil {
		board = fmt.Sprintf("DMI product %q", dmi.ProductName)
	}
	return Platform{Name: "hgx-" + m.key, NVLinks: m.nvlinks, LinksKnown: true,
		Basis: fmt.Sprintf("%s: an SXM GPU with %d NVLinks on any HGX board; the board is not identified (%s), so the GPU count and NVSwitches are not expected", name, m.nvlinks, board)}
}

// namedPlatforms are the profiles platform.profile can name. Sources in
// docs/checks.md ("Platform profile").
var namedPlatforms = map[string]Platform{
	"dgx-a100":   {GPUs: 8, NVLinks: 12, LinksKnown: true, NVSwitch: ptrTo(true), IBPorts: 8},
	"dgx-h100":   {GPUs: 8, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(true), IBPorts: 8},
	"dgx-h200":   {GPUs: 8, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(true), IBPorts: 8},
	"dgx-b200":   {GPUs: 8, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(true), IBPorts: 8},
	"hgx-a100-8": {GPUs: 8, NVLinks: 12, LinksKnown: true, NVSwitch: ptrTo(true)},
	"hgx-a100-4": {GPUs: 4, NVLinks: 12, LinksKnown: true, NVSwitch: ptrTo(false)},
	"hgx-h100-8": {GPUs: 8, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(true)},
	"hgx-h100-4": {GPUs: 4, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(false)},
	"hgx-h200-8": {GPUs: 8, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(true)},
	"hgx-h200-4": {GPUs: 4, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(false)},
	"hgx-b200-8": {GPUs: 8, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(true)},
	// A GB200 NVL72/NVL36 compute tray: two Grace CPUs, four Blackwell
	// GPUs, each with 18 NVLinks to the rack's NVLink switch trays.
	"gb200-nvl": {GPUs: 4, NVLinks: 18, LinksKnown: true, NVSwitch: ptrTo(true)},
	// PCIe cards without NVLink, any count.
	"pcie": {NVLinks: 0, LinksKnown: true, NVSwitch: ptrTo(false)},
}

// PlatformNames lists the profiles platform.profile accepts, sorted.
func PlatformNames() []string {
	out := []string{"auto", "none"}
	for k := range namedPlatforms {
		out = append(out, k)
	}
	sort.Strings(out[2:])
	return out
}

func ptrTo[T any](v T) *T { return &v }

// PlatformFor is the platform the checks judge n against: the config's
// profile and overrides where set, detection otherwise.
func (cfg *Config) PlatformFor(n *state.Node) Platform {
	pc := cfg.Platform
	var p Platform
	switch pc.Profile {
	case "none":
		return Platform{Name: "none", Basis: "platform.profile none in the config: no platform expectations"}
	case "", "auto":
		p = DetectPlatform(n)
	default:
		p = namedPlatforms[pc.Profile]
		p.Name = pc.Profile
		p.Basis = "platform.profile " + pc.Profile + " in the config"
	}
	var set []string
	if pc.GPUs > 0 {
		p.GPUs = pc.GPUs
		set = append(set, fmt.Sprintf("gpus %d", pc.GPUs))
	}
	if pc.NVLinksPerGPU != nil {
		p.NVLinks, p.LinksKnown, p.Bridge = *pc.NVLinksPerGPU, true, false
		set = append(set, fmt.Sprintf("nvlinks_per_gpu %d", *pc.NVLinksPerGPU))
	}
	if pc.NVSwitch != nil {
		p.NVSwitch = ptrTo(*pc.NVSwitch)
		set = append(set, fmt.Sprintf("nvswitch %t", *pc.NVSwitch))
	}
	if len(set) > 0 {
		if p.Name == "unknown" {
			p.Name, p.Basis = "config", "platform in the config ("+strings.Join(set, ", ")+"); detection: "+p.Basis
		} else {
			p.Basis += "; platform in the config sets " + strings.Join(set, ", ")
		}
	}
	return p
}

// PlatformConfig overrides the detected platform (docs/checks.md,
// "Platform profile"). Profile is "auto" (default: detect), "none" (no
// platform expectations: nvlink.state compares the node's GPUs with each
// other, as before platforms existed) or a named profile; the numbers
// override single fields of whichever profile applies.
type PlatformConfig struct {
	Profile       string `yaml:"profile"`
	GPUs          int    `yaml:"gpus"`
	NVLinksPerGPU *int   `yaml:"nvlinks_per_gpu"`
	NVSwitch      *bool  `yaml:"nvswitch"`
}

// validate reports a clear error for each bad field.
func (pc PlatformConfig) validate(bad func(string, ...any)) {
	switch _, named := namedPlatforms[pc.Profile]; {
	case pc.Profile == "" || pc.Profile == "auto" || named:
	case pc.Profile == "none":
		if pc.GPUs != 0 || pc.NVLinksPerGPU != nil || pc.NVSwitch != nil {
			bad("platform: profile none imposes no expectations, but gpus, nvlinks_per_gpu or nvswitch is set too")
		}
	default:
		bad("platform.profile: %q is not a known profile (one of %s)", pc.Profile, strings.Join(PlatformNames(), ", "))
	}
	if pc.GPUs > maxGPUs {
		bad("platform.gpus: %d is more GPUs than a node holds (at most %d)", pc.GPUs, maxGPUs)
	}
	if l := pc.NVLinksPerGPU; l != nil && (*l < 0 || *l > 18) {
		bad("platform.nvlinks_per_gpu: %d, a GPU has 0 to 18 NVLinks (NVML_NVLINK_MAX_LINKS)", *l)
	}
}

// migEnabled: with MIG on, GPU-to-GPU P2P over NVLink (or PCIe) is not
// supported (NVIDIA MIG User Guide, application considerations; NCCL's
// MIG notes, NVIDIA/nccl#1716), so the links carry nothing and their state
// says nothing about the hardware.
func migEnabled(g *state.GPU) bool { return g.MIG != nil && g.MIG.Current }

// NVLinkExpectation is what nvlink.state holds one GPU to, from the
// config or the platform; ok is false where the expectation comes only
// from the node's own GPUs (unknown platform), which the metrics leave to
// the alert rule's fleet-wide comparison.
func NVLinkExpectation(g *state.GPU, p Platform, cfg *Config) (want int, ok bool) {
	if migEnabled(g) {
		return 0, true // NVLink unused under MIG: nothing is required of it
	}
	if cfg.NVLink.ExpectedLinks > 0 {
		return cfg.NVLink.ExpectedLinks, true
	}
	if !p.LinksKnown {
		return 0, false
	}
	if p.Bridge {
		if up, _ := linksUp(g); up == 0 {
			return 0, true // no bridge fitted (or every link of it lost: indistinguishable)
		}
	}
	return p.NVLinks, true
}
