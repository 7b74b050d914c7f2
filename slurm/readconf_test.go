package slurm

import (
	"errors"
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
	if len(errs) == 0 || !strings.Contains(errs[len(errs)-1].Error(), "nested more than 8") {
		t.Errorf("include loop: %v", errs)
	}
	_, errs = ParseConfFile("/nope", read)
	if len(errs) != 1 || !errors.Is(fs.ErrNotExist, fs.ErrNotExist) || !strings.HasPrefix(errs[0].Error(), "/nope: ") {
		t.Errorf("missing file: %v", errs)
	}
}
