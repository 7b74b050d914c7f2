package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// Issue 33, classes 5 and 7: what slurm.gres predicts must be what the
// Slurm at hand does. Both cases were seen on a real Slurm 22.05 (Debian's
// slurm-wlm, scripts/slurm-e2e.sh).
func TestSlurmGresNVMLPluginAndTypeCase(t *testing.T) {
	const h100 = "NVIDIA H100 80GB HBM3"
	const slurmConf = "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:8 CPUs=224\n"
	plugins := func(p *slurmstate.Plugins) func(n *state.Node) {
		return func(n *state.Node) { n.Slurm.Conf.Plugins = p }
	}
	debian := &slurmstate.Plugins{From: "default", Dirs: []string{"/usr/lib/x86_64-linux-gnu/slurm-wlm"}, GPUNVML: "no",
		Why: "no gpu_nvml.so in /usr/lib/x86_64-linux-gnu/slurm-wlm"}
	withNVML := &slurmstate.Plugins{From: "PluginDir", Dirs: []string{"/usr/lib64/slurm"}, GPUNVML: "yes", GPUNVMLPath: "/usr/lib64/slurm/gpu_nvml.so"}
	unknown := &slurmstate.Plugins{From: "default", GPUNVML: "unknown", Why: "cannot read /usr/lib64/slurm: permission denied"}
	runCases(t, checkSlurmGres, []checkCase{
		// Debian's slurmd has no gpu_nvml.so: the real node went INVAL+DRAIN
		// "gres/gpu count reported lower than configured (0 < 8)".
		{name: "AutoDetect=nvml, slurmd without gpu_nvml.so", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: slurmConf, gres: "AutoDetect=nvml\n"}, plugins(debian)),
			status: Fail, summary: `AutoDetect=nvml (global AutoDetect=nvml), but slurmd has no gpu_nvml.so (no gpu_nvml.so in /usr/lib/x86_64-linux-gnu/slurm-wlm)`,
			remedy: "install a slurmd built with NVML"},
		{name: "the drain it leads to", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: slurmConf, gres: "AutoDetect=nvml\n"}, plugins(debian)),
			status: Fail, summary: `"gres/gpu count reported lower than configured (0 < 8)"`},
		{name: "AutoDetect=nvml with gpu_nvml.so", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: slurmConf, gres: "AutoDetect=nvml\n"}, plugins(withNVML)),
			status: Pass, summary: "AutoDetect=nvml (global AutoDetect=nvml)"},
		{name: "plugin directory unreadable: unknown, not judged", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: slurmConf, gres: "AutoDetect=nvml\n"}, plugins(unknown)),
			status: Pass, summary: "whether slurmd has gpu_nvml.so is unknown: cannot read /usr/lib64/slurm: permission denied"},
		{name: "not collected (older snapshot): not judged", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: slurmConf, gres: "AutoDetect=nvml\n"}, nil),
			status: Pass},
		{name: "AutoDetect=nvml without the plugin, File= lines remain", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: slurmConf, gres: "AutoDetect=nvml\nName=gpu File=/dev/nvidia[0-7]\n"}, plugins(debian)),
			status: Warn, summary: "slurmd has no gpu_nvml.so"},
		{name: "AutoDetect=off does not need the plugin", node: gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: slurmConf, gres: "AutoDetect=off\nName=gpu File=/dev/nvidia[0-7]\n"}, plugins(debian)),
			status: Pass},
		// Type=H100 in gres.conf, gpu:h100:8 in slurm.conf: 22.05 left the
		// node IDLE as gpu:H100:8 and refused --gres=gpu:h100:1 with
		// "Requested node configuration is not available"; no drain.
		{name: "Type differs from slurm.conf's only in case", node: gresNode("gpu002", 8, h100, hgxNUMA,
			confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:h100:8 CPUs=224\n", gres: "Name=gpu Type=H100 File=/dev/nvidia[0-7]\n"}, nil),
			status: Fail, summary: `Slurm 22.05 registers the node as gpu:H100:8 (gres.conf's spelling) and leaves it IDLE, then refuses --gres=gpu:h100 with "Requested node configuration is not available"`,
			remedy: "spell the type the same in both files"},
	})
	n := gresNode("gpu002", 8, h100, hgxNUMA, confs{slurm: "GresTypes=gpu\nNodeName=gpu002 Gres=gpu:h100:8 CPUs=224\n", gres: "Name=gpu Type=H100 File=/dev/nvidia[0-7]\n"}, nil)
	if r := checkSlurmGres(n, DefaultConfig()); strings.Contains(r.Summary, "count too low") || strings.Contains(r.Summary, "drain") {
		t.Errorf("a case-only Type mismatch predicts a drain 22.05 does not do: %q", r.Summary)
	}
}
