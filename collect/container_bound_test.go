package collect

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// statCounter counts the Stat calls made through it (each one a bounded
// read with a goroutine of its own on a real node).
type statCounter struct {
	fstest.MapFS
	stats int
}

func (c *statCounter) Stat(name string) (fs.FileInfo, error) {
	c.stats++
	return c.MapFS.Stat(name)
}

// TestCompatLibrariesBounded: an image the job's user builds may hold any
// number of files named libcuda.so.N in a compat directory the loader
// cache names. The collector lists a bounded number, and asks whether a
// directory holds libcuda.so.1 once per directory, not once per library
// (2,000 files behind 32 LD_LIBRARY_PATH and 64 conf directories were
// 2,000 x 96 stats and as many searches of a cache of up to 4 MiB).
func TestCompatLibrariesBounded(t *testing.T) {
	f := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	m := fstest.MapFS{"etc/ld.so.cache": f(strings.Repeat("x", 1<<20) + "/opt/compat/libcuda.so.1")}
	var conf, ldp []string
	for i := 0; i < 2*maxLibraryDirs-1; i++ {
		conf = append(conf, fmt.Sprintf("/opt/c%d", i))
	}
	conf = append(conf, "/opt/compat")
	m["etc/ld.so.conf"] = f(strings.Join(conf, "\n"))
	for i := 0; i < maxLibraryDirs; i++ {
		ldp = append(ldp, fmt.Sprintf("/opt/l%d", i))
	}
	for i := 0; i < 2000; i++ {
		m[fmt.Sprintf("opt/compat/libcuda.so.%d.0", i)] = f("ELF")
	}
	c := &statCounter{MapFS: m}
	got := compatLibraries(c, strings.Join(ldp, ":"))
	if len(got) > maxLibraries {
		t.Errorf("%d libraries listed, want at most %d", len(got), maxLibraries)
	}
	if len(got) == 0 || got[0].LoaderConf != "/etc/ld.so.conf" {
		t.Fatalf("the compat library in the loader cache lost: %+v", got)
	}
	if c.stats > 4*maxLibraryDirs {
		t.Errorf("%d stats for %d directories", c.stats, 3*maxLibraryDirs)
	}
}
