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

// maxIncludeDepth stops Include chains too deep to be a config.
const maxIncludeDepth = 8

// maxIncludedFiles bounds the files one parse reads, Includes and glob
// matches together: before it, a 114-byte slurm.conf of six "Include
// slurm.conf" lines made 6^8 reads (fuzz audit).
const maxIncludedFiles = 256

// ParseConfFile reads a Slurm-style config file, following Include lines
// (relative to the including file's directory; globs allowed). Errors never
// stop the parse: every readable line is returned with every problem. A
// file that includes itself (directly or through others) is an error
// naming the Include line, as is an Include past 8 deep or past 256 files.
func ParseConfFile(path string, read ReadFile) ([]slurmstate.Line, []slurmstate.ConfError) {
	if read == nil {
		read = os.ReadFile
	}
	w := &confWalk{read: read}
	return w.file(path, 0)
}

// confWalk is one ParseConfFile: the files read so far and the chain of
// Includes that led to the file being read.
type confWalk struct {
	read  ReadFile
	files int
	chain []string
}

func (w *confWalk) file(path string, depth int) ([]slurmstate.Line, []slurmstate.ConfError) {
	w.files++
	data, err := w.read(path)
	if err != nil {
		return nil, []slurmstate.ConfError{{File: path, Msg: err.Error()}}
	}
	w.chain = append(w.chain, path)
	defer func() { w.chain = w.chain[:len(w.chain)-1] }()
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
			if w.including(m) {
				errs = append(errs, slurmstate.ConfError{File: path, Line: l.Num, Msg: "Include " + m + ": a loop (it is being read already), skipped"})
				continue
			}
			if w.files >= maxIncludedFiles {
				errs = append(errs, slurmstate.ConfError{File: path, Line: l.Num, Msg: fmt.Sprintf("Include %s: more than %d files included, skipped", m, maxIncludedFiles)})
				break
			}
			sub, subErrs := w.file(m, depth+1)
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

// including reports whether path is being read already (an Include loop).
func (w *confWalk) including(path string) bool {
	for _, p := range w.chain {
		if filepath.Clean(p) == filepath.Clean(path) {
			return true
		}
	}
	return false
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
