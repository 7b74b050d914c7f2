package slurm

import (
	"fmt"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

var gresKeys = map[string]bool{"autodetect": true, "count": true, "cores": true, "cpus": true, "file": true, "files": true,
	"flags": true, "links": true, "multiplefiles": true, "name": true, "nodename": true, "type": true}

// ParseGresConfData parses gres.conf text; name is used in messages.
func ParseGresConfData(name string, data []byte) *slurmstate.GresConf {
	lines, errs := slurmstate.ParseConf(name, data)
	return GresFromLines(name, lines, errs)
}

// GresFromLines builds the gres.conf of parsed lines; a line that cannot be
// parsed is an error naming its file and line.
func GresFromLines(path string, lines []slurmstate.Line, errs []slurmstate.ConfError) *slurmstate.GresConf {
	g := &slurmstate.GresConf{Path: path, Records: []slurmstate.GresRecord{}, Errors: errs}
	for _, l := range lines {
		if err := addGresLine(g, l); err != "" {
			g.Errors = append(g.Errors, slurmstate.ConfError{File: l.File, Line: l.Num, Msg: err})
		}
	}
	return g
}

// addGresLine interprets one line, following gres.conf(5): NodeName= must come
// first when present, otherwise Name= (or a lone AutoDetect=) does.
func addGresLine(g *slurmstate.GresConf, l slurmstate.Line) string {
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
	// slurmd reads a gres.conf line by its first key (s_p_parse_file in
	// src/common/parse_config.c calls _parse_next_key once a line) against
	// gres_g_node_config_load's table in src/common/gres.c: AutoDetect is a
	// plain string there, NodeName= and Name= take the rest of the line. So
	// a line that starts with AutoDetect= sets the global AutoDetect and
	// leaves the rest unparsed: "Parse error in file gres.conf line N",
	// then "fatal: error opening/reading gres.conf" (slurmd -G, 22.05).
	// gres.conf(5): AutoDetect "can be on a line by itself" or "combined
	// with NodeName", as in NodeName=tux3 AutoDetect=off Name=gpu ...
	if first.Is("AutoDetect") && len(l.Pairs) > 1 {
		return fmt.Sprintf("AutoDetect= starts the line, so slurmd takes it as the global AutoDetect and cannot parse the rest (\"Parse error in file gres.conf line %d\", then fatal \"error opening/reading gres.conf\"): put AutoDetect= on a line of its own, or after NodeName= (NodeName=<nodes> AutoDetect=%s Name=...)", l.Num, l.Pairs[0].Value)
	}
	if hasNode {
		if _, err := slurmstate.ExpandHostlist(node); err != nil || node == "" {
			return fmt.Sprintf("NodeName=%q is not a valid hostlist", node)
		}
	}
	name, hasName := l.Get("Name")
	// An AutoDetect= value slurmd does not know parses: check.LintAutoDetect
	// judges it, naming the line.
	ad, hasAD := l.Get("AutoDetect")
	if !hasName {
		only := true
		for _, kv := range l.Pairs {
			only = only && (kv.Is("NodeName") || kv.Is("AutoDetect"))
		}
		if !only || !hasAD {
			return "no Name= on the line (Slurm: \"Invalid GRES data, no type name\")"
		}
		if hasNode {
			g.NodeAutoDetect = append(g.NodeAutoDetect, slurmstate.NodeSetting{Where: l.Where(), NodeName: node, Value: strings.ToLower(ad)})
		} else {
			g.AutoDetect, g.AutoDetectWhere = strings.ToLower(ad), l.Where()
		}
		return ""
	}
	if name == "" {
		return "empty Name="
	}
	r := slurmstate.GresRecord{Where: l.Where(), NodeName: node, Name: name}
	if hasAD {
		r.AutoDetect = strings.ToLower(ad)
		// A per-line AutoDetect= on a node-specific line sets it for the node.
		if hasNode {
			g.NodeAutoDetect = append(g.NodeAutoDetect, slurmstate.NodeSetting{Where: l.Where(), NodeName: node, Value: r.AutoDetect})
		} else if g.AutoDetect == "" {
			g.AutoDetect, g.AutoDetectWhere = r.AutoDetect, l.Where()
		}
	}
	r.Type, _ = l.Get("Type")
	if f, ok := getAny(l, "File", "Files"); ok {
		files, err := slurmstate.ExpandHostlist(f)
		if err != nil || len(files) == 0 {
			return fmt.Sprintf("File=%q: %v", f, errOr(err, "no file"))
		}
		r.Files = files
	}
	if f, ok := l.Get("MultipleFiles"); ok {
		files, err := slurmstate.ExpandHostlist(f)
		if err != nil || len(files) == 0 {
			return fmt.Sprintf("MultipleFiles=%q: %v", f, errOr(err, "no file"))
		}
		// With File= too the line parses; check.LintGres names it.
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
		if _, err := slurmstate.ParseCount(c); err != nil {
			return fmt.Sprintf("Count=%q: %v", c, err)
		}
		r.Count = c
	}
	g.Records = append(g.Records, r)
	return ""
}

func getAny(l slurmstate.Line, keys ...string) (string, bool) {
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
