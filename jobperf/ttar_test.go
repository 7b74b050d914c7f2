package jobperf

import (
	"bufio"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// loadTTAR reads a ttar archive (the text format prometheus/procfs and
// cgroup_exporter keep their captured /proc and cgroup trees in) into fsys,
// renaming each entry by the first matching prefix of rename (old -> new,
// entries matching none are dropped). ttar: "Path: P" / "Lines: N" then N
// lines (a last line ending in "EOF" has no newline; "NULLBYTE" is \0),
// "Directory: P", "SymlinkTo: T", "Mode: M".
func loadTTAR(t *testing.T, fsys fstest.MapFS, file string, rename map[string]string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := func(p string) (string, bool) {
		for old, nw := range rename {
			if p == old || strings.HasPrefix(p, old+"/") {
				return strings.Trim(nw+strings.TrimPrefix(p, old), "/"), true
			}
		}
		return "", false
	}
	var cur string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Directory: "):
			if n, ok := name(strings.TrimPrefix(line, "Directory: ")); ok {
				fsys[n] = &fstest.MapFile{Mode: fs.ModeDir | 0o555}
			}
		case strings.HasPrefix(line, "Path: "):
			cur = strings.TrimPrefix(line, "Path: ")
		case strings.HasPrefix(line, "SymlinkTo: "):
			if n, ok := name(cur); ok {
				fsys[n] = &fstest.MapFile{Data: []byte(strings.TrimPrefix(line, "SymlinkTo: ")), Mode: fs.ModeSymlink | 0o777}
			}
		case strings.HasPrefix(line, "Lines: "):
			count, err := strconv.Atoi(strings.TrimPrefix(line, "Lines: "))
			if err != nil {
				t.Fatalf("%s: %q", file, line)
			}
			var b strings.Builder
			for i := 0; i < count && sc.Scan(); i++ {
				l := strings.ReplaceAll(sc.Text(), "NULLBYTE", "\x00")
				if strings.HasSuffix(l, "EOF") {
					b.WriteString(strings.TrimSuffix(l, "EOF"))
					continue
				}
				b.WriteString(l + "\n")
			}
			if n, ok := name(cur); ok {
				fsys[n] = &fstest.MapFile{Data: []byte(b.String()), Mode: 0o444}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
