package nvsmi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
)

// summary is a capture in one line per GPU: index, UUID (or "?"), then
// each link as N=active@speed, N=inactive, N=? (no state), with the -e
// counters r/v/c where printed.
func summary(c *NVLinkCapture) string {
	var b strings.Builder
	for _, g := range c.GPUs {
		uuid := g.UUID
		if uuid == "" {
			uuid = "?"
		}
		b.WriteString("GPU " + itoa(g.Index) + " " + uuid + ":")
		for _, l := range g.Links {
			b.WriteString(" " + itoa(l.Link) + "=")
			switch l.State {
			case "active":
				b.WriteString(l.describe())
			case "":
				b.WriteString("?")
			default:
				b.WriteString(l.State)
			}
			for _, c := range []struct {
				k string
				v *uint64
			}{{"r", l.Replay}, {"v", l.Recovery}, {"c", l.CRC}} {
				if c.v != nil {
					b.WriteString("," + c.k + itoa(int(*c.v)))
				}
			}
		}
		if g.Printed != "" {
			b.WriteString(" printed " + g.Printed)
		}
		b.WriteString("\n")
	}
	if c.CutAt > 0 {
		b.WriteString("cut at " + itoa(c.CutAt) + "\n")
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

func links(prefix string, from, to int, v string) string {
	var s []string
	for i := from; i <= to; i++ {
		s = append(s, itoa(i)+"="+v)
	}
	return prefix + " " + strings.Join(s, " ")
}

// TestNVLinkCorpus reads the real posted captures of testdata/nvlink (each
// with its .SOURCE) and holds what they show, as their SOURCE files state.
func TestNVLinkCorpus(t *testing.T) {
	want := map[string]string{
		// 8x A100-SXM4: 12 active links each at 25 GB/s, the post cut after GPU 2's first.
		"nccltests228_a100x8_nvlink-s.txt": links("GPU 0 GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05:", 0, 11, "25 GB/s") + "\n" +
			links("GPU 1 GPU-0c512562-871f-8257-6187-b5ae1b986d5e:", 0, 11, "25 GB/s") + "\n" +
			"GPU 2 GPU-f4fb3d24-8773-b6b6-ae47-af7b37f5137d: 0=25 GB/s\ncut at 29\n",
		// V100: links 3 and 5 inactive; the UUID redacted ("...") is unknown.
		"azhpcdiag73_v100_nvlink-s-inactive.txt": "GPU 3 ?: 0=25.781 GB/s 1=25.781 GB/s 2=25.781 GB/s 3=inactive 4=25.781 GB/s 5=inactive\ncut at 1\n",
		// GB200: 18 active links at 53.125 GB/s.
		"k8stestinfra371_gb200_nvlink-s.txt": links("GPU 0 GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde:", 0, 17, "53.125 GB/s") + "\n" +
			"GPU 1 GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5: 0=53.125 GB/s 1=53.125 GB/s\ncut at 23\n",
		// 8x H800: 8 links each at 26.562 GB/s; GPUs 2-6 cut by the author.
		"notes_h800x8_nvlink-status.txt": links("GPU 0 GPU-34bf77d1-c686-6821-79a8-32d326c5039c:", 0, 7, "26.562 GB/s") + "\n" +
			links("GPU 1 GPU-f5046fa5-3db4-45e8-870a-dc1376becaa5:", 0, 7, "26.562 GB/s") + "\n" +
			links("GPU 7 GPU-474d838c-171f-d249-4f45-bbc01a8eb74a:", 0, 7, "26.562 GB/s") + "\ncut at 19\n",
		// GB300 -e: counters, no state.
		"srtslurm307_gb300_nvlink-e.txt": "GPU 0 ?: 0=?,r0,v0,c0\n",
	}
	files, _ := filepath.Glob("testdata/nvlink/*.txt")
	if len(files) != len(want) {
		t.Errorf("%d captures in testdata/nvlink, %d in the table", len(files), len(want))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(strings.TrimSuffix(f, ".txt") + ".SOURCE"); err != nil {
				t.Errorf("no SOURCE: %v", err)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			c, err := ParseNVLink(name, data)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(c); got != want[name] {
				t.Errorf("read\n%s\nwant\n%s", got, want[name])
			}
		})
	}
}

// An -s and an -e capture of the same node, one after the other, are one
// capture: the -e counters join the links -s showed, by GPU. A GPU whose
// links nvidia-smi could not list keeps what it printed, and its links
// stay unknown (never inactive). Unreadable counters are not 0.
func TestNVLinkStatusThenErrors(t *testing.T) {
	in := "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n" +
		"GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b)\n\t NVML: Unable to retrieve NVLink information as all links are inActive\n" +
		"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)\n\t Link 0: Replay Errors: 2\n\t Link 0: Recovery Errors: 0\n\t Link 0: CRC Errors: 7\n" +
		"\t Link 1: Replay Errors: N/A\n\t Link 1: Effective Errors: 0\n"
	c, err := ParseNVLink("x", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := "GPU 0 GPU-a: 0=26.562 GB/s,r2,v0,c7 1=inactive\nGPU 1 GPU-b: printed NVML: Unable to retrieve NVLink information as all links are inActive\n"
	if got := summary(c); got != want {
		t.Errorf("read\n%s\nwant\n%s", got, want)
	}
}

// Bad input is an error naming the line, never a panic.
func TestNVLinkBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"": "no GPU header",
		"nvidia-smi nvlink -s\nGPU 0: A (UUID: GPU-a)\n":           "line 1: \"nvidia-smi nvlink -s\" is neither",
		"\t Link 0: 25 GB/s\n":                                     "line 1: \"Link 0: 25 GB/s\" before any GPU header",
		"GPU x: A\n":                                               "line 1: GPU header",
		"GPU 0: A\n\t Link 99: 25 GB/s\n":                          "line 2: link line",
		"GPU 0: A\n\t Link 0: fast GB/s\n":                         "line 2: link 0: speed \"fast GB/s\"",
		"GPU 0: A\n\t Link 0: up\n":                                "line 2: link 0: \"up\" is neither",
		"GPU 0: A\n\t Link 0: CRC Errors: many\n":                  "line 2: link 0: CRC Errors \"many\"",
		"GPU 0: A\n\t Link 0: 25 GB/s\n\t Link 0: <inactive>\n":    "line 3: link 0: printed 25 GB/s and then inactive",
		"GPU 0: A (UUID: GPU-a)\nGPU 0: A (UUID: GPU-b)\n":         "line 2: GPU 0 has UUID GPU-b here",
		"GPU 0: A (UUID: GPU-a)\nGPU 1: A (UUID: GPU-a)\n":         "line 2: UUID GPU-a is GPU 1 here",
		"GPU 0: A\n" + strings.Repeat("x", maxNVLinkLine+1) + "\n": "line 2: a line over",
		"GPU 0: A\n\x00\x01\n":                                     "line 2: unexpected",
		strings.Repeat("GPU 0: A\n", MaxNVLinkCapture/9+1):         "larger than 4 MiB",
	} {
		_, err := ParseNVLink("cap.txt", []byte(in))
		var pe *NVLinkError
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "cap.txt: ") {
			t.Errorf("%.40q: error %v, want one naming %q", in, err, want)
		}
	}
}

var (
	gls4q        []byte
	nvlinkChecks []check.Check
)

// FuzzParseNVLink: no input panics; what parses names each GPU and link
// once, with link numbers in range, a state from the three, a speed only on
// an active link, and errors that name the file; two reads agree.
func FuzzParseNVLink(f *testing.F) {
	var err error
	if gls4q, err = os.ReadFile("testdata/gls_a100x4_555.42.02_nvidia-smi-q.txt"); err != nil {
		f.Fatal(err)
	}
	nvlinkChecks, _ = check.Select([]string{"nvlink"}, nil)
	f.Add([]byte("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-31515c3d-1414-7c2c-004a-f86a898946ac)\n\t Link 0: <inactive>\n\t Link 0: Recovery Errors: 3\n...\n"))
	files, _ := filepath.Glob("testdata/nvlink/*.txt")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("GPU 0: A (UUID: GPU-a)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\nGPU 0: A\n\t Link 0: CRC Errors: 3\n[...]\n\t Link 2: x\n"))
	f.Add([]byte("GPU 1: B\n\t NVML: Unable to retrieve NVLink information as all links are inActive\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseNVLink("fuzz.txt", data)
		if err != nil {
			var pe *NVLinkError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "fuzz.txt: ") || c != nil {
				t.Fatalf("error %v (%T), capture %v", err, err, c)
			}
			return
		}
		if len(c.GPUs) == 0 {
			t.Fatal("no GPU and no error")
		}
		seen := map[int]bool{}
		for _, g := range c.GPUs {
			if seen[g.Index] || g.Name == "" || g.Line <= 0 {
				t.Fatalf("GPU %+v", g)
			}
			seen[g.Index] = true
			links := map[int]bool{}
			for _, l := range g.Links {
				if links[l.Link] || l.Link < 0 || l.Link >= maxNVLinks || l.Line <= g.Line {
					t.Fatalf("GPU %d link %+v", g.Index, l)
				}
				links[l.Link] = true
				switch {
				case l.State == "active" && l.SpeedGBps > 0:
				case (l.State == "inactive" || l.State == "") && l.SpeedGBps == 0:
				default:
					t.Fatalf("GPU %d link %+v", g.Index, l)
				}
			}
		}
		again, err := ParseNVLink("fuzz.txt", data)
		if err != nil || summary(again) != summary(c) {
			t.Fatalf("a second read differs: %v", err)
		}
		// Joined to a real -q (4x A100-SXM4), it is refused with an
		// NVLinkError or makes a valid state the nvlink checks judge
		// without panicking.
		n, err := Parse("gls4.txt", gls4q, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := ApplyNVLink(n, "fuzz.txt", c); err != nil {
			var pe *NVLinkError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "fuzz.txt: ") {
				t.Fatalf("apply: %v (%T)", err, err)
			}
			return
		}
		if err := n.Validate(); err != nil {
			t.Fatalf("state does not validate: %v", err)
		}
		for _, r := range check.Run(context.Background(), n, check.DefaultConfig(), nvlinkChecks) {
			if r.Status == check.Error && strings.HasPrefix(r.Summary, "internal error") {
				t.Fatalf("%s panicked: %s", r.ID, r.Summary)
			}
		}
	})
}
