package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nvsentinelCase is one case of NVIDIA NVSentinel's syslog-health-monitor
// tests (testdata/nvsentinel/cases.json, SOURCE beside it): a log line and
// what NVIDIA's parser is asserted to extract from it.
type nvsentinelCase struct {
	File   string `json:"file"`
	Test   string `json:"test"`
	Name   string `json:"name"`
	Driver string `json:"driver"`
	Input  string `json:"input"`
	Kind   string `json:"kind"`
	Match  bool   `json:"match"`
	// Xid parser
	XID       int               `json:"xid"`
	PCI       string            `json:"pci"`
	Action    string            `json:"action"`
	Mnemonic  string            `json:"mnemonic"`
	ErrorCode string            `json:"error_code"`
	Metadata  map[string]string `json:"metadata"`
	// SXid extractor
	SXID     int     `json:"sxid"`
	NVSwitch *int    `json:"nvswitch"`
	Link     *int    `json:"link"`
	Message  *string `json:"message"`
	Fatal    *bool   `json:"fatal"`
	// fallen off the bus; GPU map and reset lines
	PCIID string `json:"pci_id"`
	UUID  string `json:"uuid"`
	// the nvswitch monitor's cursor: the dmesg time, seconds since boot
	Seconds float64 `json:"seconds"`
}

func (c nvsentinelCase) key() string { return c.File + " " + c.Test + "/" + c.Name }

func loadNVSentinelCases(t *testing.T) []nvsentinelCase {
	t.Helper()
	b, err := os.ReadFile("testdata/nvsentinel/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Cases []nvsentinelCase }
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Cases
}

// nvsentinelDiffers are the cases where gpuprobe's reader deliberately
// finds other than NVSentinel's parser: what it finds instead (as
// nvsentinelFound renders it) and why. docs/checks.md ("NVSentinel's parser
// tests") says the same. Every other case must agree.
var nvsentinelDiffers = map[string]struct{ found, why string }{
	// NVSentinel's SXid extractor wants "Fatal|Non-fatal, Link N" because its
	// handler maps the switch link to a GPU; an SXid without a link is no
	// event to it. The nvswitch driver prints many SXids with no link (the
	// SOE errors 26006-26008 are in NVIDIA's SXid table,
	// third_party/nvsentinel-sxid: SOE_HALT and SOE_EXTERR as FATAL, RESET_FABRIC), so
	// gpuprobe records every SXid whose code is a number.
	"sxid_handler_test.go TestExtractInfoFromNVSwitchErrorMsg/Invalid message 1: Link absent": {
		"sxid 26008@0004:00:00.0 (none) \"SOE Watchdog error\"", "an SXid with no link is still an SXid (NVIDIA's table: 26008 SOE_WATCHDOG)"},
	"sxid_handler_test.go TestExtractInfoFromNVSwitchErrorMsg/Invalid message 2: Link absent": {
		"sxid 26006@0004:00:00.0 (none) \"SOE HALTED\"", "an SXid with no link is still an SXid (NVIDIA's table: 26006 SOE_HALT, FATAL, RESET_FABRIC)"},
	"sxid_handler_test.go TestExtractInfoFromNVSwitchErrorMsg/Invalid message 3: Link absent": {
		"sxid 26007@0004:00:00.0 (none) \"SOE EXTERR\"", "an SXid with no link is still an SXid (NVIDIA's table: 26007 SOE_EXTERR, FATAL, RESET_FABRIC)"},
	"sxid_handler_test.go TestExtractInfoFromNVSwitchErrorMsg/Invalid message 4: Link absent": {
		"sxid 26006@0004:00:00.0 (none) \"SOE HALT data[0] = 0x               0\"", "an SXid with no link is still an SXid (NVIDIA's table: 26006 SOE_HALT, FATAL, RESET_FABRIC)"},
	"sxid_handler_test.go (later) TestProcessLine/Invalid SXID - no Link field": {
		"sxid 26008@0004:00:00.0 (none) \"SOE Watchdog error\"", "an SXid with no link is still an SXid (NVIDIA's table: 26008 SOE_WATCHDOG)"},
	// NVSentinel's nvswitch health monitor (its own SXid parser) skips the
	// same lines.
	"nvswitch sxid_monitor_test.go testParsingSXIDLogline2Metrics/soeLogs[0]": {
		"sxid 26008@0004:00:00.0 (none) \"SOE Watchdog error\"", "an SXid with no link is still an SXid (NVIDIA's table: 26008 SOE_WATCHDOG)"},
	"nvswitch sxid_monitor_test.go testParsingSXIDLogline2Metrics/soeLogs[1]": {
		"sxid 26006@0004:00:00.0 (none) \"SOE HALTED\"", "an SXid with no link is still an SXid (NVIDIA's table: 26006 SOE_HALT, FATAL, RESET_FABRIC)"},
	"nvswitch sxid_monitor_test.go testParsingSXIDLogline2Metrics/soeLogs[2]": {
		"sxid 26007@0004:00:00.0 (none) \"SOE EXTERR\"", "an SXid with no link is still an SXid (NVIDIA's table: 26007 SOE_EXTERR, FATAL, RESET_FABRIC)"},
	"nvswitch sxid_monitor_test.go testParsingSXIDLogline2Metrics/soeLogs[3]": {
		"sxid 26006@0004:00:00.0 (none) \"SOE HALT data[0] = 0x               0\"", "an SXid with no link is still an SXid (NVIDIA's table: 26006 SOE_HALT, FATAL, RESET_FABRIC)"},
	// 10001 (NVSWITCH_ERR_HW_HOST_PRIV_ERROR in NVIDIA's table) names an
	// instance, not a link.
	"nvswitch sxid_monitor_test.go testParsingSXIDLogline2Metrics/logMissingLink": {
		"sxid 10001@0000:07:00.0 non-fatal \"PRI WRITE SYSB error, instance=3\"", "an SXid with no link is still an SXid (NVIDIA's table: 10001 HOST_PRIV_ERROR)"},
	// A record cut short still carries its code, switch and severity word.
	"nvswitch sxid_monitor_test.go testParsingSXIDLogline2Metrics/logTruncated": {
		"sxid 20009@0000:06:00.0 non-fatal \"Li\"", "a line cut after its severity keeps its code, switch and severity"},
	"nvswitch sxid_monitor_test.go testParsingSXIDLogline2Metrics/logMissingLinkNumber": {
		"sxid 20009@0000:06:00.0 non-fatal \"Link\"", "a line cut after its severity keeps its code, switch and severity"},
	"nvswitch sxid_monitor_test.go testParsingSXIDLogline2Metrics/logNoSXidContinue": {
		"sxid 12033@0000:c3:00.0 (none) \"Severity 1 Engine instance 00 Sub-engine instance 00\"", "a detail record whose head is not in the log is the only record of its SXid"},
	"sxid_handler_test.go TestExtractInfoFromNVSwitchErrorMsg/Invalid message 5: Truncated": {
		"sxid 20009@0000:06:00.0 non-fatal \"Li\"", "a line cut after its severity keeps its code, switch and severity"},
	"sxid_handler_test.go TestExtractInfoFromNVSwitchErrorMsg/Invalid message 7: Link keyword but no link number": {
		"sxid 20009@0000:06:00.0 non-fatal \"Link\"", "a line cut after its severity keeps its code, switch and severity"},
	// "Severity N Engine instance ..." is the detail record the driver logs
	// after an SXid's head; after its head gpuprobe folds it in (sxidDetail),
	// alone (as here) it is the only record of that SXid and is kept.
	"sxid_handler_test.go TestExtractInfoFromNVSwitchErrorMsg/Invalid message 6: Link absent": {
		"sxid 12033@0000:c3:00.0 (none) \"Severity 1 Engine instance 00 Sub-engine instance 00\"", "a detail record whose head is not in the log is the only record of its SXid"},
	// NVSentinel's fallen-off-the-bus handler leaves a notice to its Xid
	// handler when an Xid line is in the same journal entry. gpuprobe's
	// reader records each driver record as its own fact: the notice (code
	// 0) and the Xid 79 line after it; check/xid.go judges them together.
	"gpufallen_handler_test.go TestParseGPUFallenError/GPU Fallen Error with XID following - Should NOT match": {
		"xid 0@0000:b3:00 \"The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen off the bus and is not responding to commands.\"; xid 79@0000:b3:00 \"GPU has fallen off the bus.\"",
		"the notice and the Xid 79 line are two driver records; both are facts"},
	// Lines indented to the column where the first line's message began are
	// that record's later lines (dmesg prints a multi-line printk so), so
	// the "Xid" text in the middle is part of the notice, not an Xid record:
	// the driver prints every Xid as a record of its own (nvErrorLog's
	// "NVRM: Xid (%s): %d, " printk), and NVSentinel's input here is made
	// up. The notice still says the GPU fell off the bus.
	"gpufallen_handler_test.go TestParseGPUFallenError/GPU Fallen Error with Xid in middle - Should NOT match": {
		"xid 0@0000:b3:00 \"The NVIDIA GPU 0000:b3:00.0 Xid (PCI:0000:b3:00.0): 79 fallen off the bus and is not responding to commands.\"",
		"indented lines continue the record above them; the record says the GPU fell off the bus"},
	// "NVRM: GPU at PCI:<bus>: GPU-<uuid>" maps a bus to a UUID; gpuprobe
	// has each GPU's UUID and address from NVML, and reads no map from the
	// log. Not an Xid to either parser.
	"xid_handler_test.go TestParseNVRMGPUMapLine/Valid XID Error": {
		"none", "gpuprobe takes the GPU's UUID from NVML, not from the log"},
	// NVSentinel keeps dmesg's "[73309.599396]" (seconds since boot) as a
	// cursor. A saved log's line is dated only from a wall-clock time on it
	// (lineTime): seconds since a boot the file does not date say no time.
	// From /dev/kmsg the record's header dates every line.
	"nvswitch sxid_monitor_test.go TestExtractTimestamp/log": {
		"sxid 20009@0000:06:00.0 non-fatal \"Link 04 RX Short Error Rate\"", "seconds since an undated boot give a saved line no time"},
	// "GPU reset executed: GPU-<uuid>" is NVSentinel's own journal line
	// after it reset a GPU, not a driver line.
	"xid_handler_test.go (later) TestParseGPUResetLine/Valid GPU Reset Line": {
		"none", "NVSentinel's own reset line, not a driver line"},
}

// nvsentinelFound renders what gpuprobe's reader found in a case's input.
func nvsentinelFound(l Log) string {
	var out []string
	for _, ev := range l.XIDs {
		out = append(out, fmt.Sprintf("xid %d@%s %q", ev.Code, ev.BusID, ev.Message))
	}
	for _, ev := range l.SXIDs {
		sev := ev.Severity
		if sev == "" {
			sev = "(none)"
		}
		out = append(out, fmt.Sprintf("sxid %d@%s %s %q", ev.Code, ev.BusID, sev, ev.Message))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// TestNVSentinelCases runs every NVSentinel case through the kernel-log
// reader (parseLog: records, continuation lines, Xid and SXid lines) and
// holds it to what NVIDIA's parser extracts: match or not, the code, the
// address, the switch, the severity, and where NVSentinel splits a field
// out of the message (an SXid's link, Xid 13's GPC/TPC/SM, Xid 74's link,
// the notice's PCI ID) that the message gpuprobe keeps holds it as logged.
// Registers (NVSentinel's REGn) are compared word for word.
func TestNVSentinelCases(t *testing.T) {
	cases := loadNVSentinelCases(t)
	if len(cases) != 62 {
		t.Errorf("%d cases in testdata/nvsentinel/cases.json, SOURCE says 62", len(cases))
	}
	seen := map[string]bool{}
	agree := 0
	for _, c := range cases {
		k := c.key()
		if seen[k] {
			t.Errorf("case %q twice", k)
		}
		seen[k] = true
		data := c.Input
		if c.Driver != "" {
			data = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  " + c.Driver + "  Release Build\n" + data
		}
		l := parseLog([]byte(data), time.Time{})
		found := nvsentinelFound(l)
		// The same line as a /dev/kmsg record reads the same.
		if c.Input != "" && !strings.Contains(c.Input, "\n") {
			// A record's text has no dmesg time stamp nor syslog
			// priority: the kernel's text starts right after the header.
			text := dmesgStamp.ReplaceAllString(c.Input, "")
			rec := "3,100,5000000,-;" + text
			if c.Driver != "" {
				rec = "6,99,4000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  " + c.Driver + "  Release Build\n" + rec
			}
			if got := nvsentinelFound(parseLog([]byte(rec), time.Time{})); got != found {
				t.Errorf("%s: as a kmsg record found\n  %s\nas a line\n  %s", k, got, found)
			}
		}
		diffs := nvsentinelCompare(c, l)
		if d, ok := nvsentinelDiffers[k]; ok {
			if len(diffs) == 0 {
				t.Errorf("%s: now agrees with NVSentinel; drop it from nvsentinelDiffers (and docs/checks.md)", k)
			}
			if found != d.found {
				t.Errorf("%s: differs from NVSentinel by design (%s), but found\n  %s\nwant\n  %s", k, d.why, found, d.found)
			}
			continue
		}
		for _, d := range diffs {
			t.Errorf("%s: %s\n  input %q\n  found %s", k, d, c.Input, found)
		}
		if len(diffs) == 0 {
			agree++
		}
	}
	for k := range nvsentinelDiffers {
		if !seen[k] {
			t.Errorf("nvsentinelDiffers names %q, which is no case", k)
		}
	}
	t.Logf("%d NVSentinel cases: %d agree, %d differ by design", len(cases), agree, len(nvsentinelDiffers))
	// docs/checks.md states the count and lists each difference.
	doc, err := os.ReadFile("../docs/checks.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	if want := fmt.Sprintf("%d cases agree; %d differ by design", agree, len(nvsentinelDiffers)); !strings.Contains(text, want) {
		t.Errorf("docs/checks.md does not say %q", want)
	}
}

// nvsentinelCompare lists where what the reader found in c's input differs
// from what NVSentinel's test asserts.
func nvsentinelCompare(c nvsentinelCase, l Log) []string {
	var d []string
	bad := func(f string, a ...any) { d = append(d, fmt.Sprintf(f, a...)) }
	switch c.Kind {
	case "xid":
		if !c.Match {
			if len(l.XIDs) != 0 {
				bad("NVSentinel finds no Xid, gpuprobe %d", len(l.XIDs))
			}
			return d
		}
		if len(l.XIDs) != 1 {
			bad("NVSentinel finds one Xid, gpuprobe %d", len(l.XIDs))
			return d
		}
		ev := l.XIDs[0]
		if ev.Code != c.XID {
			bad("code %d, NVSentinel %d", ev.Code, c.XID)
		}
		if want := normBus(c.PCI); ev.BusID != want {
			bad("bus %q, NVSentinel %q (%q)", ev.BusID, want, c.PCI)
		}
		if ev.DriverVersion != c.Driver {
			bad("driver %q, want %q", ev.DriverVersion, c.Driver)
		}
		for k, v := range c.Metadata {
			switch {
			case strings.HasPrefix(k, "REG"):
				i, _ := strconv.Atoi(k[3:])
				if i >= len(ev.Registers) {
					bad("%s %s: gpuprobe read %d registers", k, v, len(ev.Registers))
				} else if got := fmt.Sprintf("%032b", ev.Registers[i]); got != v {
					bad("%s %s, gpuprobe %s", k, v, got)
				}
			case k == "NVLINK":
				if !strings.Contains(ev.Message, "link "+v+"(") {
					bad("NVLINK %s not in the message %q", v, ev.Message)
				}
			default: // GPC, TPC, SM
				if !strings.Contains(ev.Message, k+" "+v) {
					bad("%s %s not in the message %q", k, v, ev.Message)
				}
			}
		}
	case "sxid":
		if !c.Match {
			if len(l.SXIDs) != 0 {
				bad("NVSentinel finds no SXid, gpuprobe %d", len(l.SXIDs))
			}
			return d
		}
		if len(l.SXIDs) != 1 {
			bad("NVSentinel finds one SXid, gpuprobe %d", len(l.SXIDs))
			return d
		}
		ev := l.SXIDs[0]
		if ev.Code != c.SXID {
			bad("code %d, NVSentinel %d", ev.Code, c.SXID)
		}
		if c.PCI != "" && ev.BusID != c.PCI {
			bad("bus %q, NVSentinel %q", ev.BusID, c.PCI)
		}
		if c.NVSwitch != nil && ev.Device != fmt.Sprintf("nvswitch%d", *c.NVSwitch) {
			bad("device %q, NVSentinel nvswitch%d", ev.Device, *c.NVSwitch)
		}
		if c.Fatal != nil && (ev.Severity == "fatal") != *c.Fatal {
			bad("severity %q, NVSentinel fatal=%v", ev.Severity, *c.Fatal)
		}
		// NVSentinel splits "Link NN" off the message; gpuprobe keeps the
		// message as logged, link and all.
		if c.Link != nil {
			f := strings.Fields(ev.Message)
			if len(f) < 2 || f[0] != "Link" {
				bad("no link in the message %q, NVSentinel link %d", ev.Message, *c.Link)
			} else if n, err := strconv.Atoi(f[1]); err != nil || n != *c.Link {
				bad("link %q in the message, NVSentinel %d", f[1], *c.Link)
			} else if c.Message != nil && strings.Join(f[2:], " ") != *c.Message {
				bad("message after the link %q, NVSentinel %q", strings.Join(f[2:], " "), *c.Message)
			}
		}
	case "gpufallen":
		var lost []int
		for i, ev := range l.XIDs {
			if ev.Code == 0 && strings.Contains(ev.Message, "fallen off the bus") {
				lost = append(lost, i)
			}
		}
		if !c.Match {
			if len(l.XIDs) != 0 {
				bad("NVSentinel finds no fallen-off-the-bus notice, gpuprobe %d events", len(l.XIDs))
			}
			return d
		}
		if len(lost) != 1 || len(l.XIDs) != 1 {
			bad("NVSentinel finds one notice, gpuprobe %d notices in %d events", len(lost), len(l.XIDs))
			return d
		}
		ev := l.XIDs[0]
		if want := normBus(c.PCI); ev.BusID != want {
			bad("bus %q, NVSentinel %q", ev.BusID, c.PCI)
		}
		if c.PCIID != "" && !strings.Contains(ev.Message, "(PCI ID: "+c.PCIID+")") {
			bad("PCI ID %s not in the message %q", c.PCIID, ev.Message)
		}
	case "timestamp":
		// NVSentinel reads dmesg's seconds since boot; gpuprobe dates a
		// saved line only from a wall-clock time on it.
		if got := lineTime([]byte(c.Input)); c.Match != !got.IsZero() {
			bad("NVSentinel reads time %v from it, gpuprobe %v", c.Seconds, got)
		}
	case "gpumap", "reset":
		// NVSentinel reads a UUID from these; gpuprobe reads no event.
		if c.Match {
			bad("NVSentinel reads %s from it (%s line)", c.UUID, c.Kind)
		}
		if len(l.XIDs)+len(l.SXIDs) != 0 {
			bad("gpuprobe finds an event in a %s line", c.Kind)
		}
	default:
		bad("unknown kind %q", c.Kind)
	}
	return d
}

// dmesgStamp is a line's "<pri>[seconds] " prefix, which a /dev/kmsg
// record's text never has.
var dmesgStamp = regexp.MustCompile(`^(<[0-9]+>)?\[[^\]]*\] `)
