package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// ReadFile reads data from a file; tests and the collector swap it out.
type ReadFile func(path string) ([]byte, error)

// maxIncludeDepth stops Include loops.
const maxIncludeDepth = 8

// ParseConfFile reads a Slurm-style config file, following Include lines
// (relative to the including file's directory; globs allowed). Errors never
// stop the parse: every readable line is returned with every problem.
func ParseConfFile(path string, read ReadFile) ([]slurmstate.Line, []slurmstate.ConfError) {
	if read == nil {
		read = os.ReadFile
	}
	return parseConfFile(path, read, 0)
}

func parseConfFile(path string, read ReadFile, depth int) ([]slurmstate.Line, []slurmstate.ConfError) {
	data, err := read(path)
	if err != nil {
		return nil, []slurmstate.ConfError{{File: path, Msg: err.Error()}}
	}
	lines, errs := slurmstate.ParseConf(path, data)
	var out []slurmstate.Line
	for _, l := range lines {
		if l.Include == "" {
			out = append(out, l)
			continue
		}
		target := l.Include
		if depth >= maxIncludeDepth {
			errs = append(errs, slurmstate.ConfError{File: path, Line: l.Num, Msg: "Include nested more than 8 deep (a loop?)"})
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		matches := []string{target}
		if strings.ContainsAny(target, "*?[") {
			m, err := filepath.Glob(target)
			if err != nil {
				errs = append(errs, slurmstate.ConfError{File: path, Line: l.Num, Msg: fmt.Sprintf("Include %s: %v", target, err)})
				continue
			}
			matches = m
		}
		for _, m := range matches {
			sub, subErrs := parseConfFile(m, read, depth+1)
			out = append(out, sub...)
			for _, e := range subErrs {
				if e.Line == 0 && e.File == m {
					e = slurmstate.ConfError{File: path, Line: l.Num, Msg: "Include " + m + ": " + e.Msg}
				}
				errs = append(errs, e)
			}
		}
	}
	return out, errs
}

// ParseGresConf parses gres.conf at path (following Include).
func ParseGresConf(path string, read ReadFile) *slurmstate.GresConf {
	lines, errs := ParseConfFile(path, read)
	return GresFromLines(path, lines, errs)
}

// ParseSlurmConf parses slurm.conf at path (following Include).
func ParseSlurmConf(path string, read ReadFile) *slurmstate.SlurmConf {
	lines, errs := ParseConfFile(path, read)
	return slurmstate.SlurmFromLines(path, lines, errs)
}

// ParseCgroupConf parses cgroup.conf at path.
func ParseCgroupConf(path string, read ReadFile) *slurmstate.CgroupConf {
	lines, errs := ParseConfFile(path, read)
	return slurmstate.CgroupFromLines(path, lines, errs)
}
