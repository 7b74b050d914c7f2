package topo

import (
	"errors"
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/busid"
	"github.com/gpuprobe/gpuprobe/internal/safefile"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Capture copies the part of a sysfs and procfs tree that Collect reads
// into dst/sys and dst/proc, keeping symlinks as symlinks (the PCI
// hierarchy lives in them), so the node can be judged elsewhere with
// --path.sysfs dst/sys --path.procfs dst/proc. Config space is copied as
// the caller may read it: run as root for ACS. Files that vanish or cannot
// be read are skipped and listed in the notes.
//
// dst is written as root, often under /tmp: it must be new, or an empty
// directory root owns, and every file, folder and link under it is made
// with no-follow semantics (internal/safefile.Dir), so a link planted in
// it is refused, never written through.
func Capture(sysfs, procfs, dst string) ([]string, error) {
	sys := root{src: rootOr(sysfs, "/sys"), dst: "sys"}
	proc := root{src: rootOr(procfs, "/proc"), dst: "proc"}
	if _, err := os.Stat(filepath.Join(sys.src, "bus", "pci", "devices")); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	d, err := safefile.CreateDir(dst)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	defer d.Close()
	c := &capturer{dst: d, done: map[string]bool{}}
	for _, r := range []root{sys, proc} {
		if err := d.MkdirAll(r.dst); err != nil {
			return nil, fmt.Errorf("capture: %w", err)
		}
	}
	pciAttrs := []string{"vendor", "device", "class", "numa_node", "local_cpulist", "current_link_speed", "max_link_speed",
		"current_link_width", "max_link_width", "config", "driver", "iommu_group"}
	// Every PCI function, and through its link the directories above it.
	for _, name := range c.list(sys, "bus/pci/devices") {
		link := "bus/pci/devices/" + name
		real := c.copyLink(sys, link)
		for _, a := range pciAttrs {
			c.copy(sys, real+"/"+a)
		}
		for dir := filepath.Dir(real); strings.HasPrefix(dir, "devices/pci"); dir = filepath.Dir(dir) {
			if busid.Valid(filepath.Base(dir)) {
				for _, a := range pciAttrs {
					c.copy(sys, dir+"/"+a)
				}
			}
		}
	}
	for _, name := range c.list(sys, "class/infiniband") {
		real := c.copyLink(sys, "class/infiniband/"+name)
		for _, a := range []string{"fw_ver", "board_id", "hca_type", "node_guid", "device"} {
			c.copy(sys, real+"/"+a)
		}
		for _, port := range c.list(sys, real+"/ports") {
			for _, a := range []string{"state", "phys_state", "rate", "link_layer"} {
				c.copy(sys, real+"/ports/"+port+"/"+a)
			}
		}
	}
	for _, name := range c.list(sys, "class/net") {
		real := c.copyLink(sys, "class/net/"+name)
		c.copy(sys, real+"/device")
	}
	for _, name := range c.list(sys, "devices/system/node") {
		if strings.HasPrefix(name, "node") {
			c.copy(sys, "devices/system/node/"+name+"/cpulist")
		}
	}
	for _, name := range c.list(sys, "devices/system/cpu") {
		if rest, ok := strings.CutPrefix(name, "cpu"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			c.copy(sys, "devices/system/cpu/"+name+"/topology/physical_package_id")
			c.copy(sys, "devices/system/cpu/"+name+"/topology/core_id")
		}
	}
	for _, name := range c.list(sys, "kernel/iommu_groups") {
		c.copy(sys, "kernel/iommu_groups/"+name+"/type")
	}
	for _, f := range dmiFiles {
		c.copy(sys, "class/dmi/id/"+f)
	}
	for _, f := range peerMemFiles {
		c.copy(sys, f.rel)
	}
	for _, f := range []string{"firmware/dmi/entries/0-0/raw", "hypervisor/type", "firmware/devicetree/base/hypervisor/compatible"} {
		c.copy(sys, f)
	}
	for _, f := range []string{"cpuinfo", "cmdline", "sys/kernel/osrelease", "driver/nvidia/version", "xen/capabilities"} {
		c.copy(proc, f)
	}
	return c.notes, nil
}

// root is a source tree and the folder under the capture it is copied to.
type root struct{ src, dst string }

type capturer struct {
	dst   *safefile.Dir
	done  map[string]bool // copied already (bridges above several devices)
	notes []string
}

// list names the entries of a directory; a missing one is empty.
func (c *capturer) list(r root, rel string) []string {
	entries, err := os.ReadDir(filepath.Join(r.src, filepath.FromSlash(rel)))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.notes = append(c.notes, err.Error())
		}
		return nil
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// copyLink copies a symlink and returns what it points at, relative to
// the root (the real directory whose files the caller copies next).
func (c *capturer) copyLink(r root, rel string) string {
	c.copy(r, rel)
	src := filepath.Join(r.src, filepath.FromSlash(rel))
	target, err := os.Readlink(src)
	if err != nil {
		return rel
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(src), target)
	}
	out, err := filepath.Rel(r.src, filepath.Clean(target))
	if err != nil || strings.HasPrefix(out, "..") {
		c.notes = append(c.notes, fmt.Sprintf("%s points outside %s", src, r.src))
		return rel
	}
	return filepath.ToSlash(out)
}

// copy copies one file or symlink; a missing one is skipped quietly.
func (c *capturer) copy(r root, rel string) {
	src := filepath.Join(r.src, filepath.FromSlash(rel))
	dst := path.Join(r.dst, rel)
	if c.done[dst] {
		return
	}
	c.done[dst] = true
	fi, err := os.Lstat(src)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.notes = append(c.notes, err.Error())
		}
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err == nil {
			err = c.dst.Symlink(target, dst)
		}
		if err != nil {
			c.notes = append(c.notes, err.Error())
		}
		return
	}
	if !fi.Mode().IsRegular() {
		return
	}
	// sysfs sizes lie (4096 for any attribute): read to EOF, bounded.
	f, err := os.Open(src)
	if err != nil {
		c.notes = append(c.notes, err.Error())
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		c.notes = append(c.notes, fmt.Sprintf("reading %s: %v", src, err))
		return
	}
	if err := c.dst.WriteFile(dst, b, 0o644); err != nil {
		c.notes = append(c.notes, err.Error())
	}
}
