package slurmstate

import (
	"fmt"
	"strconv"
	"strings"
)

// GresConf is a parsed gres.conf.
type GresConf struct {
	Path string `json:"path"`
	// AutoDetect is the global AutoDetect= (a line with nothing else).
	AutoDetect string `json:"autodetect,omitempty"`
	// AutoDetectWhere is the file:line that set AutoDetect.
	AutoDetectWhere string `json:"autodetect_where,omitempty"`
	// NodeAutoDetect are "NodeName=... AutoDetect=..." settings, which
	// override the global one for those nodes.
	NodeAutoDetect []NodeSetting `json:"node_autodetect,omitempty"`
	Records        []GresRecord  `json:"records"`
	Errors         []ConfError   `json:"errors,omitempty"`
}

// NodeSetting is a value that applies to the nodes of a hostlist.
type NodeSetting struct {
	Where    string `json:"where"`
	NodeName string `json:"node_name"`
	Value    string `json:"value"`
}

// GresRecord is one Name= line of gres.conf, with ranges expanded.
type GresRecord struct {
	Where    string `json:"where"`
	NodeName string `json:"node_name,omitempty"`
	Name     string `json:"name"`
	Type     string `json:"type,omitempty"`
	// Files are File= expanded ("/dev/nvidia[0-1]" gives two).
	Files []string `json:"files,omitempty"`
	// MultipleFiles is the MIG form: every file one GRES needs, first the GPU.
	MultipleFiles []string `json:"multiple_files,omitempty"`
	// CoresKey is "Cores" or its older alias "CPUs"; Cores is expanded.
	CoresKey   string   `json:"cores_key,omitempty"`
	CoresRaw   string   `json:"cores_raw,omitempty"`
	Cores      []int    `json:"cores,omitempty"`
	Links      string   `json:"links,omitempty"`
	LinksSet   bool     `json:"links_set,omitempty"`
	Flags      []string `json:"flags,omitempty"`
	Count      string   `json:"count,omitempty"`
	AutoDetect string   `json:"autodetect,omitempty"`
}

// ParseCount reads a GRES count with Slurm's k/m/g/t suffixes (powers of 1024).
func ParseCount(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	mult := uint64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a count")
	}
	if n > (1<<63)/mult {
		return 0, fmt.Errorf("count too large")
	}
	return n * mult, nil
}

// AppliesTo reports whether the record is for node (no NodeName= means all).
func (r GresRecord) AppliesTo(node string) bool { return appliesTo(r.NodeName, node) }

func appliesTo(hostlist, node string) bool {
	if hostlist == "" {
		return true
	}
	hosts, err := ExpandHostlist(hostlist)
	if err != nil {
		return false
	}
	for _, h := range hosts {
		if h == node {
			return true
		}
	}
	return false
}

// ForNode returns the records of one GRES name that apply to node.
func (g *GresConf) ForNode(node, name string) []GresRecord {
	var out []GresRecord
	for _, r := range g.Records {
		if strings.EqualFold(r.Name, name) && r.AppliesTo(node) {
			out = append(out, r)
		}
	}
	return out
}

// AutoDetectFor is the AutoDetect mode in force on node ("" when unset) and
// where it was set: a node-specific setting beats the global one.
func (g *GresConf) AutoDetectFor(node string) (string, string) {
	for i := len(g.NodeAutoDetect) - 1; i >= 0; i-- {
		s := g.NodeAutoDetect[i]
		if appliesTo(s.NodeName, node) {
			return s.Value, s.Where
		}
	}
	if g.AutoDetect != "" {
		return g.AutoDetect, "global AutoDetect=" + g.AutoDetect
	}
	return "", ""
}

// GresDevice is one device a gres.conf declares, with the record it came from.
type GresDevice struct {
	Where    string `json:"where"`
	File     string `json:"file"`
	Type     string `json:"type,omitempty"`
	CoresKey string `json:"cores_key,omitempty"`
	CoresRaw string `json:"cores_raw,omitempty"`
	Cores    []int  `json:"cores,omitempty"`
}

// Devices lists the device of every GPU the records declare, in declaration
// order (MultipleFiles: the first file, the GPU itself).
func Devices(records []GresRecord) []GresDevice {
	var out []GresDevice
	for _, r := range records {
		files := r.Files
		if files == nil && r.MultipleFiles != nil {
			files = r.MultipleFiles[:1]
		}
		for _, f := range files {
			out = append(out, GresDevice{Where: r.Where, File: f, Type: r.Type, CoresKey: r.CoresKey, CoresRaw: r.CoresRaw, Cores: r.Cores})
		}
	}
	return out
}
