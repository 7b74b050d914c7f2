package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// GresProblem is a mistake in a config that Slurm itself rejects or that
// silently breaks GPU binding.
type GresProblem struct {
	Where string `json:"where"`
	Msg   string `json:"msg"`
	// NotFatal is set where slurmd starts and the node schedules all the
	// same: a Links= it drops ("Ignoring invalid Links=... for Name=gpu",
	// src/interfaces/gres.c _parse_gres_config) or one it keeps for every
	// device of a multi-device line (slurmd -G 22.05: Count=2 ...
	// Links=-1,0). Only the GPU link hints are lost or wrong.
	NotFatal bool `json:"not_fatal,omitempty"`
}

func (p GresProblem) String() string { return p.Where + ": " + p.Msg }

var knownGresFlags = map[string]bool{"countonly": true, "explicit": true, "one_sharing": true, "all_sharing": true,
	"env_uuid": true, "nvidia_gpu_env": true, "amd_gpu_env": true, "intel_gpu_env": true, "opencl_env": true, "no_gpu_env": true}

// LintGres finds the mistakes slurmd would reject or mis-handle in the records
// of one GRES name that apply to node ("" = every record): duplicate device
// files, Type= or File= on some records but not others, bad Links=, Count=
// that disagrees with File=, unknown Flags=.
func LintGres(g *slurmstate.GresConf, node, name string) []GresProblem {
	var recs []slurmstate.GresRecord
	for _, r := range g.Records {
		if strings.EqualFold(r.Name, name) && (node == "" || r.AppliesTo(node)) {
			recs = append(recs, r)
		}
	}
	var out []GresProblem
	seen := map[string]string{}
	typed, untyped, withFile, withoutFile := "", "", "", ""
	for _, r := range recs {
		for _, f := range append(append([]string{}, r.Files...), r.MultipleFiles...) {
			if prev, dup := seen[f]; dup && !strings.Contains(f, "nvidia-caps") && len(r.MultipleFiles) == 0 {
				out = append(out, GresProblem{Where: r.Where, Msg: fmt.Sprintf("duplicate device file %s (also at %s; slurmd: \"gpu duplicate device file name\")", f, prev)})
			} else if !dup {
				seen[f] = r.Where
			}
		}
		if r.Type != "" {
			typed = r.Where
		} else {
			untyped = r.Where
		}
		if r.Files != nil || r.MultipleFiles != nil {
			withFile = r.Where
		} else if !hasFlag(r.Flags, "CountOnly") {
			withoutFile = r.Where
		}
		if r.LinksSet {
			if msg := GresLinksProblem(r); msg != "" {
				out = append(out, GresProblem{Where: r.Where, Msg: msg, NotFatal: true})
			}
		}
		if r.Count != "" && r.Files != nil {
			if n, err := slurmstate.ParseCount(r.Count); err == nil && n != uint64(len(r.Files)) && strings.EqualFold(name, "gpu") {
				out = append(out, GresProblem{Where: r.Where, Msg: fmt.Sprintf("Count=%s but File= names %d devices", r.Count, len(r.Files))})
			}
		}
		if r.Files != nil && r.MultipleFiles != nil {
			out = append(out, GresProblem{Where: r.Where, Msg: "File= and MultipleFiles= on one line: gres.conf(5) makes them mutually exclusive (MultipleFiles= is the MIG form: every file one GRES needs), and slurmd rejects the line"})
		}
		for _, f := range r.Flags {
			if !knownGresFlags[strings.ToLower(f)] {
				out = append(out, GresProblem{Where: r.Where, Msg: fmt.Sprintf("unknown Flags= value %q", f)})
			}
		}
	}
	out = append(out, lintEnvFlags(recs, name)...)
	if typed != "" && untyped != "" {
		out = append(out, GresProblem{Where: untyped, Msg: fmt.Sprintf("some %s records have Type= (%s) and this one does not (slurmd: fatal, \"some records have Type= specification while others do not\")", name, typed)})
	}
	if withFile != "" && withoutFile != "" {
		out = append(out, GresProblem{Where: withoutFile, Msg: fmt.Sprintf("some %s records have File= (%s) and this one does not (slurmd: fatal, \"some records have File specification while others do not\")", name, withFile)})
	}
	// gres.c _foreach_gres_conf: once the records of one name for this
	// node have neither File= nor Type=, a second such record is fatal
	// ("gres.conf duplicate records for gpu"), Count= or not, AutoDetect or
	// not (slurmd -G 22.05 on the magic_castle#27 file: AutoDetect=nvml,
	// Name=gpu, Name=gpu). One line with Count=N is the form slurmd takes.
	if len(recs) > 1 && typed == "" && withFile == "" {
		bare := 0
		for _, r := range recs {
			if r.Files == nil && r.MultipleFiles == nil {
				bare++
			}
		}
		if bare == len(recs) {
			out = append(out, GresProblem{Where: recs[1].Where, Msg: fmt.Sprintf("%d %s records for this node and none has File= or Type= (first at %s): slurmd stops with fatal: \"gres.conf duplicate records for %s\"; give one line with Count=, File= lines, or only AutoDetect", len(recs), name, recs[0].Where, name)})
		}
	}
	return out
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if strings.EqualFold(x, f) {
			return true
		}
	}
	return false
}

// gresMaxLink is GRES_MAX_LINK of Slurm's gres.h: the largest link count
// gres_links_validate takes.
const gresMaxLink = 1023

// GresLinksProblem applies gres.conf(5) (a comma list with one entry per
// GPU, -1 for the device itself, 0 for no link, N for N links; one device a
// line) as slurmd reads it, gres_links_validate in src/interfaces/gres.c:
// the list is cut with strtok_r, so empty fields vanish ("0,0,-1,,0,0,0,0,0"
// is the 8 entries of deepops#1102, which slurmd -G 22.05 keeps); each
// entry is strtol'd whole, from -2 to GRES_MAX_LINK; exactly one is -1.
// slurmd drops a Links= that fails ("Ignoring invalid Links=... for
// Name=gpu") and runs on.
func GresLinksProblem(r slurmstate.GresRecord) string {
	v := r.Links
	if len(r.Files) > 1 {
		return fmt.Sprintf("Links= on a line with %d devices; Links describes one device per line (slurmd gives every device of the line this row, so at most one is right)", len(r.Files))
	}
	if v == "" {
		return fmt.Sprintf("Links=%q is empty (slurmd: \"Links is an empty string\", then \"Ignoring invalid Links\")", r.Links)
	}
	self := 0
	for _, p := range strings.Split(v, ",") {
		if p == "" {
			continue // strtok_r skips empty fields
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < -2 || n > gresMaxLink {
			return fmt.Sprintf("Links=%q: %q is not -1, 0 or a link count up to %d (slurmd: \"Failed to parse token\", then \"Ignoring invalid Links\")", r.Links, p, gresMaxLink)
		}
		if n == -1 {
			self++
		}
	}
	if self != 1 {
		return fmt.Sprintf("Links=%q must mark the device itself with exactly one -1 (slurmd: \"Ignoring invalid Links\")", r.Links)
	}
	return ""
}

var envFlags = []string{"no_gpu_env", "nvidia_gpu_env", "amd_gpu_env", "intel_gpu_env", "opencl_env"}

// lintEnvFlags applies slurmd's rule for the env flags: a record without
// them inherits the previous record's, and one that names different ones
// than the record before it is fatal; no_gpu_env excludes the others.
func lintEnvFlags(recs []slurmstate.GresRecord, name string) []GresProblem {
	var out []GresProblem
	prev := "default"
	for i, r := range recs {
		var mine []string
		for _, f := range r.Flags {
			for _, e := range envFlags {
				if strings.EqualFold(f, e) {
					mine = append(mine, e)
				}
			}
		}
		if len(mine) > 1 && hasFlag(mine, "no_gpu_env") {
			out = append(out, GresProblem{Where: r.Where, Msg: "Flags=no_gpu_env excludes every other env flag (slurmd: fatal)"})
		}
		if len(mine) == 0 {
			continue
		}
		sort.Strings(mine)
		cur := strings.Join(mine, ",")
		if i > 0 && cur != prev {
			out = append(out, GresProblem{Where: r.Where, Msg: fmt.Sprintf("env flags %s differ from the %s of the %s record before (slurmd: fatal, \"does not match env flags for previous GRES\")", cur, prev, name)})
		}
		prev = cur
	}
	return out
}

// AutoDetect values gres.conf(5) knows.
var autoDetectValues = []string{"nvml", "nvidia", "rsmi", "oneapi", "nrt", "off", "full"}

// SlurmdAutoDetect is the AutoDetect mode slurmd reads from a gres.conf
// value. gres.c _handle_autodetect_flags matches "nvml", "rsmi" and
// "oneapi" as case-insensitive substrings (so "nvml:" is nvml: slurmd -G
// 22.05 on the ultron config) and "off" whole; the values later Slurm added
// (nvidia, nrt, full) are taken whole here. ok is false for a value slurmd
// does not know ("unknown autodetect flag").
func SlurmdAutoDetect(v string) (mode string, ok bool) {
	l := strings.ToLower(strings.TrimSpace(v))
	for _, sub := range []string{"nvml", "rsmi", "oneapi"} {
		if strings.Contains(l, sub) {
			return sub, true
		}
	}
	for _, a := range autoDetectValues {
		if l == a {
			return a, true
		}
	}
	return "", false
}

// LintAutoDetect finds AutoDetect= values slurmd does not know, in force on
// node ("" = every node): the global one, node-specific ones, and those on
// Name= lines, each naming its file and line.
func LintAutoDetect(g *slurmstate.GresConf, node string) []GresProblem {
	var out []GresProblem
	seen := map[string]bool{}
	bad := func(where, v string) {
		if v == "" || where == "" || seen[where] {
			return
		}
		seen[where] = true
		if _, ok := SlurmdAutoDetect(v); ok {
			return
		}
		out = append(out, GresProblem{Where: where, Msg: fmt.Sprintf("AutoDetect=%q is not one of %s", v, strings.Join(autoDetectValues, ", "))})
	}
	bad(g.AutoDetectWhere, g.AutoDetect)
	for _, s := range g.NodeAutoDetect {
		if node == "" || (slurmstate.GresRecord{NodeName: s.NodeName}).AppliesTo(node) {
			bad(s.Where, s.Value)
		}
	}
	for _, r := range g.Records {
		if node == "" || r.AppliesTo(node) {
			bad(r.Where, r.AutoDetect)
		}
	}
	return out
}

// noCUDAEnvFlag is the gres.conf env flag setting that keeps slurmd from
// setting CUDA_VISIBLE_DEVICES for node's GPUs, and the line that gives it:
// "no_gpu_env" (gres.conf(5): "Set no GPU-specific environment
// variables"), or env flags without nvidia_gpu_env ("amd_gpu_env": only
// ROCR_VISIBLE_DEVICES is set). "" when Slurm sets it: with no env flag at
// all every variable is set (gres.conf(5): "If no environment-related flags
// are specified, then nvidia_gpu_env, amd_gpu_env, intel_gpu_env, and
// opencl_env will be implicitly set by default"). A record without env
// flags takes the previous record's (lintEnvFlags), so the first record
// that names some decides.
func noCUDAEnvFlag(g *slurmstate.GresConf, node string) (flags, where string) {
	if g == nil {
		return "", ""
	}
	for _, r := range g.ForNode(node, "gpu") {
		var mine []string
		for _, f := range r.Flags {
			for _, e := range envFlags {
				if strings.EqualFold(f, e) {
					mine = append(mine, e)
				}
			}
		}
		if len(mine) == 0 {
			continue
		}
		if hasFlag(mine, "nvidia_gpu_env") {
			return "", ""
		}
		return strings.Join(mine, ","), r.Where
	}
	return "", ""
}

// LintGresSpec finds what slurmctld rejects in a node's Gres=: the same GRES
// with a type in some items and none in others.
func LintGresSpec(where string, spec []slurmstate.GresSpec) []GresProblem {
	typed, untyped := map[string]bool{}, map[string]bool{}
	var out []GresProblem
	for _, g := range spec {
		n := strings.ToLower(g.Name)
		if g.Type != "" {
			typed[n] = true
		} else {
			untyped[n] = true
		}
		if typed[n] && untyped[n] {
			out = append(out, GresProblem{Where: where, Msg: fmt.Sprintf("Gres= gives %s with a type in some items and without in others (slurmctld: \"GRES in slurm.conf have a type while others do not\")", g.Name)})
			typed[n], untyped[n] = false, false
		}
	}
	return out
}
