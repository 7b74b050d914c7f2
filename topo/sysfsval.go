package topo

import (
	"errors"
	"fmt"
	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"io/fs"
	"strconv"
	"strings"
)

// readAttr reads a sysfs attribute, trimmed. ok is false when it does not
// exist; any other failure is an error naming the file.
func (fsr fsReader) readAttr(path string) (string, bool, error) {
	b, err := fsr.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), true, nil
}

// ParseHexID reads an ID attribute ("0x10de", "0x030200").
func ParseHexID(s string) (uint32, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	if t == "" || len(t) > 8 {
		return 0, fmt.Errorf("ID %q: want hex like 0x10de", s)
	}
	v, err := strconv.ParseUint(t, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("ID %q: want hex like 0x10de", s)
	}
	return uint32(v), nil
}

// ParseNUMANode reads numa_node: a node number, or -1 when the firmware
// gave no proximity.
func ParseNUMANode(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < -1 || n >= cpulist.Max {
		return -1, fmt.Errorf("numa_node %q: want a node number or -1", s)
	}
	return n, nil
}

// ParseLinkSpeed reads current_link_speed/max_link_speed ("16.0 GT/s PCIe",
// older kernels "8 GT/s", "Unknown") into GT/s; ok is false for Unknown.
func ParseLinkSpeed(s string) (gts float64, ok bool, err error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.HasPrefix(t, "Unknown") {
		return 0, false, nil
	}
	num, unit, _ := strings.Cut(t, " ")
	if !strings.HasPrefix(strings.TrimSpace(unit), "GT/s") {
		return 0, false, fmt.Errorf("link speed %q: want \"N GT/s\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || v > 1024 {
		return 0, false, fmt.Errorf("link speed %q: want \"N GT/s\"", s)
	}
	return v, true, nil
}

// PCIeGen maps a link speed to its PCIe generation (0 when unknown).
func PCIeGen(gts float64) int {
	for i, s := range []float64{2.5, 5, 8, 16, 32, 64, 128} {
		if gts > s-0.1 && gts < s+0.1 {
			return i + 1
		}
	}
	return 0
}

// ParseLinkWidth reads current_link_width/max_link_width ("16", "x16").
// Devices without a link report 0 or 255 ("unknown"); ok is false then.
func ParseLinkWidth(s string) (w int, ok bool, err error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "x")
	if t == "" {
		return 0, false, nil
	}
	v, err := strconv.Atoi(t)
	if err != nil || v < 0 {
		return 0, false, fmt.Errorf("link width %q: want a lane count", s)
	}
	if v == 0 || v == 255 || v > 32 {
		return 0, false, nil
	}
	return v, true, nil
}

// isGPUClass reports whether a class is a display controller of the kinds
// NVIDIA GPUs use: VGA (0x0300) or 3D (0x0302).
func isGPUClass(class uint32) bool {
	c := class >> 8
	return c == 0x0300 || c == 0x0302
}

const vendorNVIDIA = 0x10de
