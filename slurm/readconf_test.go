package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseConfInclude(t *testing.T) {
	files := map[string]string{
		"/etc/slurm/slurm.conf":      "ClusterName=c\nInclude nodes.conf\ninclude /etc/slurm/parts/*.conf\nInclude missing.conf\n",
		"/etc/slurm/nodes.conf":      "NodeName=gpu[1-2] Gres=gpu:8\nbad line\n",
		"/etc/slurm/parts/a.conf":    "PartitionName=a Nodes=ALL\n",
		"/etc/slurm/loop/slurm.conf": "Include slurm.conf\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	// Glob goes to the real file system; point it at nothing so only the
	// explicit includes count here.
	lines, errs := ParseConfFile("/etc/slurm/slurm.conf", read)
	var keys []string
	for _, l := range lines {
		keys = append(keys, filepath.Base(l.File)+":"+l.Pairs[0].Key)
	}
	if !reflect.DeepEqual(keys, []string{"slurm.conf:ClusterName", "nodes.conf:NodeName"}) {
		t.Errorf("lines = %v", keys)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	joined := strings.Join(msgs, "\n")
	if !strings.Contains(joined, "/etc/slurm/nodes.conf:2: \"bad\" is not Key=Value") ||
		!strings.Contains(joined, "/etc/slurm/slurm.conf:4: Include /etc/slurm/missing.conf:") {
		t.Errorf("errors:\n%s", joined)
	}
	_, errs = ParseConfFile("/etc/slurm/loop/slurm.conf", read)
	if len(errs) != 1 || errs[0].Error() != "/etc/slurm/loop/slurm.conf:1: Include /etc/slurm/loop/slurm.conf: a loop (it is being read already), skipped" {
		t.Errorf("include loop: %v", errs)
	}
	_, errs = ParseConfFile("/nope", read)
	if len(errs) != 1 || !errors.Is(fs.ErrNotExist, fs.ErrNotExist) || !strings.HasPrefix(errs[0].Error(), "/nope: ") {
		t.Errorf("missing file: %v", errs)
	}
}

// A chain of Includes deeper than 8 stops with an error on the line that
// would go deeper; a file that includes itself many times is read once
// (before, six "Include slurm.conf" lines made 6^8 reads: fuzz audit).
func TestParseConfIncludeBounds(t *testing.T) {
	reads := 0
	read := func(p string) ([]byte, error) {
		reads++
		if p == "/etc/slurm/self.conf" {
			return []byte(strings.Repeat("Include self.conf\n", 6)), nil
		}
		// /etc/slurm/c0.conf includes c1.conf, and so on without end.
		var n int
		if _, err := fmt.Sscanf(filepath.Base(p), "c%d.conf", &n); err != nil {
			return nil, fs.ErrNotExist
		}
		return []byte(fmt.Sprintf("K%d=v\nInclude c%d.conf\n", n, n+1)), nil
	}
	lines, errs := ParseConfFile("/etc/slurm/self.conf", read)
	if reads != 1 || len(lines) != 0 || len(errs) != 6 || errs[5].Line != 6 {
		t.Errorf("self include: %d reads, %v, %v", reads, lines, errs)
	}
	reads = 0
	lines, errs = ParseConfFile("/etc/slurm/c0.conf", read)
	if reads != 9 || len(lines) != 9 || len(errs) != 1 || errs[0].Error() != "/etc/slurm/c8.conf:2: Include nested more than 8 deep (a loop?)" {
		t.Errorf("deep chain: %d reads, %d lines, %v", reads, len(lines), errs)
	}
	// Many files, each included once: past maxIncludedFiles the rest are
	// skipped with an error naming the line.
	reads = 0
	var b strings.Builder
	for i := 0; i < maxIncludedFiles+10; i++ {
		fmt.Fprintf(&b, "Include x%d.conf\n", i)
	}
	wide := func(p string) ([]byte, error) {
		reads++
		if p == "/etc/slurm/wide.conf" {
			return []byte(b.String()), nil
		}
		return []byte("K=v\n"), nil
	}
	lines, errs = ParseConfFile("/etc/slurm/wide.conf", wide)
	if reads != maxIncludedFiles || len(lines) != maxIncludedFiles-1 || len(errs) != 11 || !strings.Contains(errs[0].Error(), "more than 256 files included") {
		t.Errorf("wide: %d reads, %d lines, %d errors: %v", reads, len(lines), len(errs), errs)
	}
}
