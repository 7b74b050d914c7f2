// Package simulate parses --simulate specs ("dgx-h100:row-remap-pending,gpu-lost=3")
// into a model and a list of named faults. It holds no hardware model itself:
// each collector's simulator reads the faults that concern it.
package spec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Spec is a parsed --simulate value.
type Spec struct {
	Raw    string
	Model  string
	Faults []Fault
}

// Fault is one injected failure. Value is what followed "=", if anything.
type Fault struct {
	Name  string
	Value string
}

// Models are the simulated systems, each backed by go-nvml's mock server of
// the same name.
var Models = []string{"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200"}

// FaultDoc describes a fault for --help and the docs.
type FaultDoc struct {
	Name, Arg, Effect string
}

// known lists every fault; a simulator that implements one must be listed here
// so that a typo is an error, not a silently healthy run.
var known = map[string]FaultDoc{}

// Register adds a fault name. Simulators call it from init.
func Register(d FaultDoc) { known[d.Name] = d }

// Known returns the registered faults, sorted by name.
func Known() []FaultDoc {
	out := make([]FaultDoc, 0, len(known))
	for _, d := range known {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Parse reads "model[:fault[=value],...]".
func Parse(raw string) (*Spec, error) {
	model, rest, _ := strings.Cut(strings.TrimSpace(raw), ":")
	s := &Spec{Raw: raw, Model: model}
	found := false
	for _, m := range Models {
		found = found || m == model
	}
	if !found {
		return nil, fmt.Errorf("--simulate %q: unknown model %q (known: %s)", raw, model, strings.Join(Models, ", "))
	}
	if rest == "" {
		return s, nil
	}
	for _, item := range strings.Split(rest, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(item), "=")
		if _, ok := known[name]; !ok {
			names := make([]string, 0, len(known))
			for _, d := range Known() {
				names = append(names, d.Name)
			}
			return nil, fmt.Errorf("--simulate %q: unknown fault %q (known: %s)", raw, name, strings.Join(names, ", "))
		}
		s.Faults = append(s.Faults, Fault{Name: name, Value: value})
	}
	return s, nil
}

// Has returns the faults with this name.
func (s *Spec) Has(name string) []Fault {
	var out []Fault
	for _, f := range s.Faults {
		if f.Name == name {
			out = append(out, f)
		}
	}
	return out
}

// GPU reads the fault's value as a GPU index; an absent value means GPU 0.
func (f Fault) GPU(count int) (int, error) {
	v := f.Value
	if i := strings.IndexByte(v, '@'); i >= 0 {
		v = v[i+1:]
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n >= count {
		return 0, fmt.Errorf("fault %s=%s: want a GPU index 0..%d", f.Name, f.Value, count-1)
	}
	return n, nil
}
