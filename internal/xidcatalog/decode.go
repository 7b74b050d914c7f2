package xidcatalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Mask is one IntrInfo bit pattern of the "XID 144-150 Decode" sheet: the
// bits it names (Care) and their values (Value). A register matches when
// reg&Care == Value.
type Mask struct {
	Care, Value uint32
}

// Match reports whether the register intrInfo has the pattern's bits.
func (m Mask) Match(intrInfo uint32) bool { return intrInfo&m.Care == m.Value }

// DecodeRow is one row of NVIDIA's "XID 144-150 Decode" sheet. Status lists
// the Error Status values the row is for (nil where the row gives none:
// then any). Action2 and its masks are set only on the rows that name a
// second action (the promotable, "*" rows): an IntrInfo that matches
// V1Action2/V2Action2 takes Action2 instead of Action.
type DecodeRow struct {
	Code                 int
	Subcode              string
	V1, V2               Mask
	Status               []uint32
	Action               string
	V1Action2, V2Action2 Mask
	Action2              string
	Investigatory        string
	Severity             string
	HWSW                 string
	Impact               string
}

// Guidance is one row of NVIDIA's "Guidance Classes" sheet.
type Guidance struct {
	Class, Action string
}

const decodeColumns = 13

var (
	decodeRowStart = regexp.MustCompile(`^1(4[4-9]|50) \|$`)
	statusCell     = regexp.MustCompile(`^0x[0-9A-Fa-f]{8}(/0x[0-9A-Fa-f]{8})*$`)
)

// ParseMask reads an IntrInfo pattern as the page prints it: most
// significant bit first, '0'/'1' a bit the decode needs, '-' a bit left to
// the user; the page's typography turned each "---" into an em dash.
func ParseMask(s string) (Mask, error) {
	bits := strings.ReplaceAll(s, "—", "---")
	if len(bits) != 32 {
		return Mask{}, fmt.Errorf("mask %q: %d bits, want 32", s, len(bits))
	}
	var m Mask
	for i, c := range bits {
		bit := uint32(1) << (31 - i)
		switch c {
		case '0':
			m.Care |= bit
		case '1':
			m.Care |= bit
			m.Value |= bit
		case '-':
		default:
			return Mask{}, fmt.Errorf("mask %q: %q", s, c)
		}
	}
	return m, nil
}

// sections splits the pinned file into its "---- sheet: NAME" parts.
func sections(text string) map[string][]string {
	out := map[string][]string{}
	name := ""
	for _, line := range strings.Split(text, "\n") {
		if n, ok := strings.CutPrefix(line, "---- sheet: "); ok {
			name = n
			out[name] = []string{}
			continue
		}
		if name != "" {
			out[name] = append(out[name], line)
		}
	}
	return out
}

// ParseDecode reads the pinned "XID 144-150 Decode" and "Guidance Classes"
// sheets (third_party/nvidia-xid-catalog/xid144-150-decode.txt). Each
// decode row is checked against the page's own closing line: one '|' per
// dropped cell, up to the sheet's 13 columns.
func ParseDecode(text string) ([]DecodeRow, []Guidance, error) {
	secs := sections(text)
	dec, ok := secs["XID 144-150 Decode"]
	if !ok {
		return nil, nil, fmt.Errorf("no XID 144-150 Decode sheet")
	}
	gui, ok := secs["Guidance Classes"]
	if !ok {
		return nil, nil, fmt.Errorf("no Guidance Classes sheet")
	}
	var rows []DecodeRow
	var cells []string
	flush := func(closing int) error {
		if cells == nil {
			return nil
		}
		defer func() { cells = nil }()
		r, err := decodeRow(cells)
		if err != nil {
			return err
		}
		if closing >= 0 && len(cells)+closing != decodeColumns {
			return fmt.Errorf("xid %d %s: %d cells and %d dropped, want %d", r.Code, r.Subcode, len(cells), closing, decodeColumns)
		}
		rows = append(rows, r)
		return nil
	}
	started := false
	for _, line := range dec {
		line = strings.TrimRight(line, " ")
		switch {
		case strings.HasPrefix(line, "|---|"):
			started = true
		case !started || line == "":
		case decodeRowStart.MatchString(line):
			if err := flush(-1); err != nil {
				return nil, nil, err
			}
			cells = []string{strings.TrimSuffix(line, " |")}
		case strings.Trim(line, "|") == "":
			if err := flush(len(line)); err != nil {
				return nil, nil, err
			}
		case cells == nil:
			return nil, nil, fmt.Errorf("cell %q outside a row", line)
		default:
			cells = append(cells, strings.TrimSpace(strings.TrimSuffix(line, "|")))
		}
	}
	if err := flush(-1); err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("no decode rows")
	}
	var guidance []Guidance
	var pending []string
	started = false
	for _, line := range gui {
		line = strings.TrimRight(line, " ")
		if strings.HasPrefix(line, "|---|") {
			started = true
			continue
		}
		if !started || line == "" {
			continue
		}
		pending = append(pending, strings.TrimSpace(strings.TrimSuffix(line, "|")))
		if len(pending) == 2 {
			guidance = append(guidance, Guidance{Class: pending[0], Action: pending[1]})
			pending = nil
		}
	}
	if pending != nil || len(guidance) == 0 {
		return nil, nil, fmt.Errorf("guidance classes: odd cell count or none")
	}
	return rows, guidance, nil
}

// decodeRow reads one row's cells: Xid, subcode, the two IntrInfo masks,
// then the Error Status where the row has one, the action, the action-2
// masks and action where the row has them, and the investigatory action,
// severity, HW/SW and impact cells.
func decodeRow(c []string) (DecodeRow, error) {
	var r DecodeRow
	code, err := strconv.Atoi(c[0])
	if err != nil || len(c) < 9 {
		return r, fmt.Errorf("decode row %q", c)
	}
	r.Code, r.Subcode = code, c[1]
	if r.V1, err = ParseMask(c[2]); err != nil {
		return r, fmt.Errorf("xid %d %s: V1: %v", code, r.Subcode, err)
	}
	if r.V2, err = ParseMask(c[3]); err != nil {
		return r, fmt.Errorf("xid %d %s: V2: %v", code, r.Subcode, err)
	}
	rest := c[4:]
	if statusCell.MatchString(rest[0]) {
		for _, h := range strings.Split(rest[0], "/") {
			v, _ := strconv.ParseUint(h[2:], 16, 32)
			r.Status = append(r.Status, uint32(v))
		}
		rest = rest[1:]
	}
	r.Action, rest = rest[0], rest[1:]
	if len(rest) == 7 {
		if r.V1Action2, err = ParseMask(rest[0]); err != nil {
			return r, fmt.Errorf("xid %d %s: V1 action 2: %v", code, r.Subcode, err)
		}
		if r.V2Action2, err = ParseMask(rest[1]); err != nil {
			return r, fmt.Errorf("xid %d %s: V2 action 2: %v", code, r.Subcode, err)
		}
		r.Action2, rest = rest[2], rest[3:]
	}
	if len(rest) != 4 {
		return r, fmt.Errorf("xid %d %s: %d trailing cells %q, want 4", code, r.Subcode, len(rest), rest)
	}
	r.Investigatory, r.Severity, r.HWSW, r.Impact = rest[0], rest[1], rest[2], rest[3]
	if !bucket.MatchString(r.Action) || (r.Action2 != "" && !bucket.MatchString(r.Action2)) {
		return r, fmt.Errorf("xid %d %s: action %q / %q", code, r.Subcode, r.Action, r.Action2)
	}
	return r, nil
}
