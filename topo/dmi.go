package topo

import (
	"path/filepath"

	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// readDMI reads the three DMI attributes the platform profile needs
// (check/platform.go). All three are world-readable (mode 0444; only the
// serial numbers and UUID are root's). Nil when none is there: no SMBIOS.
func (fsr fsReader) readDMI(sysfs string) *topostate.DMI {
	dir := filepath.Join(sysfs, "class", "dmi", "id")
	var d topostate.DMI
	found := false
	for _, a := range []struct {
		file string
		dst  *string
	}{{"sys_vendor", &d.SysVendor}, {"product_name", &d.ProductName}, {"board_name", &d.BoardName}} {
		if v, ok, _ := fsr.readAttr(filepath.Join(dir, a.file)); ok {
			*a.dst, found = v, true
		}
	}
	if !found {
		return nil
	}
	return &d
}
