package topo

import (
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"path/filepath"
	"sort"
	"strings"
)

// readIOMMU works out whether DMA from the GPUs and NICs is translated.
// Each IOMMU group's default domain type says it directly (kernel 5.11+:
// "identity" is passthrough, "DMA"/"DMA-FQ" translate); on older kernels
// the command line (iommu=pt) is all there is.
func (fsr fsReader) readIOMMU(sysfs, procfs string, devs []*topostate.PCIFunction) topostate.IOMMU {
	out := topostate.IOMMU{Cmdline: fsr.iommuCmdline(procfs)}
	groups := filepath.Join(sysfs, "kernel", "iommu_groups")
	entries, err := fsr.ReadDir(groups)
	if err != nil || len(entries) == 0 {
		out.Mode = "off"
		out.Evidence = "no IOMMU groups in " + groups
		return out
	}
	types := map[string]int{}
	unknown := 0
	for _, d := range devs {
		if d.IOMMUGroup == "" {
			continue
		}
		file := filepath.Join(groups, d.IOMMUGroup, "type")
		t, ok, _ := fsr.readAttr(file)
		if !ok {
			unknown++
			continue
		}
		types[t]++
		if t == "DMA" || t == "DMA-FQ" {
			out.Translated = append(out.Translated, d.BusID)
		}
	}
	sort.Strings(out.Translated)
	pt := hasAny(out.Cmdline, "iommu=pt", "iommu.passthrough=1")
	switch {
	case len(types) == 0 && unknown == 0:
		out.Mode = "passthrough"
		out.Evidence = "no GPU or NIC is in an IOMMU group (" + groups + ")"
	case len(types) == 0 && pt:
		out.Mode = "passthrough"
		out.Evidence = "kernel command line has " + strings.Join(out.Cmdline, " ") + " (no group type files: kernel older than 5.11)"
	case len(types) == 0:
		out.Mode = "unknown"
		out.Evidence = "IOMMU groups have no type file (kernel older than 5.11) and the command line has no iommu=pt"
	case len(out.Translated) == 0:
		out.Mode = "passthrough"
		out.Evidence = "IOMMU group type " + typeList(types) + " in " + groups
	case types["identity"] == 0:
		out.Mode = "translated"
		out.Evidence = "IOMMU group type " + typeList(types) + " in " + groups
	default:
		out.Mode = "mixed"
		out.Evidence = "IOMMU group types " + typeList(types) + " in " + groups
	}
	return out
}

func typeList(types map[string]int) string {
	var ks []string
	for k := range types {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// iommuCmdline picks the IOMMU-related kernel parameters.
func (fsr fsReader) iommuCmdline(procfs string) []string {
	line, _, _ := fsr.readAttr(filepath.Join(procfs, "cmdline"))
	var out []string
	for _, f := range strings.Fields(line) {
		for _, p := range []string{"iommu=", "intel_iommu=", "amd_iommu=", "iommu.passthrough=", "iommu.strict="} {
			if strings.HasPrefix(f, p) {
				out = append(out, f)
			}
		}
	}
	return out
}

func hasAny(list []string, want ...string) bool {
	for _, l := range list {
		for _, w := range want {
			if l == w {
				return true
			}
		}
	}
	return false
}
