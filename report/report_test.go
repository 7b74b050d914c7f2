package report

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/simulate"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// document judges a simulated node with the time and duration pinned, so the
// rendering is all that varies.
func document(t *testing.T, spec string) *Document {
	t.Helper()
	s, err := simulate.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := collect.Node(context.Background(), collect.Options{Simulate: s, Version: "test"})
	n.CollectedAt = time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	checks, _ := check.Select([]string{"gpu"}, nil)
	rs := check.Run(context.Background(), n, check.DefaultConfig(), checks)
	return New(n, rs, false, 12300*time.Microsecond)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGoldenReports(t *testing.T) {
	for _, tc := range []struct{ name, spec string }{
		{"healthy", "dgx-h100"},
		{"faults", "dgx-h100:row-remap-pending=3,gpu-lost=5,ecc-uncorrectable=1,row-remap-failure=6"},
	} {
		d := document(t, tc.spec)
		var txt, js, color bytes.Buffer
		if err := d.WriteText(&txt, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		d.WriteText(&color, TextOptions{Color: true})
		golden(t, tc.name+".txt", txt.Bytes())
		golden(t, tc.name+".json", js.Bytes())
		if bytes.Contains(txt.Bytes(), []byte("\x1b[")) || !bytes.Contains(color.Bytes(), []byte("\x1b[")) {
			t.Errorf("%s: colour must appear only when asked for", tc.name)
		}
	}
}
