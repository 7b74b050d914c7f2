package slurmstate

import (
	"github.com/gpuprobe/gpuprobe/internal/cpulist"

	"fmt"
	"strconv"
	"strings"
)

// GresConf is a parsed gres.conf.
type GresConf struct {
	Path string `json:"path"`
	// AutoDetect is the global AutoDetect= (a line with nothing else).
	AutoDetect string `json:"autodetect,omitempty"`
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

var gresKeys = map[string]bool{"autodetect": true, "count": true, "cores": true, "cpus": true, "file": true, "files": true,
	"flags": true, "links": true, "multiplefiles": true, "name": true, "nodename": true, "type": true}

// ParseGresConfData parses gres.conf text; name is used in messages.
func ParseGresConfData(name string, data []byte) *GresConf {
	lines, errs := ParseConf(name, data)
	return GresFromLines(name, lines, errs)
}

func GresFromLines(path string, lines []Line, errs []ConfError) *GresConf {
	g := &GresConf{Path: path, Records: []GresRecord{}, Errors: errs}
	for _, l := range lines {
		if err := g.addLine(l); err != "" {
			g.Errors = append(g.Errors, ConfError{File: l.File, Line: l.Num, Msg: err})
		}
	}
	return g
}

// addLine interprets one line, following gres.conf(5): NodeName= must come
// first when present, otherwise Name= (or a lone AutoDetect=) does.
func (g *GresConf) addLine(l Line) string {
	for _, kv := range l.Pairs {
		if !gresKeys[strings.ToLower(kv.Key)] {
			return fmt.Sprintf("unrecognized key %q (gres.conf keys: AutoDetect, Count, Cores, File, Flags, Links, MultipleFiles, Name, NodeName, Type)", kv.Key)
		}
	}
	first := l.Pairs[0]
	node, hasNode := l.Get("NodeName")
	if hasNode && !first.Is("NodeName") {
		return "NodeName= must be the first key on the line"
	}
	if !hasNode && !first.Is("Name") && !first.Is("AutoDetect") {
		return fmt.Sprintf("line starts with %s=; it must start with NodeName= or Name=", first.Key)
	}
	if hasNode {
		if _, err := ExpandHostlist(node); err != nil || node == "" {
			return fmt.Sprintf("NodeName=%q is not a valid hostlist", node)
		}
	}
	name, hasName := l.Get("Name")
	ad, hasAD := l.Get("AutoDetect")
	if hasAD {
		if err := checkAutoDetect(ad); err != "" {
			return err
		}
	}
	if !hasName {
		only := true
		for _, kv := range l.Pairs {
			only = only && (kv.Is("NodeName") || kv.Is("AutoDetect"))
		}
		if !only || !hasAD {
			return "no Name= on the line (Slurm: \"Invalid GRES data, no type name\")"
		}
		if hasNode {
			g.NodeAutoDetect = append(g.NodeAutoDetect, NodeSetting{Where: l.Where(), NodeName: node, Value: strings.ToLower(ad)})
		} else {
			g.AutoDetect = strings.ToLower(ad)
		}
		return ""
	}
	if name == "" {
		return "empty Name="
	}
	r := GresRecord{Where: l.Where(), NodeName: node, Name: name}
	if hasAD {
		r.AutoDetect = strings.ToLower(ad)
		// A per-line AutoDetect= on a node-specific line sets it for the node.
		if hasNode {
			g.NodeAutoDetect = append(g.NodeAutoDetect, NodeSetting{Where: l.Where(), NodeName: node, Value: r.AutoDetect})
		} else if g.AutoDetect == "" {
			g.AutoDetect = r.AutoDetect
		}
	}
	r.Type, _ = l.Get("Type")
	if f, ok := getAny(l, "File", "Files"); ok {
		files, err := ExpandHostlist(f)
		if err != nil || len(files) == 0 {
			return fmt.Sprintf("File=%q: %v", f, errOr(err, "no file"))
		}
		r.Files = files
	}
	if f, ok := l.Get("MultipleFiles"); ok {
		files, err := ExpandHostlist(f)
		if err != nil || len(files) == 0 {
			return fmt.Sprintf("MultipleFiles=%q: %v", f, errOr(err, "no file"))
		}
		if r.Files != nil {
			return "File= and MultipleFiles= exclude each other"
		}
		r.MultipleFiles = files
	}
	for _, key := range []string{"Cores", "CPUs"} {
		if c, ok := l.Get(key); ok {
			if strings.EqualFold(c, "null") || c == "" {
				// Slurm takes an empty or "null" Cores= as "any core".
				continue
			}
			cores, err := cpulist.Parse(c)
			if err != nil {
				return fmt.Sprintf("%s=%q: %v", key, c, err)
			}
			r.CoresKey, r.CoresRaw, r.Cores = key, c, cores
		}
	}
	r.Links, r.LinksSet = l.Get("Links")
	if fl, ok := l.Get("Flags"); ok {
		for _, f := range strings.Split(fl, ",") {
			if f = strings.TrimSpace(f); f != "" {
				r.Flags = append(r.Flags, f)
			}
		}
	}
	if c, ok := l.Get("Count"); ok {
		if _, err := ParseCount(c); err != nil {
			return fmt.Sprintf("Count=%q: %v", c, err)
		}
		r.Count = c
	}
	g.Records = append(g.Records, r)
	return ""
}

func getAny(l Line, keys ...string) (string, bool) {
	for _, k := range keys {
		if v, ok := l.Get(k); ok {
			return v, true
		}
	}
	return "", false
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// AutoDetect values gres.conf(5) knows.
var autoDetectValues = []string{"nvml", "nvidia", "rsmi", "oneapi", "nrt", "off", "full"}

func checkAutoDetect(v string) string {
	for _, a := range autoDetectValues {
		if strings.EqualFold(v, a) {
			return ""
		}
	}
	return fmt.Sprintf("AutoDetect=%q is not one of %s", v, strings.Join(autoDetectValues, ", "))
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
