// Package xidcatalog reads the "Xids" sheet of NVIDIA's Xid Catalog as the
// pinned page text in third_party/nvidia-xid-catalog/xids.txt keeps it. It
// is shared by the generator (tools/xidgen), which writes check's table,
// and by the test that re-reads the pinned source row for row. sxid.go does
// the same for NVIDIA's NVSwitch SXid table (third_party/nvsentinel-sxid/,
// tools/sxidgen), and also holds the Go text that generator writes.
package xidcatalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Row is one row of the catalogue: the code, NVIDIA's mnemonic and
// description, and the two resolution buckets. Immediate and Investigatory
// are empty where the page shows no bucket for the row (162-172 in the
// pinned copy); Notes are the row's remaining cells (Xid 154 linkage and
// trigger conditions: the page's rendering does not say which is which).
type Row struct {
	Code          int
	Mnemonic      string
	Description   string
	Immediate     string
	Investigatory string
	Notes         []string
}

// bucket is the shape of a resolution bucket name in the Immediate column
// (RESET_GPU, CHECK_APP/CUDA, XID_154): upper case, digits, '_' and '/'.
var bucket = regexp.MustCompile(`^[A-Z][A-Z0-9_]*(/[A-Z0-9_]+)?$`)

// Parse reads the pinned page text: the header block ends at a "----" line;
// a row starts at a line "XID |" and each following line is one cell
// ending " |"; lines made only of '|' close a row with its empty cells.
func Parse(text string) ([]Row, error) {
	_, body, ok := strings.Cut(text, "\n----\n")
	if !ok {
		return nil, fmt.Errorf("no ---- line after the header")
	}
	var rows []Row
	var cells []string
	flush := func() error {
		if cells == nil {
			return nil
		}
		defer func() { cells = nil }()
		// XID, code, mnemonic, description, four "Applies to" cells.
		if len(cells) < 8 {
			return fmt.Errorf("row %q: %d cells", cells, len(cells))
		}
		code, err := strconv.Atoi(cells[1])
		if err != nil {
			return fmt.Errorf("row %q: code: %v", cells, err)
		}
		for _, a := range cells[4:8] {
			if a != "YES" && a != "NO" {
				return fmt.Errorf("row for Xid %d: applies-to cell %q", code, a)
			}
		}
		r := Row{Code: code, Mnemonic: cells[2], Description: cells[3]}
		rest := cells[8:]
		if len(rest) > 0 && bucket.MatchString(rest[0]) {
			r.Immediate, rest = rest[0], rest[1:]
			if len(rest) > 0 {
				r.Investigatory, rest = rest[0], rest[1:]
			}
		}
		r.Notes = rest
		if n := len(rows); n > 0 && rows[n-1].Code >= code {
			return fmt.Errorf("row for Xid %d after Xid %d", code, rows[n-1].Code)
		}
		rows = append(rows, r)
		return nil
	}
	started := false
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimRight(line, " ")
		if line == "XID |" {
			if err := flush(); err != nil {
				return nil, err
			}
			started = true
			cells = []string{"XID"}
			continue
		}
		if !started || line == "" || strings.Trim(line, "|") == "" {
			continue
		}
		cells = append(cells, strings.TrimSpace(strings.TrimSuffix(line, "|")))
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no XID rows")
	}
	return rows, nil
}
