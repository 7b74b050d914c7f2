package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alive reports whether pid runs (a zombie awaiting its reaper counts as gone).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// The bug: a timed-out scontrol wrapper was killed but its children (the
// real scontrol it ran) kept running. Now the whole process group goes.
func TestScontrolTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	path, _ := fakeScontrol(t, "sleep 30 &\necho $! > "+pidFile+"\nwait\n")
	s := &Scontrol{Path: path, Timeout: 300 * time.Millisecond}
	if _, err := s.ShowNode(context.Background(), "n1"); err == nil {
		t.Fatal("hung wrapper: no error")
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	deadline := time.Now().Add(2 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the wrapper's child %d still runs after the timeout", pid)
	}
}
