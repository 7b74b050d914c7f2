package check

import (
	"bytes"
	"os"
	"testing"

	"github.com/gpuprobe/gpuprobe/internal/xidcatalog"
)

// The Go table is generated (tools/sxidgen, go generate ./check) from
// NVIDIA's CSV as pinned in third_party/nvsentinel-sxid/: the checked-in
// file is byte for byte what the generator makes of the pinned file today,
// and row for row every code, its name, its action and its FATAL/NONFATAL
// as NVSentinel ships them.
func TestNVIDIASXIDTableMatchesItsSource(t *testing.T) {
	raw, err := os.ReadFile("../" + xidcatalog.SXIDSource)
	if err != nil {
		t.Fatal(err)
	}
	want, err := xidcatalog.SXIDGo(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("sxidnvidia.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("sxidnvidia.go is not what tools/sxidgen makes of %s: run go generate ./check", xidcatalog.SXIDSource)
	}
	rows, err := xidcatalog.ParseSXID(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		want := nvidiaSXID{r.Name, SXIDAction(r.Action), r.Fatal}
		if got, ok := nvidiaSXIDs[r.Code]; !ok || got != want {
			t.Errorf("SXid %d: table has %+v, NVIDIA's file %+v (run go generate ./check)", r.Code, got, want)
		}
	}
	if rows := len(rows); rows != len(nvidiaSXIDs) || rows < 390 {
		t.Errorf("%d rows in the file, %d in the table", rows, len(nvidiaSXIDs))
	}
	// Every FATAL action has gpuprobe's words for its fix.
	for code, row := range nvidiaSXIDs {
		if row.fatal && sxidActionRemedy[row.action] == "" {
			t.Errorf("SXid %d: no remedy for NVIDIA's action %s", code, row.action)
		}
	}
}
