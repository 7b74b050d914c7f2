package jobperf

import (
	"strings"
	"testing"
	"testing/fstest"
)

// procfsTree is prometheus/procfs's captured /proc (testdata/SOURCE).
func procfsTree(t *testing.T) fstest.MapFS {
	m := fstest.MapFS{}
	loadTTAR(t, m, "testdata/procfs.ttar", map[string]string{"fixtures/proc": "proc"})
	return m
}

func file(t *testing.T, m fstest.MapFS, p string) []byte {
	t.Helper()
	f := m[p]
	if f == nil {
		t.Fatalf("%s not in the capture", p)
	}
	return f.Data
}

func TestParsersOnCapturedProc(t *testing.T) {
	m := procfsTree(t)

	st, err := parseProcStat("stat", file(t, m, "proc/26231/stat"))
	if err != nil || st.Comm != "vim" || st.State != 'R' || st.UTime != 1677 || st.STime != 44 {
		t.Errorf("26231/stat = %+v, %v; want vim R utime 1677 stime 44", st, err)
	}
	// A kernel thread: negative and huge fields after stime must not matter.
	st, err = parseProcStat("stat", file(t, m, "proc/26232/stat"))
	if err != nil || st.State != 'S' || st.UTime != 0 {
		t.Errorf("26232/stat = %+v, %v", st, err)
	}

	io, err := parseKeyed("io", file(t, m, "proc/26231/io"))
	if err != nil || io["rchar"] != 750339 || io["read_bytes"] != 1024 {
		t.Errorf("io = %v, %v", io, err)
	}
	if _, ok := io["cancelled_write_bytes"]; ok {
		t.Errorf("cancelled_write_bytes -1024 read as unsigned: %v", io)
	}

	status, err := parseProcStatus("status", file(t, m, "proc/26231/status"))
	if err != nil || status.UID != "1000" || status.CPUsAllowed != "0-7" || status.Threads != 1 {
		t.Errorf("status = %+v, %v", status, err)
	}

	ms, err := parseMountinfo("mountinfo", file(t, m, "proc/26231/mountinfo"))
	if err != nil || len(ms) != 8 {
		t.Fatalf("mountinfo: %d mounts, %v", len(ms), err)
	}
	nfs := mountOf(ms, "/mnt/nfs/test/data/shard-1")
	// Three mounts stack on /mnt/nfs/test: the last one listed is the
	// one a path resolves to.
	if nfs == nil || nfs.FSType != "nfs" || nfs.Source != "192.168.1.1:/srv/test" {
		t.Errorf("mount of /mnt/nfs/test/...: %+v", nfs)
	}
	if r := mountOf(ms, "/mnt/nfs/testing"); r == nil || r.FSType != "ext4" || r.Point != "/" {
		t.Errorf("/mnt/nfs/testing is not under /mnt/nfs/test: got %+v", r)
	}

	for _, fd := range []string{"0", "1", "10"} {
		fi, err := parseFdinfo("fdinfo", file(t, m, "proc/26231/fdinfo/"+fd))
		if err != nil || fi.Pos != 0 {
			t.Errorf("fdinfo/%s = %+v, %v", fd, fi, err)
		}
	}
	fi, _ := parseFdinfo("fdinfo", file(t, m, "proc/26231/fdinfo/1"))
	if fi.Flags != 0o2004002 || fi.Flags&oAccMode == oRDONLY {
		t.Errorf("fdinfo/1 flags %o: want 02004002, O_RDWR", fi.Flags)
	}

	for _, f := range []string{"cpu", "io", "memory"} {
		v, err := parsePressure(f, file(t, m, "proc/pressure/"+f))
		if err != nil || v != 15 {
			t.Errorf("pressure/%s = %d, %v; want total=15 of the some line", f, v, err)
		}
	}
}

func TestParserErrorsNameTheFile(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"stat no paren", second(parseProcStat("/proc/1/stat", []byte("1 bash S 1")))},
		{"stat short", second(parseProcStat("/proc/1/stat", []byte("1 (a) S 1 2")))},
		{"stat utime", second(parseProcStat("/proc/1/stat", []byte("1 (a b) S 1 1 1 1 1 1 1 1 1 1 x 2")))},
		{"pids", second(parsePIDs("/x/cgroup.procs", []byte("12\nabc\n")))},
		{"mountinfo", second(parseMountinfo("/proc/1/mountinfo", []byte("1 2 3 / /x rw\n")))},
		{"cgroup", second(parseProcCgroup("/proc/1/cgroup", []byte("garbage\n")))},
		{"pressure", second(parsePressure("/x/io.pressure", []byte("full avg10=0 total=3\n")))},
		{"uint", second(parseUint("/x/memory.current", []byte("lots\n")))},
		{"fdinfo", second(parseFdinfo("/proc/1/fdinfo/3", []byte("pos:\t9\nflags:\t0999\n")))},
		{"status", second(parseProcStatus("/proc/1/status", []byte("Name:\tx\n")))},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), "/") {
			t.Errorf("%s: error %v does not name the file", c.name, c.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestParseCornerCases(t *testing.T) {
	// The command name is the user's: spaces and ')' inside it.
	st, err := parseProcStat("stat", []byte("42 (evil) S (x) D 1 1 1 1 1 1 1 1 1 1 300 20 0 0"))
	if err != nil || st.Comm != "evil) S (x" || st.State != 'D' || st.UTime != 300 || st.STime != 20 {
		t.Errorf("stat with ')' in the name = %+v, %v", st, err)
	}
	// A name longer than the kernel's 15 bytes is not the kernel's: cut.
	st, err = parseProcStat("stat", []byte("42 ("+strings.Repeat("x", 200)+") S 1 1 1 1 1 1 1 1 1 1 300 20 0 0"))
	if err != nil || len(st.Comm) != MaxComm {
		t.Errorf("long name kept %d bytes, %v; want %d", len(st.Comm), err, MaxComm)
	}
	// Kernel escapes in mount points (fs/proc_namespace.c mangle()).
	ms, err := parseMountinfo("mi", []byte(`40 30 0:26 / /mnt/my\040data rw - nfs4 srv:/a\040b rw`+"\n"))
	if err != nil || ms[0].Point != "/mnt/my data" || ms[0].Source != "srv:/a b" {
		t.Errorf("escaped mount = %+v, %v", ms, err)
	}
	if v, err := parseUint("memory.max", []byte("max\n")); err != nil || v != nil {
		t.Errorf("memory.max \"max\" = %v, %v; want nil (no limit)", v, err)
	}
	id, dir, ok := jobInPath("/system.slice/slurmstepd.scope/job_4/step_0/user/task_0")
	if !ok || id != "4" || dir != "/system.slice/slurmstepd.scope/job_4" {
		t.Errorf("jobInPath = %q %q %v", id, dir, ok)
	}
	if _, _, ok := jobInPath("/user.slice/job_x/foo"); ok {
		t.Error("job_x is not a Slurm job")
	}
}

func TestParseHangEnv(t *testing.T) {
	e := parseHangEnv("environ", []byte("PATH=/bin\x00NCCL_RAS_ADDR=127.0.0.1:29000\x00SLURM_PROCID=7\x00NCCL_RAS_ENABLE=0\x00NCCL_RAS_ADDRESS=x\x00"))
	if e != (hangEnv{procID: "7", rasAddr: "127.0.0.1:29000", rasEnable: "0"}) {
		t.Errorf("%+v", e)
	}
	e = parseHangEnv("environ", []byte("NCCL_RAS_ADDR="+strings.Repeat("a", 200)))
	if len(e.rasAddr) != 64 || e.procID != "" {
		t.Errorf("%+v", e)
	}
}
