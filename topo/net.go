package topo

import (
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"path/filepath"
	"sort"
	"strings"
)

// readNetDevs maps PCI functions to their network interfaces through
// /sys/class/net/*/device. Virtual interfaces have no device link; a
// virtio NIC's link points at the virtio device, whose parent is the PCI
// function, so the nearest PCI address on the resolved path is taken.
func (fsr fsReader) readNetDevs(sysfs string) map[string][]string {
	dir := filepath.Join(sysfs, "class", "net")
	entries, err := fsr.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string][]string{}
	for _, e := range entries {
		link := filepath.Join(dir, e.Name(), "device")
		target, err := fsr.Readlink(link)
		if err != nil {
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(link), target)
		}
		parts := strings.Split(filepath.ToSlash(filepath.Clean(target)), "/")
		for i := len(parts) - 1; i >= 0; i-- {
			if busid.Valid(parts[i]) {
				id := busid.Canonical(parts[i])
				out[id] = append(out[id], e.Name())
				break
			}
		}
	}
	for id := range out {
		sort.Strings(out[id])
	}
	return out
}
