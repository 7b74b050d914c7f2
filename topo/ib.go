//go:build linux

package topo

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"os"
	"path/filepath"
	"sort"

	"github.com/prometheus/procfs/sysfs"
)

// readIB lists the RDMA devices with prometheus/procfs, one device at a
// time: its InfiniBandClass gives up on the whole class when one device
// lacks a file, and one odd HCA must not hide the others.
func readIB(root string) ([]topostate.NIC, error) {
	dir := filepath.Join(root, "class", "infiniband")
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil, nil
	}
	fs, err := sysfs.NewFS(root)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", root, err)
	}
	names, err := fs.InfiniBandClassDevices()
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []topostate.NIC
	for _, name := range names {
		nic := topostate.NIC{Name: name, PCIFunction: topostate.PCIFunction{NUMANode: -1}}
		if target, err := os.Readlink(filepath.Join(dir, name, "device")); err == nil {
			nic.BusID = NormalizeBusID(filepath.Base(target))
		}
		dev, err := fs.InfiniBandDevice(name)
		if err != nil {
			nic.Error = fmt.Sprintf("%s: %v", filepath.Join(dir, name), err)
			out = append(out, nic)
			continue
		}
		nic.HCAType, nic.FWVersion, nic.BoardID = dev.HCAType, dev.FirmwareVersion, dev.BoardID
		for _, p := range dev.Ports {
			nic.Ports = append(nic.Ports, topostate.IBPort{
				Port: int(p.Port), State: p.State, StateID: int(p.StateID),
				PhysState: p.PhysState, PhysStateID: int(p.PhysStateID),
				// procfs gives bytes per second; IB speaks Gb/s.
				RateGbps:  float64(p.Rate) * 8 / 1e9,
				LinkLayer: p.LinkLayer,
			})
		}
		sort.Slice(nic.Ports, func(i, j int) bool { return nic.Ports[i].Port < nic.Ports[j].Port })
		out = append(out, nic)
	}
	return out, nil
}
