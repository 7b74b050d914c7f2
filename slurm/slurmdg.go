package slurm

import (
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/cpulist"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// SlurmdGDevice is one line of "slurmd -G": the GRES view slurmd settled on
// after merging gres.conf with what AutoDetect found.
type SlurmdGDevice struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Index int    `json:"index"`
	File  string `json:"file,omitempty"`
	Cores []int  `json:"cores,omitempty"`
	Links string `json:"links,omitempty"`
	Flags string `json:"flags,omitempty"`
}

// ParseSlurmdG reads "slurmd -G" output; lines that are not GRES lines
// (plugin chatter) are skipped, and a GRES line that does not parse is
// reported with its line number.
func ParseSlurmdG(name string, out string) ([]SlurmdGDevice, []slurmstate.ConfError) {
	var devs []SlurmdGDevice
	var errs []slurmstate.ConfError
	for i, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "slurmd: Gres ")
		if !ok {
			continue
		}
		lines, perr := slurmstate.ParseConf(name, []byte(rest))
		if len(perr) > 0 || len(lines) != 1 {
			errs = append(errs, slurmstate.ConfError{File: name, Line: i + 1, Msg: "unreadable slurmd -G line"})
			continue
		}
		get := func(k string) string {
			v, _ := lines[0].Get(k)
			if v == "(null)" {
				return ""
			}
			return v
		}
		d := SlurmdGDevice{Name: get("Name"), Type: get("Type"), File: get("File"), Links: get("Links"), Flags: get("Flags"), Index: -1}
		if v := get("Index"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, slurmstate.ConfError{File: name, Line: i + 1, Msg: "Index=" + v + " is not a number"})
				continue
			}
			d.Index = n
		}
		if v := get("Cores"); v != "" {
			c, err := cpulist.Parse(v)
			if err != nil {
				errs = append(errs, slurmstate.ConfError{File: name, Line: i + 1, Msg: "Cores=" + v + ": " + err.Error()})
				continue
			}
			d.Cores = c
		}
		devs = append(devs, d)
	}
	return devs, errs
}
