package nvsmi

// This file reads saved `nvidia-smi nvlink -s` (link state and speed) and
// `nvidia-smi nvlink -e` (error counters) output. nvidia-smi's own help
// (`nvidia-smi nvlink -h`) gives the two options as "[-s | --status]:
// Display link state (active/inactive)." and "[-e | --errorcounters]:
// Display error counters for a link."; both print, per GPU, a header line
//
//	GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05)
//
// and, indented beneath it, one line per link (-s) or per link and counter
// (-e):
//
//	Link 0: 25 GB/s              active, at that speed
//	Link 3: <inactive>           NVML_NVLINK_STATE_INACTIVE (nvml.h)
//	Link 0: Replay Errors: 0     -e
//	Link 0: Recovery Errors: 0
//	Link 0: CRC Errors: 0
//
// The reader records what the capture prints and nothing more: which
// links it shows active or inactive, at what speed, with which counters.
// What that means (an inactive link on a GPU with no NVLink peers is no
// fault) is check's to say, with the platform it knows. A capture that
// cannot decide (a GPU whose links the capture cut off, a line nvidia-smi
// printed in place of the links) leaves them unknown, never inactive.

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
)

// MaxNVLinkCapture bounds a saved nvlink capture: 8 GPUs of 18 links and
// four counters each is ~25 KiB; a GB200 NVL72 rack's 72 GPUs, ~250 KiB.
const MaxNVLinkCapture = 4 << 20

// maxNVLinkLine bounds one line: the longest real one is a GPU header.
const maxNVLinkLine = 1024

// maxNVLinks bounds the link numbers read (NVML_NVLINK_MAX_LINKS is 18;
// the slack is for later parts), maxNVLinkGPUs the GPUs.
const (
	maxNVLinks    = 64
	maxNVLinkGPUs = 4096
)

// NVLinkCapture is what a saved `nvidia-smi nvlink -s` and/or `-e` shows.
type NVLinkCapture struct {
	GPUs []NVLinkGPU
	// CutAt is the line of an elision mark ("...", "[...]": a post's own
	// cut); 0 when the capture shows no cut. GPUs and links after it, and
	// the rest of the GPU it cut, are not in the capture.
	CutAt int
}

// NVLinkGPU is one GPU's block.
type NVLinkGPU struct {
	Index int
	Name  string
	// UUID as printed; "" where the header prints none or a redacted one.
	UUID string
	Line int
	// Links in capture order, one per link number.
	Links []NVLinkRow
	// Printed is what nvidia-smi printed in place of the links (an NVML
	// error such as "Unable to retrieve NVLink information ..."), with its
	// line: the links are unknown.
	Printed     string
	PrintedLine int
}

// NVLinkRow is one link as the capture shows it.
type NVLinkRow struct {
	Link int
	Line int
	// State is "active", "inactive" or "" (the capture prints none: an
	// -e capture alone).
	State string
	// SpeedGBps is the speed -s prints for an active link (GB/s).
	SpeedGBps float64
	// The -e counters; nil when not printed. CRC is nvidia-smi's "CRC
	// Errors", one number (it does not say whether flit or data CRC).
	Replay, Recovery, CRC *uint64
}

// NVLinkError is a capture nvidia-smi could not have printed, naming the
// file and the line.
type NVLinkError struct {
	File string
	Line int
	Msg  string
}

func (e *NVLinkError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// ParseNVLink reads a saved `nvidia-smi nvlink -s`, `-e`, or both one after
// the other (a GPU's second block adds to its first). file names the input
// in errors. Lines starting with '#' are comments. It never panics; bad
// input is an *NVLinkError naming the line.
func ParseNVLink(file string, data []byte) (*NVLinkCapture, error) {
	if len(data) > MaxNVLinkCapture {
		return nil, &NVLinkError{File: file, Msg: fmt.Sprintf("larger than %d MiB: not an nvidia-smi nvlink capture", MaxNVLinkCapture>>20)}
	}
	c := &NVLinkCapture{}
	byKey := map[string]int{} // GPU index and UUID -> position in c.GPUs
	cur := -1
	bad := func(n int, format string, a ...any) (*NVLinkCapture, error) {
		return nil, &NVLinkError{File: file, Line: n, Msg: fmt.Sprintf(format, a...)}
	}
	lines := bytes.Split(data, []byte("\n"))
	for i, raw := range lines {
		n := i + 1
		if len(raw) > maxNVLinkLine {
			return bad(n, "a line over %d bytes: not an nvidia-smi nvlink capture", maxNVLinkLine)
		}
		line := strings.TrimRight(string(raw), " \t\r")
		text := strings.TrimLeft(line, " \t")
		switch {
		case text == "" || strings.HasPrefix(text, "#"):
			continue
		case elision(text):
			if c.CutAt == 0 {
				c.CutAt = n
			}
			cur = -1 // what follows a cut belongs to no GPU shown before it
			continue
		}
		if !strings.ContainsRune("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz<>[]():.,-_/ ", rune(text[0])) {
			return bad(n, "unexpected %q: not an nvidia-smi nvlink capture", clip(text))
		}
		if rest, ok := strings.CutPrefix(line, "GPU "); ok {
			g, err := gpuHeader(rest)
			if err != "" {
				return bad(n, "GPU header %q: %s", clip(line), err)
			}
			g.Line = n
			key := "#" + strconv.Itoa(g.Index)
			if at, seen := byKey[key]; seen {
				if g.UUID != "" && c.GPUs[at].UUID != "" && g.UUID != c.GPUs[at].UUID {
					return bad(n, "GPU %d has UUID %s here and %s at line %d: not one node's capture", g.Index, g.UUID, c.GPUs[at].UUID, c.GPUs[at].Line)
				}
				cur = at // the same GPU in the next command's output
				continue
			}
			if g.UUID != "" {
				if at, seen := byKey[g.UUID]; seen {
					return bad(n, "UUID %s is GPU %d here and GPU %d at line %d", g.UUID, g.Index, c.GPUs[at].Index, c.GPUs[at].Line)
				}
			}
			if len(c.GPUs) >= maxNVLinkGPUs {
				return bad(n, "more than %d GPUs", maxNVLinkGPUs)
			}
			cur = len(c.GPUs)
			byKey[key] = cur
			if g.UUID != "" {
				byKey[g.UUID] = cur
			}
			c.GPUs = append(c.GPUs, g)
			continue
		}
		if line == text {
			return bad(n, "%q is neither a GPU header nor an indented link line: not an nvidia-smi nvlink capture", clip(text))
		}
		if cur < 0 {
			if c.CutAt > 0 {
				continue // the rest of a GPU the post cut
			}
			return bad(n, "%q before any GPU header", clip(text))
		}
		g := &c.GPUs[cur]
		rest, ok := strings.CutPrefix(text, "Link ")
		if !ok {
			// nvidia-smi prints NVML's error in place of the links
			// ("NVML: Unable to retrieve NVLink information as all links
			// are inActive", open-gpu-kernel-modules #1150's title): the
			// links are unknown.
			if g.Printed == "" {
				g.Printed, g.PrintedLine = clip(text), n
			}
			continue
		}
		num, val, ok := strings.Cut(rest, ":")
		link, err := strconv.Atoi(num)
		if !ok || err != nil || link < 0 || link >= maxNVLinks {
			return bad(n, "link line %q: no link number 0..%d", clip(text), maxNVLinks-1)
		}
		row := g.link(link, n)
		if msg := row.set(strings.TrimSpace(val)); msg != "" {
			return bad(n, "link %d: %s", link, msg)
		}
	}
	if len(c.GPUs) == 0 {
		return nil, &NVLinkError{File: file, Msg: "no GPU header (\"GPU 0: <name> (UUID: ...)\"): not nvidia-smi nvlink -s or -e output"}
	}
	return c, nil
}

// elision is a post's own mark of a cut: "...", "......", "[...]".
func elision(text string) bool {
	t := strings.TrimSuffix(strings.TrimPrefix(text, "["), "]")
	return len(t) >= 3 && strings.Trim(t, ".…") == ""
}

// gpuHeader reads "0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)" (after "GPU ").
func gpuHeader(rest string) (NVLinkGPU, string) {
	num, after, ok := strings.Cut(rest, ":")
	idx, err := strconv.Atoi(num)
	if !ok || err != nil || idx < 0 || idx >= maxNVLinkGPUs {
		return NVLinkGPU{}, "no GPU index"
	}
	g := NVLinkGPU{Index: idx, Name: strings.TrimSpace(after)}
	if i := strings.LastIndex(g.Name, "(UUID:"); i >= 0 && strings.HasSuffix(g.Name, ")") {
		uuid := strings.TrimSpace(g.Name[i+len("(UUID:") : len(g.Name)-1])
		g.Name = strings.TrimSpace(g.Name[:i])
		if strings.HasPrefix(uuid, "GPU-") || strings.HasPrefix(uuid, "MIG-") {
			g.UUID = uuid
		} // else redacted ("...") or garbled: unknown
	}
	if g.Name == "" {
		return NVLinkGPU{}, "no GPU name"
	}
	return g, ""
}

// link is the GPU's row for a link number, added at line n if new.
func (g *NVLinkGPU) link(link, n int) *NVLinkRow {
	for i := range g.Links {
		if g.Links[i].Link == link {
			return &g.Links[i]
		}
	}
	g.Links = append(g.Links, NVLinkRow{Link: link, Line: n})
	return &g.Links[len(g.Links)-1]
}

// set reads one link line's value: a speed or <inactive> (-s), or a
// counter (-e). It returns what is wrong, or "".
func (r *NVLinkRow) set(val string) string {
	switch {
	case val == "<inactive>":
		return r.state("inactive", 0)
	case strings.HasSuffix(val, " GB/s"):
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(val, " GB/s")), 64)
		if err != nil || v <= 0 || v > 10000 {
			return fmt.Sprintf("speed %q is not a number of GB/s", clip(val))
		}
		return r.state("active", v)
	}
	name, count, ok := strings.Cut(val, ":")
	if !ok {
		return fmt.Sprintf("%q is neither a speed, <inactive>, nor a counter", clip(val))
	}
	var dst **uint64
	switch strings.TrimSpace(name) {
	case "Replay Errors":
		dst = &r.Replay
	case "Recovery Errors":
		dst = &r.Recovery
	case "CRC Errors":
		dst = &r.CRC
	default:
		return "" // a counter gpuprobe does not read (newer drivers add some)
	}
	count = strings.TrimSpace(count)
	if unknown(count) {
		return "" // N/A and the like: not read, never 0
	}
	v, err := strconv.ParseUint(count, 10, 64)
	if err != nil {
		return fmt.Sprintf("%s %q is not a count", strings.TrimSpace(name), clip(count))
	}
	if *dst != nil && **dst != v {
		return fmt.Sprintf("%s printed twice, %d and %d", strings.TrimSpace(name), **dst, v)
	}
	*dst = &v
	return ""
}

func (r *NVLinkRow) state(s string, speed float64) string {
	if r.State != "" && (r.State != s || r.SpeedGBps != speed) {
		return fmt.Sprintf("printed %s and then %s", r.describe(), s)
	}
	r.State, r.SpeedGBps = s, speed
	return ""
}

func (r *NVLinkRow) describe() string {
	if r.State == "active" {
		return strconv.FormatFloat(r.SpeedGBps, 'f', -1, 64) + " GB/s"
	}
	return r.State
}

// clip bounds text quoted in an error (ASCII marker, as before).
func clip(s string) string { return safetext.ClipWith(s, 80, "...") }
