//go:build linux

package topo

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/state/topostate"
)

// readIB lists the RDMA devices under <sysfs>/class/infiniband, one device
// at a time: a device that lacks a file is reported with its error and does
// not hide the others.
func (fsr fsReader) readIB(root string) ([]topostate.NIC, error) {
	dir := filepath.Join(root, "class", "infiniband")
	entries, err := fsr.ReadDir(dir)
	if err != nil {
		if _, serr := fsr.Stat(dir); serr != nil {
			return nil, nil // no RDMA device on this node
		}
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []topostate.NIC
	for _, e := range entries {
		name := e.Name()
		nic := topostate.NIC{Name: name, PCIFunction: topostate.PCIFunction{NUMANode: -1}}
		dev := filepath.Join(dir, name)
		if target, err := fsr.Readlink(filepath.Join(dev, "device")); err == nil {
			nic.BusID = busid.Canonical(filepath.Base(target))
		}
		if err := fsr.readIBDevice(dev, &nic); err != nil {
			nic.Error = err.Error()
		}
		out = append(out, nic)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readIBDevice reads what the ib_core driver exports for one device and its
// ports (Documentation/ABI/stable/sysfs-class-infiniband).
func (fsr fsReader) readIBDevice(dev string, nic *topostate.NIC) error {
	nic.HCAType, _, _ = fsr.readAttr(filepath.Join(dev, "hca_type"))
	nic.BoardID, _, _ = fsr.readAttr(filepath.Join(dev, "board_id"))
	fw, ok, err := fsr.readAttr(filepath.Join(dev, "fw_ver"))
	if err != nil || !ok {
		return fmt.Errorf("%s: no fw_ver (%v)", dev, err)
	}
	nic.FWVersion = fw
	ports, err := fsr.ReadDir(filepath.Join(dev, "ports"))
	if err != nil {
		return fmt.Errorf("%s: listing ports: %w", dev, err)
	}
	for _, pe := range ports {
		n, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		pd := filepath.Join(dev, "ports", pe.Name())
		p := topostate.IBPort{Port: n}
		for _, a := range []struct {
			file string
			id   *int
			name *string
		}{{"state", &p.StateID, &p.State}, {"phys_state", &p.PhysStateID, &p.PhysState}} {
			v, ok, err := fsr.readAttr(filepath.Join(pd, a.file))
			if err != nil || !ok {
				return fmt.Errorf("%s: no %s (%v)", pd, a.file, err)
			}
			*a.id, *a.name = parseIBState(v)
		}
		if rate, ok, _ := fsr.readAttr(filepath.Join(pd, "rate")); ok {
			p.RateGbps = parseIBRate(rate)
		}
		p.LinkLayer, _, _ = fsr.readAttr(filepath.Join(pd, "link_layer"))
		nic.Ports = append(nic.Ports, p)
	}
	sort.Slice(nic.Ports, func(i, j int) bool { return nic.Ports[i].Port < nic.Ports[j].Port })
	return nil
}

// parseIBState reads "4: ACTIVE" or "5: LinkUp" into its number and name.
func parseIBState(s string) (int, string) {
	num, name, ok := strings.Cut(s, ":")
	id, err := strconv.Atoi(strings.TrimSpace(num))
	if !ok || err != nil {
		return 0, strings.TrimSpace(s)
	}
	return id, strings.TrimSpace(name)
}

// parseIBRate reads "400 Gb/sec (4X NDR)" or "2.5 Gb/sec (1X SDR)" in Gb/s.
func parseIBRate(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	// "NaN" or "Inf" would make the report unencodable as JSON, and a
	// negative rate is no rate: both read as unknown (fuzz audit).
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}
