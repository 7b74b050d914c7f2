package state

import (
	"errors"
	"fmt"
	"strings"
)

// MaxGPUs bounds the GPUs a node state may hold: NVML enumerates at most a
// few dozen devices per node (16 on the largest HGX boards today); anything
// near this bound is a corrupt or hostile snapshot, not a machine.
const MaxGPUs = 1024

// Validate reports what makes n unfit to judge: a snapshot is evidence, and
// one that lacks what every collection records, or whose counts and indexes
// disagree, would be judged as a healthy node that was never looked at.
// Every problem is listed, each naming its JSON field.
func (n *Node) Validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if n.SchemaVersion < 1 || n.SchemaVersion > SchemaVersion {
		bad("schema_version %d: this gpuprobe reads 1..%d", n.SchemaVersion, SchemaVersion)
	}
	if n.Host == "" {
		bad("host: missing")
	}
	if n.CollectedAt.IsZero() {
		bad("collected_at: missing")
	}
	if n.NVML == nil {
		bad("nvml: missing (every collection records the NVML collector's outcome, even 'not available')")
	} else {
		v := n.NVML
		switch {
		case v.DeviceCount < 0 || v.DeviceCount > MaxGPUs:
			bad("nvml.device_count %d: outside 0..%d", v.DeviceCount, MaxGPUs)
		case len(v.GPUs) > MaxGPUs:
			bad("nvml.gpus: %d entries, more than %d", len(v.GPUs), MaxGPUs)
		case v.Available && v.DeviceCount != len(v.GPUs):
			bad("nvml.device_count %d but nvml.gpus has %d entries (the collector records every device it counted, reachable or not)", v.DeviceCount, len(v.GPUs))
		case !v.Available && len(v.GPUs) > 0:
			bad("nvml.available is false but nvml.gpus has %d entries", len(v.GPUs))
		}
		if len(v.GPUs) <= MaxGPUs {
			for i := range v.GPUs {
				if v.GPUs[i].Index != i {
					bad("nvml.gpus[%d].index is %d: GPUs are listed in NVML index order", i, v.GPUs[i].Index)
				}
			}
		}
	}
	for i, s := range n.Sources {
		if s.Name == "" {
			bad("sources[%d].name: missing", i)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
