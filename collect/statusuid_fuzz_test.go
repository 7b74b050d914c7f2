package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzStatusUID reads an arbitrary /proc/PID/status: never a panic, and a
// uid found is a 32-bit unsigned number written in the input.
func FuzzStatusUID(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("/proc/self/status")); err == nil {
		f.Add(string(b))
	}
	for _, s := range []string{"Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n", "Uid:", "Uid:\t-1\n", "Uid: 99999999999999999999", "Uid:\t4294967295", "Uid:\t4294967296", "Gid:\t0\nUid:\t0 0 0 0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uid, ok := statusUID(s)
		if !ok {
			return
		}
		if uid < 0 || uid > 1<<32-1 || !strings.Contains(s, "Uid:") {
			t.Fatalf("uid %d from %q", uid, s)
		}
	})
}
