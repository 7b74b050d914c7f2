package topocapture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every complete row has one cell per header column, and the glued header
// of vllm#31594 ("NIC11NIC12") is two columns.
func TestReadGluedHeader(t *testing.T) {
	text := "\tGPU0\tNIC11NIC12\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tSYS\tPIX\t0-15\t0\nNIC11\tSYS\t X \tPIX\nNIC12\tPIX\tPIX\t X \n\nNIC11: mlx5_11\n"
	m := Read(text)
	if strings.Join(m.Cols, ",") != "GPU0,NIC11,NIC12" || !m.HasNUMA || m.Name("NIC11") != "mlx5_11" {
		t.Fatalf("%+v", m)
	}
	if r := m.Rows["GPU0"]; strings.Join(r.Cells, ",") != "X,SYS,PIX" || r.CPU != "0-15" || r.NUMA != "0" {
		t.Fatalf("GPU0 %+v", r)
	}
	if r := m.Rows["NIC12"]; r.CPU != "" || len(r.Cells) != 3 {
		t.Fatalf("NIC12 %+v", r)
	}
}

func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("../../topo/testdata/topo-m/*.txt")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		m := Read(text)
		for name, r := range m.Rows {
			if len(r.Cells) != len(m.Cols) {
				t.Fatalf("%s: %d cells for %d columns", name, len(r.Cells), len(m.Cols))
			}
		}
	})
}
