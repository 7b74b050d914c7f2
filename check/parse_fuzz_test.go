package check

import (
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/kernel"
	"github.com/gpuprobe/gpuprobe/state"
)

// FuzzParseMemory (--min-gpu-memory, the job config's min_gpu_memory): never
// a panic, a size within the parser's bound, a bare number read as MiB, and
// an error that quotes the input.
func FuzzParseMemory(f *testing.F) {
	for _, s := range []string{"", "80GB", "40GiB", "81559", " 1.5 t ", "1e3", "-1", "9999999999999T", "1KB", "x", ".", "1..2G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseMemory(s)
		if err != nil {
			if !strings.Contains(err.Error(), "\"") {
				t.Fatalf("error does not quote the value: %v", err)
			}
			return
		}
		if v > 1<<62 {
			t.Fatalf("%q: %d over the bound", s, v)
		}
		if strings.TrimSpace(s) == "" && v != 0 {
			t.Fatalf("empty size read as %d", v)
		}
	})
}

// FuzzParseDrainHistory feeds the drain history state file reader arbitrary
// bytes: never a panic, a history that parses is within its bounds, and it
// round-trips through Marshal.
func FuzzParseDrainHistory(f *testing.F) {
	for _, s := range []string{
		"", "{", "null", `{"version":1,"episodes":[]}`, `{"version":2,"episodes":[]}`,
		`{"version":1,"episodes":[{"check":"gpu.ecc","gpus":[1],"class":"node","drained":"2026-01-01T00:00:00Z"}]}`,
		`{"version":1,"episodes":[{"check":"gpu.ecc","class":"transient","drained":"2026-01-01T00:00:00+02:00","resumed":"2026-01-02T00:00:00Z","hold":true}]}`,
		`{"version":1,"episodes":[{"check":"A B","class":"node","drained":"2026-01-01T00:00:00Z"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseDrainHistory(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "drain history") {
				t.Fatalf("error does not name the drain history: %v", err)
			}
			return
		}
		if len(h.Episodes) > MaxHistoryEpisodes {
			t.Fatalf("%d episodes", len(h.Episodes))
		}
		m, err := h.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		h2, err := ParseDrainHistory(m)
		if err != nil {
			t.Fatalf("marshalled history does not parse: %v\n%s", err, m)
		}
		if m2, _ := h2.Marshal(); string(m2) != string(m) {
			t.Fatalf("history does not round-trip:\n%s\n%s", m, m2)
		}
	})
}

// FuzzDecodeNVLink5 reads an arbitrary kernel log line with kernel.Parse
// and decodes its Xid 144-150 registers with NVIDIA's sheet: never a
// panic, and a decoding either names an action or says why not.
func FuzzDecodeNVLink5(f *testing.F) {
	for _, s := range []string{
		"NVRM: Xid (PCI:0000:10:00): 145, pid=1, name=x, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)",
		"NVRM: Xid (PCI:0000:10:00): 149, NETIR_BER_EVENT (0x00000226 0x00000002)",
		"NVRM: Xid (PCI:0000:10:00): 145, RLW_REMAP (0x00000082 0x00000040)",
		"NVRM: Xid (PCI:0000:10:00): 150, x (0xffffffff)",
		"NVRM: Xid (PCI:0000:10:00): 144, x",
	} {
		f.Add(s, "")
		f.Add(s, "580.65.06")
		f.Add(s, "550.127.05")
	}
	f.Fuzz(func(t *testing.T, line, driver string) {
		ev, ok := kernel.Parse([]byte(line))
		if !ok {
			ev = state.XIDEvent{Code: 145, Message: line}
		}
		ev.DriverVersion = driver
		d := decodeNVLink5(ev)
		if d.action == "" && d.why == "" {
			t.Fatalf("%q (%q): no action and no reason: %+v", line, driver, d)
		}
	})
}
