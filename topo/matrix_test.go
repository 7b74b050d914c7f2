package topo

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/gpuprobe/gpuprobe/state/topostate"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The text matrix lines up with nvidia-smi's: for the Dell HGX tree, every
// device row and the header are character-for-character the Mooncake
// capture's up to the affinity columns (which there show a container's
// cpuset).
func TestMatrixTextLayout(t *testing.T) {
	sys, proc := writeTree(t, dellHGX(t).Tree)
	tp, err := Collect(context.Background(), Options{SysfsRoot: sys, ProcfsRoot: proc, GPUs: hopperHints(18), NVLinkKnown: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tp.Matrix().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	ours := strings.Split(buf.String(), "\n")
	capture := readTestdata(t, "topo-m/mooncake2039_8xH100_12nic_container-cpuset_topo-m.txt")
	width := 8 * 21 // label column and 20 device columns
	matched := 0
	for _, want := range strings.Split(capture, "\n") {
		if !strings.HasPrefix(want, "GPU") && !strings.HasPrefix(want, "NIC") && !strings.HasPrefix(want, "        GPU0") {
			continue
		}
		if strings.HasPrefix(want, "NIC") && strings.Contains(want, ":") {
			continue // the legend
		}
		key := pad(want, 8)[:8]
		for _, got := range ours {
			if pad(got, 8)[:8] == key {
				w, g := pad(want, width)[:width], pad(got, width)[:width]
				if w != g {
					t.Errorf("row %s:\nnvidia-smi %q\ngpuprobe   %q", key, w, g)
				}
				matched++
				break
			}
		}
	}
	if matched != 21 {
		t.Errorf("matched %d lines, want the header and 20 rows", matched)
	}
	for _, want := range []string{"0-55,112-167    0", "  NIC11: mlx5_11", "  PIX  = Connection traversing at most a single PCIe bridge"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("matrix lacks %q", want)
		}
	}
	for _, l := range ours {
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space in %q", l)
		}
	}
}

func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}

// --format json carries the same matrix as data.
func TestMatrixJSON(t *testing.T) {
	tp := simTopology(t, "dgx-h100", 18)
	m := tp.Matrix()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back topostate.Matrix
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Columns) != 16 || back.Rows[0].Cells[1] != "NV18" || back.Rows[0].Cells[8] != "PIX" ||
		back.Rows[0].NUMAAffinity != "0" || back.Rows[8].CPUAffinity != "" || back.NICLegend[3].Name != "mlx5_3" {
		t.Errorf("matrix JSON = %s", b)
	}
}

// Every one of the 35 real `nvidia-smi topo -m` captures speaks only the
// vocabulary gpuprobe prints, and every legend line they print is ours
// word for word (older drivers cut one line short, or comment it out).
func TestCaptureVocabulary(t *testing.T) {
	files, _ := filepath.Glob("testdata/topo-m/*.txt")
	if len(files) != 35 {
		t.Fatalf("%d captures, want 35", len(files))
	}
	ours := map[string]string{}
	for _, l := range (&topostate.Topology{}).Matrix().Legend {
		ours[l.Value] = l.Meaning
	}
	row := regexp.MustCompile(`^\s*#?\s*(GPU\d+|NIC\d+|mlx\d_\d+)\s+(.*)$`)
	leg := regexp.MustCompile(`^\s*#?\s*(X|SYS|NODE|PHB|PXB|PIX|NV#)\s+= (.*)$`)
	cells, legends := 0, 0
	for _, f := range files {
		for _, line := range strings.Split(readTestdata(t, "topo-m/"+filepath.Base(f)), "\n") {
			if strings.HasPrefix(line, "# source:") || strings.HasPrefix(line, "# note:") {
				continue
			}
			if strings.Contains(line, "-p2p") {
				break // club3090 goes on with the P2P matrix, another vocabulary
			}
			if m := leg.FindStringSubmatch(line); m != nil {
				legends++
				if !strings.HasPrefix(ours[m[1]], strings.TrimSpace(m[2])) {
					t.Errorf("%s: legend %s = %q, ours %q", filepath.Base(f), m[1], m[2], ours[m[1]])
				}
				continue
			}
			m := row.FindStringSubmatch(line)
			if m == nil || strings.Contains(line, "Affinity") {
				continue // not a row, or the header
			}
			for _, c := range strings.Fields(m[2]) {
				switch {
				case c == "X":
				case topostate.PathRank(c) < 6 && (topostate.PathRank(c) > 0 || regexp.MustCompile(`^NV\d+$`).MatchString(c)):
					cells++
				default:
					// the affinity columns: CPU lists, NUMA ids, N/A
					if !regexp.MustCompile(`^([0-9,\-]+|N/A)$`).MatchString(c) {
						t.Errorf("%s: cell %q is outside gpuprobe's vocabulary", filepath.Base(f), c)
					}
				}
			}
		}
	}
	if cells < 1000 || legends < 40 {
		t.Errorf("read %d cells and %d legend lines", cells, legends)
	}
}
