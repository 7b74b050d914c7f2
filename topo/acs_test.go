package topo

import (
	"encoding/binary"
	"errors"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every pciutils fixture with a full 4 KiB dump is decoded from its bytes
// and compared with the ACSCap/ACSCtl lines lspci printed for the same
// bytes; devices without an ACS block must decode to "no ACS".
func TestDecodeACSMatchesLspci(t *testing.T) {
	files, _ := filepath.Glob("testdata/acs/pciutils_test_*.txt")
	if len(files) < 7 {
		t.Fatalf("found %d pciutils fixtures", len(files))
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range parseLspci(t, string(b)) {
			name := filepath.Base(f) + " " + d.busID
			if len(d.config) != 4096 {
				// -xxx dumps stop at 256 bytes: to sysfs that is a device
				// without extended space, so no ACS can be read from it.
				if a, err := DecodeACS(d.config); a != nil || err != nil || len(d.config) != 256 {
					t.Errorf("%s: %d-byte dump decoded to %+v, %v", name, len(d.config), a, err)
				}
				continue
			}
			a, err := DecodeACS(d.config)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if d.acsOffset == 0 {
				if a != nil {
					t.Errorf("%s: lspci printed no ACS, decoded %+v", name, a)
				}
				continue
			}
			checked++
			if a == nil {
				t.Errorf("%s: lspci printed ACS at 0x%x, decoder found none", name, d.acsOffset)
				continue
			}
			if a.Offset != d.acsOffset || a.CapFlags != d.capLine || a.CtlFlags != d.ctlLine {
				t.Errorf("%s:\n got [%x] cap %s\n               ctl %s\nwant [%x] cap %s\n               ctl %s",
					name, a.Offset, a.CapFlags, a.CtlFlags, d.acsOffset, d.capLine, d.ctlLine)
			}
			if want := d.acsCtl&(topostate.ACSReqRedir|topostate.ACSCmpltRedir|topostate.ACSEgressCtrl) != 0; a.Redirect != want {
				t.Errorf("%s: redirect = %v, want %v (ctl %s)", name, a.Redirect, want, d.ctlLine)
			}
		}
	}
	// cap-aer-ecrc-label, cap-aer-root, cap-exp-dev2, cap-exp-lnkcap2,
	// cap-ide and cap-pcie-1 carry ACS in a full dump.
	if checked != 6 {
		t.Errorf("compared %d ACS blocks with lspci, want 6", checked)
	}
}

// The Haswell-E root port of cap-aer-root has ReqRedir and CmpltRedir on:
// the redirecting case, from real bytes.
func TestDecodeACSRedirectFromRealDump(t *testing.T) {
	devs := parseLspci(t, readTestdata(t, "acs/pciutils_test_cap-aer-root.txt"))
	a, err := DecodeACS(devs[0].config)
	if err != nil || a == nil {
		t.Fatalf("decode: %+v, %v", a, err)
	}
	if !a.Redirect || a.Ctl != 0x001f || a.CtlOffset() != 0x116 || a.ClearedCtl() != 0x0013 {
		t.Errorf("ACS = %+v, ctl offset 0x%x, cleared 0x%04x", a, a.CtlOffset(), a.ClearedCtl())
	}
}

// The PLX captures print ACS at 0xf24 but dump only 256 bytes; placed in a
// 4 KiB space at the printed offset, the decoder finds it there, which is
// why NVIDIA's "setpci f2a.w=0000" recipe hits the control register.
func TestDecodeACSAtPLXOffset(t *testing.T) {
	for _, f := range []string{"plx_pex8747_titanx_downstream_port_acs_disabled.txt", "plx_pex8749_n1sdp_downstream_port_acs_enabled.txt"} {
		devs := parseLspci(t, readTestdata(t, "acs/"+f))
		d := devs[0]
		if d.acsOffset != 0xf24 {
			t.Fatalf("%s: lspci ACS offset 0x%x", f, d.acsOffset)
		}
		cfg := make([]byte, 4096)
		copy(cfg, d.config)
		binary.LittleEndian.PutUint32(cfg[0x100:], 0xf24<<20|1<<16|0x0001) // AER, then ACS
		binary.LittleEndian.PutUint32(cfg[0xf24:], 1<<16|0x000d)
		binary.LittleEndian.PutUint16(cfg[0xf28:], d.acsCap)
		binary.LittleEndian.PutUint16(cfg[0xf2a:], d.acsCtl)
		a, err := DecodeACS(cfg)
		if err != nil || a == nil || a.CtlOffset() != 0xf2a || a.CapFlags != d.capLine || a.CtlFlags != d.ctlLine {
			t.Errorf("%s: %+v, %v", f, a, err)
		}
		if wantRedirect := strings.Contains(d.ctlLine, "ReqRedir+"); a != nil && a.Redirect != wantRedirect {
			t.Errorf("%s: redirect %v, want %v", f, a.Redirect, wantRedirect)
		}
	}
}

func TestDecodeACSUnprivilegedIsUnknown(t *testing.T) {
	devs := parseLspci(t, readTestdata(t, "acs/pciutils_test_cap-aer-root.txt"))
	for _, n := range []int{0, 64, 128} {
		a, err := DecodeACS(devs[0].config[:n])
		var ce *ConfigError
		if a != nil || !errors.As(err, &ce) || !ce.Unknown || !strings.Contains(err.Error(), "CAP_SYS_ADMIN") {
			t.Errorf("%d bytes: %+v, %v; want unknown (needs root)", n, a, err)
		}
	}
	if a, err := DecodeACS(devs[0].config[:200]); a != nil || err == nil {
		t.Errorf("200 bytes: %+v, %v; want a malformed-config error", a, err)
	}
}

func TestWalkExtCapsBadLists(t *testing.T) {
	put := func(cfg []byte, off int, id uint16, next int) {
		binary.LittleEndian.PutUint32(cfg[off:], uint32(next)<<20|1<<16|uint32(id))
	}
	loop := make([]byte, 4096)
	put(loop, 0x100, 0x0001, 0x140)
	put(loop, 0x140, 0x0002, 0x100)
	if _, err := WalkExtCaps(loop); err == nil || !strings.Contains(err.Error(), "loops") {
		t.Errorf("loop: %v", err)
	}
	back := make([]byte, 4096)
	put(back, 0x100, 0x0001, 0x40)
	if _, err := WalkExtCaps(back); err == nil {
		t.Error("pointer into the basic space accepted")
	}
	short := make([]byte, 0x120)
	put(short, 0x100, 0x0001, 0x200)
	if _, err := WalkExtCaps(short); err == nil {
		t.Error("pointer beyond the blob accepted")
	}
	gone := make([]byte, 4096)
	for i := range gone {
		gone[i] = 0xff
	}
	if caps, err := WalkExtCaps(gone); err != nil || len(caps) != 0 {
		t.Errorf("all-ones (device gone): %v, %v", caps, err)
	}
	// ACS found before the list breaks is still reported.
	acsFirst := make([]byte, 4096)
	put(acsFirst, 0x100, 0x000d, 0x100)
	if a, err := DecodeACS(acsFirst); a == nil || err != nil {
		t.Errorf("ACS before a loop: %+v, %v", a, err)
	}
}

// FuzzWalkExtCaps: any blob, including lists that loop or point anywhere,
// must end without panicking, visit each offset once, and stay in bounds.
func FuzzWalkExtCaps(f *testing.F) {
	devs := parseLspci(f, readFileOrEmpty("testdata/acs/pciutils_test_cap-aer-root.txt"))
	if len(devs) > 0 {
		f.Add(devs[0].config)
	}
	loop := make([]byte, 4096)
	binary.LittleEndian.PutUint32(loop[0x100:], 0x100<<20|0x000d)
	f.Add(loop)
	f.Add(make([]byte, 64))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, cfg []byte) {
		caps, _ := WalkExtCaps(cfg)
		seen := map[int]bool{}
		for _, c := range caps {
			if seen[c.Offset] || c.Offset < 0x100 || c.Offset+4 > len(cfg) {
				t.Fatalf("bad walk %+v over %d bytes", caps, len(cfg))
			}
			seen[c.Offset] = true
		}
		a, err := DecodeACS(cfg)
		if a != nil && (err != nil || a.Offset+8 > len(cfg)) {
			t.Fatalf("decoded %+v with %v from %d bytes", a, err, len(cfg))
		}
	})
}

func readFileOrEmpty(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
