package slurmstate

import (
	"fmt"
	"strconv"
	"strings"
)

// VisibleDevices is a parsed CUDA_VISIBLE_DEVICES.
//
// CUDA's rules (CUDA programming guide, environment variables): entries are
// indexes, full or unique-prefix GPU UUIDs ("GPU-8932f937"), or MIG devices
// ("MIG-<uuid>" or "MIG-GPU-<uuid>/<gi>/<ci>"); an empty value hides every GPU;
// the first invalid entry hides itself and everything after it. Slurm writes
// "NoDevFiles" when the GRES has no device files to bind.
type VisibleDevices struct {
	Raw string `json:"raw"`
	// Set is false when the variable is absent: CUDA then sees every GPU.
	Set        bool        `json:"set"`
	NoDevFiles bool        `json:"no_dev_files,omitempty"`
	Entries    []DeviceRef `json:"entries"`
	// Truncated is set when an entry is invalid; Invalid is that entry (it
	// may be empty, as in "0,,1"): it and all later entries are hidden.
	Truncated bool   `json:"truncated,omitempty"`
	Invalid   string `json:"invalid,omitempty"`
	// Hidden counts the entries after Invalid that CUDA therefore ignores.
	Hidden int `json:"hidden,omitempty"`
}

// RefKind says how an entry names its device.
type RefKind string

// Entry kinds.
const (
	RefIndex RefKind = "index"
	RefUUID  RefKind = "uuid"
	RefMIG   RefKind = "mig"
)

// DeviceRef is one entry of CUDA_VISIBLE_DEVICES.
type DeviceRef struct {
	Raw   string  `json:"raw"`
	Kind  RefKind `json:"kind"`
	Index int     `json:"index,omitempty"`
	// ParentUUID is the GPU UUID embedded in "MIG-GPU-<uuid>/gi/ci" entries.
	ParentUUID string `json:"parent_uuid,omitempty"`
}

// ParseVisibleDevices reads CUDA_VISIBLE_DEVICES as CUDA would; set says
// whether the variable exists at all (unset and empty differ).
func ParseVisibleDevices(raw string, set bool) *VisibleDevices {
	v := &VisibleDevices{Raw: raw, Set: set, Entries: []DeviceRef{}}
	if !set {
		return v
	}
	s := strings.TrimSpace(raw)
	if s == "" {
		return v
	}
	if strings.EqualFold(s, "NoDevFiles") {
		v.NoDevFiles = true
		return v
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		ref, ok := parseRef(strings.TrimSpace(p))
		if !ok {
			v.Truncated, v.Invalid = true, p
			v.Hidden = len(parts) - i - 1
			break
		}
		v.Entries = append(v.Entries, ref)
	}
	return v
}

func parseRef(p string) (DeviceRef, bool) {
	r := DeviceRef{Raw: p}
	switch {
	case isDigits(p):
		n, err := strconv.Atoi(p)
		if err != nil {
			return r, false
		}
		r.Kind, r.Index = RefIndex, n
		return r, true
	case hasPrefixFold(p, "GPU-"):
		if !isUUIDish(p[4:]) {
			return r, false
		}
		r.Kind = RefUUID
		return r, true
	case hasPrefixFold(p, "MIG-GPU-"):
		uuid, _, _ := strings.Cut(p[4:], "/")
		if !isUUIDish(uuid[4:]) {
			return r, false
		}
		r.Kind, r.ParentUUID = RefMIG, uuid
		return r, true
	case hasPrefixFold(p, "MIG-"):
		if !isUUIDish(p[4:]) {
			return r, false
		}
		r.Kind = RefMIG
		return r, true
	}
	return r, false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// isUUIDish accepts a UUID or a prefix of one: hex digits and dashes.
func isUUIDish(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

// IndexBased reports whether any entry is a plain index, the form whose
// meaning depends on CUDA_DEVICE_ORDER.
func (v *VisibleDevices) IndexBased() bool {
	for _, e := range v.Entries {
		if e.Kind == RefIndex {
			return true
		}
	}
	return false
}

// GPUIdent is what resolution needs to know of a GPU NVML enumerates:
// its position (NVML index), UUID, and the UUIDs of its MIG instances.
type GPUIdent struct {
	Index    int
	UUID     string
	MIGUUIDs []string
	// MIG is set when the GPU is in MIG mode (NVML's current mode). CUDA
	// then enumerates its MIG instances, not the GPU, so a plain index
	// in CUDA_VISIBLE_DEVICES no longer counts NVML's GPUs.
	MIG bool
}

// Resolved is one CUDA_VISIBLE_DEVICES entry mapped to an NVML GPU.
type Resolved struct {
	Ref DeviceRef
	// GPU is the NVML index, or -1 when the entry does not resolve.
	GPU int
	// Err explains a failed resolution.
	Err string
	// Unverifiable marks a MIG instance UUID that no GPU lists (a node state
	// collected without MIG instances), or a plain index on a node with a
	// GPU in MIG mode (it counts CUDA's devices, MIG instances, not NVML's
	// GPUs): it can be neither confirmed nor refuted.
	Unverifiable bool
}

// Resolve maps each entry to an NVML GPU. Indexes count NVML's enumeration,
// which is what CUDA counts with CUDA_DEVICE_ORDER=PCI_BUS_ID, and what it
// counts under a device cgroup, where NVML sees only the allowed GPUs;
// except where a GPU is in MIG mode: CUDA then counts its MIG instances, and
// an index names a CUDA device, not one of NVML's GPUs (Unverifiable).
func (v *VisibleDevices) Resolve(gpus []GPUIdent) []Resolved {
	out := make([]Resolved, 0, len(v.Entries))
	for _, e := range v.Entries {
		r := Resolved{Ref: e, GPU: -1}
		switch e.Kind {
		case RefIndex:
			if n, known, mig := cudaDevices(gpus); mig {
				// MIG mode: CUDA numbers MIG instances (one per instance of
				// a GPU in MIG mode, one per other GPU; NVIDIA MIG user
				// guide, "CUDA Device Enumeration": "CUDA applications
				// treat a CI and its parent GI as a single CUDA device"),
				// in an order NVML's indexes do not give, and how many
				// instances one process may use depends on the CUDA
				// version. A real report (nanoporetech/dorado#1586: Slurm
				// --gres=gpu:4 on two H200 NVL in MIG mode, four MIG
				// instances, CUDA_VISIBLE_DEVICES=0,1,2,3) used to fail
				// "index 2, but NVML sees only 2 GPUs". Only an index past
				// every device CUDA could enumerate is surely wrong.
				if known && e.Index >= n {
					r.Err = fmt.Sprintf("index %d, but CUDA can enumerate at most %d device(s) here (the MIG instances of the GPUs in MIG mode, and the other GPUs)", e.Index, n)
				} else {
					r.Unverifiable = true
					r.Err = fmt.Sprintf("index %d counts CUDA's MIG devices, which NVML's GPU indexes do not number", e.Index)
				}
			} else if e.Index < len(gpus) {
				r.GPU = gpus[e.Index].Index
			} else {
				r.Err = fmt.Sprintf("index %d, but NVML sees only %d GPUs", e.Index, len(gpus))
			}
		case RefUUID:
			r.GPU, r.Err = byUUID(e.Raw, gpus)
		case RefMIG:
			if e.ParentUUID != "" {
				r.GPU, r.Err = byUUID(e.ParentUUID, gpus)
			} else if g := byMIGUUID(e.Raw, gpus); g >= 0 {
				r.GPU = g
			} else {
				r.Unverifiable = true
				r.Err = "MIG instance " + e.Raw + " cannot be mapped to its GPU from the collected state"
			}
		}
		out = append(out, r)
	}
	return out
}

// cudaDevices counts what CUDA can enumerate when a GPU is in MIG mode:
// the MIG instances of each such GPU, and each other GPU. mig is false
// when no GPU is in MIG mode; known is false when a GPU in MIG mode lists
// no instances (not collected, or none made: then the count is unknown).
func cudaDevices(gpus []GPUIdent) (n int, known, mig bool) {
	known = true
	for _, g := range gpus {
		if !g.MIG {
			n++
			continue
		}
		mig = true
		if len(g.MIGUUIDs) == 0 {
			known = false
		}
		n += len(g.MIGUUIDs)
	}
	return n, known, mig
}

// byMIGUUID finds the GPU that holds the MIG instance (full UUID or a
// prefix, as CUDA accepts); -1 when none or several do.
func byMIGUUID(want string, gpus []GPUIdent) int {
	found := -1
	for _, g := range gpus {
		for _, u := range g.MIGUUIDs {
			if len(u) >= len(want) && strings.EqualFold(u[:len(want)], want) {
				if found >= 0 && found != g.Index {
					return -1
				}
				found = g.Index
			}
		}
	}
	return found
}

// byUUID finds the GPU whose UUID equals or starts with want (CUDA accepts
// any unique prefix).
func byUUID(want string, gpus []GPUIdent) (int, string) {
	found := -1
	for _, g := range gpus {
		if len(g.UUID) >= len(want) && strings.EqualFold(g.UUID[:len(want)], want) {
			if found >= 0 {
				return -1, fmt.Sprintf("%s is ambiguous: it prefixes more than one GPU's UUID", want)
			}
			found = g.Index
		}
	}
	if found < 0 {
		return -1, fmt.Sprintf("no GPU has UUID %s", want)
	}
	return found, ""
}
