package slurmstate

import (
	"fmt"
	"strconv"
	"strings"
)

// SlurmConf holds what gpuprobe needs from slurm.conf; other keys are kept
// only as far as the generic parser reads them.
type SlurmConf struct {
	Path               string   `json:"path"`
	ClusterName        string   `json:"cluster_name,omitempty"`
	GresTypes          []string `json:"gres_types,omitempty"`
	TaskPlugin         []string `json:"task_plugin,omitempty"`
	ProctrackType      string   `json:"proctrack_type,omitempty"`
	SelectType         string   `json:"select_type,omitempty"`
	TopologyPlugin     string   `json:"topology_plugin,omitempty"`
	HealthCheckProgram string   `json:"health_check_program,omitempty"`
	Prolog             string   `json:"prolog,omitempty"`
	Epilog             string   `json:"epilog,omitempty"`
	TaskProlog         string   `json:"task_prolog,omitempty"`
	// PluginDir is slurm.conf's PluginDir= as written: a colon-separated
	// list of directories slurmd loads its plugins from ("" when unset:
	// slurmd's compiled-in default).
	PluginDir string      `json:"plugin_dir,omitempty"`
	Nodes     []NodeLine  `json:"nodes,omitempty"`
	Errors    []ConfError `json:"errors,omitempty"`
}

// NodeLine is one NodeName= line, after NodeName=DEFAULT values were applied.
type NodeLine struct {
	Where    string     `json:"where"`
	NodeName string     `json:"node_name"`
	Gres     string     `json:"gres,omitempty"`
	GresSpec []GresSpec `json:"gres_spec,omitempty"`
	// CPUs is CPUs= (or Procs=), else Boards × Sockets × Cores × Threads.
	CPUs           int `json:"cpus,omitempty"`
	Sockets        int `json:"sockets,omitempty"`
	CoresPerSocket int `json:"cores_per_socket,omitempty"`
	ThreadsPerCore int `json:"threads_per_core,omitempty"`
}

// GresSpec is one item of Gres=: "gpu:h100:8" is {gpu h100 8}.
type GresSpec struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Count uint64 `json:"count"`
}

// ParseSlurmConfData parses slurm.conf text; name is used in messages.
func ParseSlurmConfData(name string, data []byte) *SlurmConf {
	lines, errs := ParseConf(name, data)
	return SlurmFromLines(name, lines, errs)
}

func SlurmFromLines(path string, lines []Line, errs []ConfError) *SlurmConf {
	c := &SlurmConf{Path: path, Errors: errs}
	defaults := map[string]string{}
	for _, l := range lines {
		first := l.Pairs[0]
		switch {
		case first.Is("NodeName"):
			if strings.EqualFold(first.Value, "DEFAULT") {
				for _, kv := range l.Pairs[1:] {
					defaults[strings.ToLower(kv.Key)] = kv.Value
				}
				continue
			}
			n, err := nodeLine(l, defaults)
			if err != "" {
				c.Errors = append(c.Errors, ConfError{File: l.File, Line: l.Num, Msg: err})
				continue
			}
			c.Nodes = append(c.Nodes, n)
			continue
		case first.Is("PartitionName"), first.Is("NodeSet"), first.Is("DownNodes"), first.Is("FrontendName"), first.Is("SwitchName"):
			continue
		}
		for _, kv := range l.Pairs {
			v := kv.Value
			switch strings.ToLower(kv.Key) {
			case "clustername":
				c.ClusterName = v
			case "grestypes":
				c.GresTypes = splitList(v)
			case "taskplugin":
				c.TaskPlugin = splitList(v)
			case "proctracktype":
				c.ProctrackType = v
			case "selecttype":
				c.SelectType = v
			case "topologyplugin":
				c.TopologyPlugin = v
			case "healthcheckprogram":
				c.HealthCheckProgram = v
			case "prolog":
				c.Prolog = v
			case "epilog":
				c.Epilog = v
			case "taskprolog":
				c.TaskProlog = v
			case "plugindir":
				c.PluginDir = v
			}
		}
	}
	return c
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func nodeLine(l Line, defaults map[string]string) (NodeLine, string) {
	vals := map[string]string{}
	for k, v := range defaults {
		vals[k] = v
	}
	for _, kv := range l.Pairs {
		vals[strings.ToLower(kv.Key)] = kv.Value
	}
	n := NodeLine{Where: l.Where(), NodeName: vals["nodename"]}
	if _, err := ExpandHostlist(n.NodeName); err != nil || n.NodeName == "" {
		return n, fmt.Sprintf("NodeName=%q is not a valid hostlist", n.NodeName)
	}
	if g, ok := vals["gres"]; ok {
		spec, err := ParseGresSpec(g)
		if err != nil {
			return n, fmt.Sprintf("Gres=%q: %v", g, err)
		}
		n.Gres, n.GresSpec = g, spec
	}
	ints := map[string]int{}
	for _, k := range []string{"cpus", "procs", "boards", "sockets", "socketsperboard", "corespersocket", "threadspercore"} {
		if v, ok := vals[k]; ok {
			x, err := strconv.Atoi(v)
			if err != nil || x < 0 {
				return n, fmt.Sprintf("%s=%q is not a number", k, v)
			}
			ints[k] = x
		}
	}
	n.Sockets = ints["sockets"]
	if n.Sockets == 0 && ints["socketsperboard"] > 0 {
		n.Sockets = max(ints["boards"], 1) * ints["socketsperboard"]
	}
	n.CoresPerSocket, n.ThreadsPerCore = ints["corespersocket"], ints["threadspercore"]
	n.CPUs = max(ints["cpus"], ints["procs"])
	if n.CPUs == 0 && n.Sockets > 0 && n.CoresPerSocket > 0 {
		n.CPUs = n.Sockets * n.CoresPerSocket * max(n.ThreadsPerCore, 1)
	}
	return n, ""
}

// ParseGresSpec reads a Gres= value: "gpu:8", "gpu:h100:8",
// "gpu:3g.40gb:8,gpu:1g.10gb:16", "tmpdisk:10g", and scontrol's "gpu:8(S:0-1)".
func ParseGresSpec(s string) ([]GresSpec, error) {
	var out []GresSpec
	depth, start := 0, 0
	var items []string
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, s[start:i])
				start = i + 1
			}
		}
	}
	items = append(items, s[start:])
	for _, it := range items {
		it = strings.TrimSpace(it)
		if i := strings.IndexByte(it, '('); i >= 0 {
			it = it[:i]
		}
		if it == "" || strings.EqualFold(it, "(null)") {
			continue
		}
		parts := strings.Split(it, ":")
		spec := GresSpec{Name: parts[0], Count: 1}
		if spec.Name == "" {
			return nil, fmt.Errorf("%q: empty GRES name", it)
		}
		var rest []string
		for _, p := range parts[1:] {
			if !strings.EqualFold(p, "no_consume") {
				rest = append(rest, p)
			}
		}
		switch len(rest) {
		case 0:
		case 1:
			if n, err := ParseCount(rest[0]); err == nil {
				spec.Count = n
			} else {
				spec.Type = rest[0]
			}
		case 2:
			n, err := ParseCount(rest[1])
			if err != nil {
				return nil, fmt.Errorf("%q: count %q is not a number", it, rest[1])
			}
			spec.Type, spec.Count = rest[0], n
		default:
			return nil, fmt.Errorf("%q: want name[:type][:count]", it)
		}
		out = append(out, spec)
	}
	return out, nil
}

// Node returns the NodeName line that declares node (the last one wins, as
// in Slurm), and whether there is one.
func (c *SlurmConf) Node(node string) (NodeLine, bool) {
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		if appliesTo(c.Nodes[i].NodeName, node) {
			return c.Nodes[i], true
		}
	}
	return NodeLine{}, false
}

// GPUCount sums the gpu items of a node's Gres=.
func (n NodeLine) GPUCount() (uint64, bool) {
	var total uint64
	found := false
	for _, g := range n.GresSpec {
		if strings.EqualFold(g.Name, "gpu") {
			total += g.Count
			found = true
		}
	}
	return total, found
}

// HasGresType reports whether GresTypes= lists name.
func (c *SlurmConf) HasGresType(name string) bool {
	for _, t := range c.GresTypes {
		if strings.EqualFold(t, name) {
			return true
		}
	}
	return false
}

// UsesCgroupTasks reports whether TaskPlugin includes cgroup, the half of
// device confinement that lives in slurm.conf.
func (c *SlurmConf) UsesCgroupTasks() bool {
	for _, t := range c.TaskPlugin {
		if strings.EqualFold(t, "cgroup") || strings.EqualFold(t, "task/cgroup") {
			return true
		}
	}
	return false
}

// GPUNodes counts the nodes (expanded) whose Gres= declares GPUs.
func (c *SlurmConf) GPUNodes() int {
	seen := map[string]bool{}
	for _, n := range c.Nodes {
		if _, ok := n.GPUCount(); !ok {
			continue
		}
		hosts, err := ExpandHostlist(n.NodeName)
		if err != nil {
			continue
		}
		for _, h := range hosts {
			seen[h] = true
		}
	}
	return len(seen)
}

// CgroupConf holds cgroup.conf's device and core confinement.
type CgroupConf struct {
	Path             string      `json:"path"`
	ConstrainDevices bool        `json:"constrain_devices"`
	ConstrainCores   bool        `json:"constrain_cores"`
	CgroupPlugin     string      `json:"cgroup_plugin,omitempty"`
	Errors           []ConfError `json:"errors,omitempty"`
}

// ParseCgroupConfData parses cgroup.conf text.
func ParseCgroupConfData(name string, data []byte) *CgroupConf {
	lines, errs := ParseConf(name, data)
	return CgroupFromLines(name, lines, errs)
}

func CgroupFromLines(path string, lines []Line, errs []ConfError) *CgroupConf {
	c := &CgroupConf{Path: path, Errors: errs}
	for _, l := range lines {
		for _, kv := range l.Pairs {
			switch strings.ToLower(kv.Key) {
			case "constraindevices":
				b, err := parseYesNo(kv.Value)
				if err != nil {
					c.Errors = append(c.Errors, ConfError{File: l.File, Line: l.Num, Msg: "ConstrainDevices: " + err.Error()})
				}
				c.ConstrainDevices = b
			case "constraincores":
				b, err := parseYesNo(kv.Value)
				if err != nil {
					c.Errors = append(c.Errors, ConfError{File: l.File, Line: l.Num, Msg: "ConstrainCores: " + err.Error()})
				}
				c.ConstrainCores = b
			case "cgroupplugin":
				c.CgroupPlugin = kv.Value
			}
		}
	}
	return c
}

// parseYesNo reads a cgroup.conf boolean as slurmd does
// (src/common/parse_value.c, s_p_handle_boolean: yes, up, true or 1; no,
// down, false or 0; case-insensitive).
func parseYesNo(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "up", "true", "1":
		return true, nil
	case "no", "down", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not yes or no", v)
}
