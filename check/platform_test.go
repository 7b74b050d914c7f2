package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// platformNode is a node of count GPUs named name on bare metal, with the
// DMI given (nil: none in the tree).
func platformNode(name string, count int, dmi *topostate.DMI) *state.Node {
	n := &state.Node{NVML: &state.NVML{Available: true}}
	for i := 0; i < count; i++ {
		n.NVML.GPUs = append(n.NVML.GPUs, state.GPU{Index: i, Name: name})
	}
	n.Topology = &topostate.Topology{DMI: dmi, Virtualization: topostate.Virtualization{Kind: "none"}}
	return n
}

func nvidiaDMI(product string) *topostate.DMI {
	return &topostate.DMI{SysVendor: "NVIDIA", ProductName: product}
}

func TestDetectPlatform(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name     string
		node     *state.Node
		profile  string
		gpus     int
		links    int // -1: not known
		bridge   bool
		nvswitch *bool
		basis    string
	}{
		// The DGX A100's product name as a real one reports it (dmidecode
		// -t 1 in a public capture, docs/checks.md).
		{"DGX A100 by its DMI", platformNode("NVIDIA A100-SXM4-80GB", 8, nvidiaDMI("DGXA100 920-23687-2531-001")), "dgx-a100", 8, 12, false, &yes, `"DGXA100 920-23687-2531-001"`},
		{"DGX H100", platformNode("NVIDIA H100 80GB HBM3", 8, nvidiaDMI("DGX H100")), "dgx-h100", 8, 18, false, &yes, "DGX H100"},
		// A GPU fell off the bus: the count still comes from the platform.
		{"DGX H100 with 7 GPUs visible", platformNode("NVIDIA H100 80GB HBM3", 7, nvidiaDMI("DGX H100")), "dgx-h100", 8, 18, false, &yes, ""},
		{"DGX H200 (one chassis with the H100)", platformNode("NVIDIA H200", 8, nvidiaDMI("DGX-H200")), "dgx-h200", 8, 18, false, &yes, ""},
		{"DGX B200", platformNode("NVIDIA B200", 8, nvidiaDMI("DGX B200")), "dgx-b200", 8, 18, false, &yes, ""},
		// The DGX-2 spells its product "NVIDIA DGX-2": the same prefix is allowed.
		{"DGX with an NVIDIA prefix", platformNode("NVIDIA H100 80GB HBM3", 8, nvidiaDMI("NVIDIA DGX H100")), "dgx-h100", 8, 18, false, &yes, ""},
		{"not a DGX product", platformNode("NVIDIA H100 80GB HBM3", 8, nvidiaDMI("NVIDIA HGX H100 Eval")), "hgx-h100", 0, 18, false, nil, ""},
		// The DMI says DGX A100 but the GPUs are H100s: the DMI is not
		// trusted for the count; the model alone still fixes the links.
		{"DGX name that does not fit the GPUs", platformNode("NVIDIA H100 80GB HBM3", 8, nvidiaDMI("DGXA100 920-23687-2531-001")), "hgx-h100", 0, 18, false, nil, "board is not identified"},
		{"DGX name from another vendor", platformNode("NVIDIA H100 80GB HBM3", 8, &topostate.DMI{SysVendor: "Supermicro", ProductName: "DGX H100"}), "hgx-h100", 0, 18, false, nil, ""},
		{"OEM HGX H100", platformNode("NVIDIA H100 80GB HBM3", 8, &topostate.DMI{SysVendor: "Dell Inc.", ProductName: "PowerEdge XE9680"}), "hgx-h100", 0, 18, false, nil, `"PowerEdge XE9680"`},
		{"HGX A100 without DMI", platformNode("NVIDIA A100-SXM4-40GB", 4, nil), "hgx-a100", 0, 12, false, nil, "no DMI"},
		{"L40S box", platformNode("NVIDIA L40S", 4, &topostate.DMI{SysVendor: "Supermicro"}), "pcie-l40s", 0, 0, false, &no, "without NVLink"},
		{"A10", platformNode("NVIDIA A10", 2, nil), "pcie-a10", 0, 0, false, &no, ""},
		{"A100 PCIe (bridge optional)", platformNode("NVIDIA A100 80GB PCIe", 4, nil), "pcie-a100", 0, 12, true, &no, "bridge"},
		{"A100 PCIe, older name", platformNode("NVIDIA A100-PCIE-40GB", 2, nil), "pcie-a100", 0, 12, true, &no, ""},
		{"H100 PCIe", platformNode("NVIDIA H100 PCIe", 2, nil), "pcie-h100", 0, 12, true, &no, ""},
		{"H100 NVL", platformNode("NVIDIA H100 NVL", 2, nil), "pcie-h100", 0, 12, true, &no, ""},
		{"H200 NVL", platformNode("NVIDIA H200 NVL", 4, nil), "pcie-h200", 0, 18, true, &no, ""},
		// go-nvml's mock tables spell these so, as the real parts do.
		{"H200 SXM, long name", platformNode("NVIDIA H200 141GB HBM3e", 8, nil), "hgx-h200", 0, 18, false, nil, ""},
		{"B200, long name", platformNode("NVIDIA B200 180GB HBM3e", 8, nvidiaDMI("DGX B200")), "dgx-b200", 8, 18, false, &yes, ""},
		{"A30", platformNode("NVIDIA A30-PCIE-24GB", 2, nil), "pcie-a30", 0, 4, true, &no, ""},
		{"A100 PCIe 80GB, older name", platformNode("NVIDIA A100-PCIE-80GB", 2, nil), "pcie-a100", 0, 12, true, &no, ""},
		// GH200 contains "H200": it must not be read as one.
		{"GH200 is not an H200", platformNode("NVIDIA GH200 480GB", 1, nil), "unknown", 0, -1, false, nil, "not in the platform table"},
		{"GB200 abstains", platformNode("NVIDIA GB200", 4, nil), "unknown", 0, -1, false, nil, "GB200 NVL4"},
		{"unlisted model", platformNode("NVIDIA H800", 8, nil), "unknown", 0, -1, false, nil, `"NVIDIA H800" is not in the platform table`},
		{"mixed models", func() *state.Node {
			n := platformNode("NVIDIA L40S", 2, nil)
			n.NVML.GPUs[1].Name = "NVIDIA A10"
			return n
		}(), "unknown", 0, -1, false, nil, "different models"},
		{"a VM sees what the hypervisor passes", func() *state.Node {
			n := platformNode("NVIDIA H100 80GB HBM3", 1, &topostate.DMI{SysVendor: "Google", ProductName: "Google Compute Engine"})
			n.Topology.Virtualization.Kind = "vm"
			return n
		}(), "unknown", 0, -1, false, nil, "virtual machine"},
		{"no NVML", &state.Node{NVML: &state.NVML{}}, "unknown", 0, -1, false, nil, "no NVML"},
		// The topology collector failed (or an old snapshot): bare metal or
		// a guest cannot be told, nor the DMI read.
		{"no topology", func() *state.Node {
			n := platformNode("NVIDIA H100 80GB HBM3", 8, nil)
			n.Topology = nil
			return n
		}(), "unknown", 0, -1, false, nil, "topology (DMI, virtualization) was not collected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DetectPlatform(tc.node)
			if p.Name != tc.profile || p.GPUs != tc.gpus || p.Bridge != tc.bridge {
				t.Errorf("profile %s, %d GPUs, bridge %t; want %s, %d, %t (%s)", p.Name, p.GPUs, p.Bridge, tc.profile, tc.gpus, tc.bridge, p.Basis)
			}
			if tc.links < 0 && p.LinksKnown || tc.links >= 0 && (!p.LinksKnown || p.NVLinks != tc.links) {
				t.Errorf("links %d (known %t), want %d", p.NVLinks, p.LinksKnown, tc.links)
			}
			if (p.NVSwitch == nil) != (tc.nvswitch == nil) || p.NVSwitch != nil && *p.NVSwitch != *tc.nvswitch {
				t.Errorf("nvswitch %v, want %v", p.NVSwitch, tc.nvswitch)
			}
			if !strings.Contains(p.Basis, tc.basis) {
				t.Errorf("basis %q, want it to contain %q", p.Basis, tc.basis)
			}
			if tc.profile == "unknown" && p.Known() {
				t.Errorf("an unknown platform imposes %+v", p)
			}
		})
	}
}

func TestPlatformConfig(t *testing.T) {
	h100 := platformNode("NVIDIA H100 80GB HBM3", 8, nil)
	for _, tc := range []struct {
		yaml    string
		profile string
		gpus    int
		links   int
		basis   string
	}{
		{"", "hgx-h100", 0, 18, "board is not identified"},
		{"platform: {profile: auto}\n", "hgx-h100", 0, 18, ""},
		{"platform: {gpus: 8, nvswitch: true}\n", "hgx-h100", 8, 18, "platform in the config sets gpus 8, nvswitch true"},
		{"platform: {profile: hgx-h100-4}\n", "hgx-h100-4", 4, 18, "platform.profile hgx-h100-4"},
		{"platform: {profile: dgx-h100, nvlinks_per_gpu: 16}\n", "dgx-h100", 8, 16, "nvlinks_per_gpu 16"},
		{"platform: {profile: none}\n", "none", 0, -1, "no platform expectations"},
	} {
		cfg := DefaultConfig()
		if err := ParseConfig([]byte(tc.yaml), cfg); err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		p := cfg.PlatformFor(h100)
		if p.Name != tc.profile || p.GPUs != tc.gpus || (tc.links < 0) == p.LinksKnown || tc.links >= 0 && p.NVLinks != tc.links {
			t.Errorf("%q: %+v, want %s %d GPUs %d links", tc.yaml, p, tc.profile, tc.gpus, tc.links)
		}
		if !strings.Contains(p.Basis, tc.basis) {
			t.Errorf("%q: basis %q, want %q", tc.yaml, p.Basis, tc.basis)
		}
	}
	// Unknown platform plus config numbers: the config's profile.
	cfg := DefaultConfig()
	if err := ParseConfig([]byte("platform: {gpus: 4}\n"), cfg); err != nil {
		t.Fatal(err)
	}
	if p := cfg.PlatformFor(platformNode("NVIDIA H800", 4, nil)); p.Name != "config" || p.GPUs != 4 || p.LinksKnown {
		t.Errorf("H800 with gpus 4: %+v", p)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"platform: {profile: dgx-h1000}\n", `platform.profile: "dgx-h1000" is not a known profile (one of auto, none, dgx-a100`},
		{"platform: {profile: none, gpus: 8}\n", "profile none imposes no expectations"},
		{"platform: {nvlinks_per_gpu: 19}\n", "platform.nvlinks_per_gpu: 19, a GPU has 0 to 18"},
		{"platform: {nvlinks_per_gpu: -1}\n", "platform.nvlinks_per_gpu: -1"},
		{"platform: {gpus: -8}\n", "platform.gpus: -8 is negative"},
		{"platform: {gpus: 5000}\n", "platform.gpus: 5000 is more GPUs"},
		{"platform: {nvswitch: maybe}\n", "cannot unmarshal"},
		{"platform: {gpu: 8}\n", "field gpu not found"},
	} {
		err := ParseConfig([]byte(tc.yaml), DefaultConfig())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
