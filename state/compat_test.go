package state

import (
	"encoding/json"
	"os"
	"testing"
)

// A snapshot written before the node-state types moved into state/ (kernel,
// Slurm and topology each had their own package) still loads field for
// field: the move kept every JSON name.
func TestSnapshotFromBeforeTheSchemaMoveLoads(t *testing.T) {
	n := loadFixture(t)
	switch {
	case n.NVML == nil || len(n.NVML.GPUs) != 8 || n.NVML.GPUs[3].PCIBusID != "0000:5d:00.0":
		t.Errorf("nvml: %+v", n.NVML)
	case n.NVML.GPUs[0].Fabric == nil || n.NVML.GPUs[0].Fabric.HealthMask != 42 || n.NVML.GPUs[0].Fabric.State != "completed":
		t.Errorf("fabric: %+v", n.NVML.GPUs[0].Fabric)
	case n.Kernel == nil || n.Kernel.ModuleVersion != "550.54.15" || n.Kernel.XIDSource == "":
		t.Errorf("kernel: %+v", n.Kernel)
	case n.Topology == nil || len(n.Topology.GPUs) != 8 || n.Topology.GPUs[0].LocalCPUs == "" || len(n.Topology.Paths) == 0:
		t.Errorf("topology: %+v", n.Topology)
	case n.Slurm == nil || n.Slurm.NodeName == "" || n.Slurm.Conf == nil:
		t.Errorf("slurm: %+v", n.Slurm)
	}
}

func loadFixture(t *testing.T) *Node {
	t.Helper()
	data, err := os.ReadFile("testdata/snapshot-v1-sim-dgx-h100.json")
	if err != nil {
		t.Fatal(err)
	}
	var n Node
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}
