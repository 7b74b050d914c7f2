package benchout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// dcgmi diag's text output (DCGM 2.x to 4.x, dcgmi/Diag.cpp):
//
//	+---------------------------+------------------------------------------------+
//	| Diagnostic                | Result                                         |
//	+===========================+================================================+
//	|-----  Metadata  ----------+------------------------------------------------|
//	| DCGM Version              | 3.3.9                                          |
//	|-----  Deployment  --------+------------------------------------------------|
//	| Denylist                  | Pass                                           |
//	+-----  Hardware  ----------+------------------------------------------------+
//	| GPU Memory                | Fail - GPU: 1                                  |
//	| Warning                   | GPU 1 ...                                      |
//	| software                  | Pass                                           |
//	|                           | GPU0: Pass                                     |
//	|                           | Warning: GPU0 ...                              |
//
// DCGM 3.x prints a test whose GPUs did not all agree as lists, passed
// first, then failed, warned and skipped, each on its own line, the test's
// name on the first only (dcgmi/Diag.cpp, Diag::HelperDisplayGpuResults,
// DCGM v3.3.9):
//
//	| Targeted Power            | Pass - GPUs: 0, 2, 3                           |
//	|                           | Fail - GPU: 1                                  |
//
// and splits a long message every 45 bytes, mid-word where it falls
// (Diag::DisplayVerboseInfo, DATA_INFO_TAG_LEN 45):
//
//	| Warning                   | GPU 1 Max power of 224.1 did not reach desire  |
//	|                           | d power minimum target_power_min_ratio of 224  |
var (
	dcgmSectionRe = lazyRE(`^[|+]-{3,}\s+(.+?)\s+-{3,}\+`)
	dcgmGPURe     = lazyRE(`^GPU\s?(\d+):\s*(\S.*)$`)
	dcgmMsgRe     = lazyRE(`^(Warning|Info|Error)\b`)
	dcgmListRe    = lazyRE(`^(Pass|Fail|Warn|Skip) - GPUs?: ([0-9][0-9, ]*)$`)
	// A test row of the table, for an excerpt pasted without the table's
	// head: a name, then one of dcgmi's result words (Diag.cpp's
	// HelperDisplayDiagResult: Pass, Fail, Warn, Skip).
	dcgmTestRowRe = lazyRE(`^\|\s*[A-Za-z][A-Za-z0-9 /&()_.-]*?\s*\|\s*(Pass|Fail|Warn|Skip)( - (All|GPUs?: [0-9][0-9, ]*))?\s*\|$`)
)

// dcgmMsgChunk is the width dcgmi cuts messages at (DATA_INFO_TAG_LEN).
const dcgmMsgChunk = 45

// dcgmList reads a "Fail - GPU: 1" or "Pass - GPUs: 0, 2, 3" line into one
// result per GPU; ok is false for anything else.
func dcgmList(val string) (rs []state.DiagResult, ok bool, err error) {
	m := dcgmListRe().FindStringSubmatch(strings.TrimSpace(val))
	if m == nil {
		return nil, false, nil
	}
	for _, f := range strings.FieldsFunc(m[2], func(r rune) bool { return r == ',' || r == ' ' }) {
		g, err := strconv.Atoi(f)
		if err != nil || g > 4096 {
			return nil, false, fmt.Errorf("GPU number %q out of range", f)
		}
		rs = append(rs, state.DiagResult{GPU: g, Status: m[1]})
	}
	return rs, len(rs) > 0, nil
}

func parseDcgmiText(name string, lines []string) (*state.Verify, error) {
	d := &state.DiagRun{Format: "text"}
	v := &state.Verify{Source: SourceDcgmiDiag, From: &state.FromRun{Diag: d}}
	category := ""
	var cur *state.DiagTest
	inTable := false
	lastPiece := 0 // bytes of the message piece last read
	for i, raw := range lines {
		n := i + 1
		l := strings.TrimSpace(stripTag(raw))
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "| Diagnostic") && strings.Contains(l, "| Result"):
			d.Tables++
			inTable, category, cur = true, "", nil
			continue
		case !inTable && d.Tables == 0 && dcgmTestRowRe().MatchString(l):
			// A table's rows pasted without its head ("| Diagnostic |
			// Result |"): read as an excerpt, said so.
			d.Tables++
			inTable, category, cur = true, "", nil
			v.Notes = append(v.Notes, fmt.Sprintf("line %d: dcgmi table rows without the table's head: an excerpt (the tests before it, the versions and the GPU list are not in it)", n))
		case !inTable:
			if strings.HasPrefix(l, "Error") || strings.HasPrefix(l, "ERROR") {
				d.Errors = append(d.Errors, l)
			}
			continue
		}
		if m := dcgmSectionRe().FindStringSubmatch(l); m != nil {
			category, cur = m[1], nil
			continue
		}
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "|=") {
			// A rule; the closing one ends the table.
			if strings.Count(l, "+") >= 2 && !strings.Contains(l, "=") && strings.Trim(l, "+-") == "" {
				inTable = false
			}
			continue
		}
		if !strings.HasPrefix(l, "|") {
			inTable = false
			if strings.HasPrefix(l, "Error") {
				d.Errors = append(d.Errors, l)
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) != 2 {
			return nil, &ParseError{File: name, Line: n, Msg: fmt.Sprintf("dcgmi table row with %d cells, want 2 (test | result)", len(cells))}
		}
		key, val := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
		// The message text as dcgmi cut it: one pad space before, padding after.
		piece := strings.TrimRight(strings.TrimPrefix(cells[1], " "), " ")
		if category == "Metadata" {
			switch key {
			case "DCGM Version":
				d.DCGMVersion = val
			case "Driver Version Detected":
				d.DriverVersion = val
			case "GPU Device IDs Detected":
				d.DeviceIDs = val
			}
			continue
		}
		list, isList, err := dcgmList(val)
		if err != nil {
			return nil, &ParseError{File: name, Line: n, Msg: err.Error()}
		}
		switch {
		case key != "" && key != "Warning" && key != "Info" && key != "Error":
			d.Tests = append(d.Tests, state.DiagTest{Category: category, Name: key, Result: val, Line: n, GPUs: list})
			cur, lastPiece = &d.Tests[len(d.Tests)-1], 0
		case cur == nil:
			return nil, &ParseError{File: name, Line: n, Msg: "dcgmi table: a result line before any test"}
		case key != "":
			cur.Messages = append(cur.Messages, key+": "+val)
			lastPiece = len(piece)
		case isList:
			cur.GPUs = append(cur.GPUs, list...)
		case dcgmGPURe().MatchString(val):
			m := dcgmGPURe().FindStringSubmatch(val)
			g, err := strconv.Atoi(m[1])
			if err != nil || g > 4096 {
				return nil, &ParseError{File: name, Line: n, Msg: "GPU number " + strconv.Quote(m[1]) + " out of range"}
			}
			cur.GPUs = append(cur.GPUs, state.DiagResult{GPU: g, Status: m[2]})
		case dcgmMsgRe().MatchString(val) || len(cur.Messages) == 0:
			cur.Messages = append(cur.Messages, val)
			lastPiece = len(piece)
		case lastPiece == dcgmMsgChunk:
			// dcgmi cut the message here, mid-word or before a space
			// it kept: the pieces join as they are.
			cur.Messages[len(cur.Messages)-1] += piece
			lastPiece = len(piece)
		default:
			// A message wrapped onto the next line.
			cur.Messages[len(cur.Messages)-1] += " " + val
			lastPiece = len(piece)
		}
	}
	if d.Tables == 0 {
		return nil, &ParseError{File: name, Msg: "no dcgmi diag result table ('| Diagnostic | Result |')"}
	}
	diagMeasurements(v, d)
	return v, nil
}

// diagMeasurements adds one MeasureDiag per test line and per GPU line.
func diagMeasurements(v *state.Verify, d *state.DiagRun) {
	for _, t := range d.Tests {
		if t.Result != "" {
			v.Measurements = append(v.Measurements, state.Measurement{Kind: state.MeasureDiag, GPU: -1, Peer: -1, Path: t.Name, Status: t.Result})
		}
		for _, g := range t.GPUs {
			v.Measurements = append(v.Measurements, state.Measurement{Kind: state.MeasureDiag, GPU: g.GPU, Peer: -1, Path: t.Name, Status: g.Status})
		}
	}
}

// parseDcgmiJSON reads `dcgmi diag -j`: DCGM 3.x nests tests under
// "DCGM GPU Diagnostic" > "test_categories" with one result per GPU
// ("gpu_ids": "0"; the deployment tests one for all, "0,1,2"); DCGM 4.x
// names results by entity ("entity_id") and adds a "test_summary". Both
// are walked; text before the document (a warning dcgmi printed) is
// skipped.
func parseDcgmiJSON(name string, data []byte) (*state.Verify, error) {
	i := bytes.IndexByte(data, '{')
	if i < 0 {
		return nil, &ParseError{File: name, Msg: "no JSON object"}
	}
	line := 1 + bytes.Count(data[:i], []byte("\n"))
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data[i:]))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		msg := "dcgmi diag -j: " + err.Error()
		if se, ok := err.(*json.SyntaxError); ok {
			return nil, &ParseError{File: name, Line: line + bytes.Count(data[i:i+int(min(se.Offset, int64(len(data)-i)))], []byte("\n")), Msg: msg}
		}
		return nil, &ParseError{File: name, Line: line, Msg: msg}
	}
	d := &state.DiagRun{Format: "json", Tables: 1}
	v := &state.Verify{Source: SourceDcgmiDiag, From: &state.FromRun{Diag: d}}
	root := doc
	for _, k := range []string{"DCGM GPU Diagnostic", "DCGM Diagnostic"} {
		if r, ok := doc[k].(map[string]any); ok {
			root = r
			break
		}
	}
	d.DCGMVersion = firstString(root, doc, "version", "DCGM Version")
	d.DriverVersion = firstString(root, doc, "Driver Version Detected", "driver_version", "driverVersion")
	for _, src := range []map[string]any{root, doc} {
		if e := jsonText(src["runtime_error"]); e != "" {
			d.Errors = append(d.Errors, e)
			break
		}
	}
	found := false
	if cats, ok := root["test_categories"].([]any); ok {
		found = true
		for _, c := range cats {
			cm, _ := c.(map[string]any)
			if cm == nil {
				continue
			}
			tests, _ := cm["tests"].([]any)
			for _, t := range tests {
				diagJSONTest(d, jsonText(cm["category"]), t)
			}
		}
	}
	for _, src := range []map[string]any{root, doc} {
		if tests, ok := src["tests"].([]any); ok && !found {
			found = true
			for _, t := range tests {
				diagJSONTest(d, "", t)
			}
		}
	}
	if !found && len(d.Errors) == 0 {
		return nil, &ParseError{File: name, Line: line, Msg: "JSON without test_categories, tests or runtime_error: not dcgmi diag -j output"}
	}
	diagMeasurements(v, d)
	return v, nil
}

func diagJSONTest(d *state.DiagRun, category string, t any) {
	tm, _ := t.(map[string]any)
	if tm == nil {
		return
	}
	dt := state.DiagTest{Category: category, Name: jsonText(tm["name"])}
	if dt.Name == "" {
		dt.Name = jsonText(tm["test_name"])
	}
	if s, ok := tm["test_summary"].(map[string]any); ok {
		dt.Result = jsonText(s["status"])
	}
	results, _ := tm["results"].([]any)
	for _, r := range results {
		rm, _ := r.(map[string]any)
		if rm == nil {
			continue
		}
		status := jsonText(rm["status"])
		ids := jsonText(rm["gpu_ids"])
		if ids == "" {
			ids = jsonText(rm["gpu_id"])
		}
		if ids == "" && (rm["entity_group"] == nil || jsonText(rm["entity_group"]) == "GPU") {
			ids = jsonText(rm["entity_id"])
		}
		if g, err := strconv.Atoi(strings.TrimSpace(ids)); err == nil && g >= 0 && g <= 4096 {
			dt.GPUs = append(dt.GPUs, state.DiagResult{GPU: g, Status: status})
		} else if dt.Result == "" {
			dt.Result = status
		}
		for _, key := range []string{"warnings", "info", "errors"} {
			dt.Messages = append(dt.Messages, jsonTexts(rm[key])...)
		}
	}
	d.Tests = append(d.Tests, dt)
}

func firstString(a, b map[string]any, keys ...string) string {
	for _, m := range []map[string]any{a, b} {
		for _, k := range keys {
			if s := jsonText(m[k]); s != "" {
				return s
			}
		}
	}
	return ""
}

// jsonText is a JSON value as text: a string, a number, or an object's
// "warning"/"message"/"msg" member (DCGM's warning objects).
func jsonText(x any) string {
	switch t := x.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case map[string]any:
		for _, k := range []string{"warning", "message", "msg", "error"} {
			if s, ok := t[k].(string); ok {
				return s
			}
		}
	}
	return ""
}

func jsonTexts(x any) []string {
	switch t := x.(type) {
	case []any:
		var out []string
		for _, e := range t {
			if s := jsonText(e); s != "" {
				out = append(out, s)
			}
		}
		return out
	default:
		if s := jsonText(t); s != "" {
			return []string{s}
		}
	}
	return nil
}
