package jobperf

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// The parsers below read the kernel's own formats. Every one takes the file's
// name for its errors, returns an error rather than panic on anything a
// corrupt or hostile file holds, and has a fuzz target (fuzz_test.go).

// parseKeyed reads "key value" lines (cpu.stat, memory.events, /proc/PID/io
// "key: value", fdinfo "key:\tvalue") into a map of the unsigned values.
// Lines whose value is not a number (fdinfo's "inotify wd:3 ...") are
// skipped; a key seen twice keeps its first value.
func parseKeyed(name string, data []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		i := strings.IndexAny(line, " \t:")
		if i <= 0 {
			continue
		}
		key := line[:i]
		value := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line[i:]), ":"))
		// Values that are not one unsigned number (fdinfo's "inotify wd:3
		// ...", /proc/PID/io's cancelled_write_bytes going negative) are
		// not counters gpuprobe reads.
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			continue
		}
		if _, seen := out[key]; !seen {
			out[key] = n
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no \"key value\" counters", name)
	}
	return out, nil
}

// parseUint reads a one-value file (memory.current, cpuacct.usage). "max"
// (cgroup v2's "no limit") is nil with no error.
func parseUint(name string, data []byte) (*uint64, error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return nil, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: want a number, got %q", name, clip(s))
	}
	return &n, nil
}

// v1Unlimited is the smallest memory.limit_in_bytes read as "no limit":
// cgroup v1 writes PAGE_COUNTER_MAX * PAGE_SIZE (9223372036854771712 with
// 4 KiB pages), which no node's memory comes near. Anything at or above
// 2^62 bytes (4 EiB) is unlimited.
const v1Unlimited = uint64(1) << 62

// parsePressure reads the "some" line's total= (microseconds) of a PSI file
// (cpu.pressure, memory.pressure, io.pressure; Documentation/accounting/psi.rst):
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=12345
func parsePressure(name string, data []byte) (uint64, error) {
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s: bad total %q", name, clip(v))
				}
				return n, nil
			}
		}
		return 0, fmt.Errorf("%s: \"some\" line has no total=", name)
	}
	return 0, fmt.Errorf("%s: no \"some\" line", name)
}

// procStat is what gpuprobe reads of /proc/PID/stat (proc(5)): the command
// name, the state letter and the user and system CPU time in clock ticks.
type procStat struct {
	// Comm is field 2 without its parentheses: the executable's name or
	// whatever the process set with prctl(PR_SET_NAME) (PyTorch's DataLoader
	// workers name themselves pt_data_worker). Untrusted: any bytes the
	// user chose, at most MaxComm of them kept.
	Comm         string
	State        byte
	PPID         int32 // field 4 (0 where it is not a number)
	UTime, STime uint64
}

// MaxComm bounds the command name kept from /proc/PID/stat. The kernel's is
// at most 15 bytes (TASK_COMM_LEN 16, include/linux/sched.h); a bigger one
// is not the kernel's and is cut.
const MaxComm = 64

// parseProcStat reads /proc/PID/stat. The command name (field 2) is in
// parentheses and may hold spaces and ')' (it is the user's choice), so the
// fields are counted from the last ')'.
func parseProcStat(name string, data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("%s: no ')' closing the command name", name)
	}
	f := strings.Fields(string(data[i+1:]))
	// After the name: state(3) ppid pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime(14) stime(15).
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("%s: %d fields after the command name, want at least 13", name, len(f))
	}
	if len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("%s: state %q is not one letter", name, clip(f[0]))
	}
	u, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("%s: utime %q: %w", name, clip(f[11]), err)
	}
	s, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("%s: stime %q: %w", name, clip(f[12]), err)
	}
	comm := ""
	if j := bytes.IndexByte(data, '('); j >= 0 && j < i {
		comm = string(data[j+1 : i])
		if len(comm) > MaxComm {
			comm = comm[:MaxComm]
		}
	}
	ppid, _ := strconv.ParseInt(f[1], 10, 32)
	return procStat{Comm: comm, State: f[0][0], PPID: int32(max(ppid, 0)), UTime: u, STime: s}, nil
}

// procStatus is what gpuprobe reads of /proc/PID/status: the real UID, the
// CPUs the task may run on and its thread count (0: no Threads: line).
type procStatus struct {
	UID         string
	CPUsAllowed string
	Threads     int
}

func parseProcStatus(name string, data []byte) (procStatus, error) {
	var st procStatus
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "Uid":
			f := strings.Fields(v)
			if len(f) == 0 {
				return st, fmt.Errorf("%s: empty Uid line", name)
			}
			if _, err := strconv.ParseUint(f[0], 10, 32); err != nil {
				return st, fmt.Errorf("%s: Uid %q is not a number", name, clip(f[0]))
			}
			st.UID = f[0]
		case "Cpus_allowed_list":
			st.CPUsAllowed = strings.TrimSpace(v)
		case "Threads":
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 31); err == nil {
				st.Threads = int(n)
			}
		}
	}
	if st.UID == "" {
		return st, fmt.Errorf("%s: no Uid line", name)
	}
	return st, nil
}

// parsePIDs reads cgroup.procs / tasks: one PID a line.
func parsePIDs(name string, data []byte) ([]int32, error) {
	var out []int32
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		n, err := strconv.ParseInt(line, 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s:%d: %q is not a PID", name, i+1, clip(line))
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// mount is one line of /proc/PID/mountinfo (proc(5)).
type mount struct {
	Root, Point string // Root: the mount's root within its filesystem
	FSType      string
	Source      string
	SuperOpts   []string
}

// parseMountinfo reads /proc/PID/mountinfo:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// Paths are octal-escaped by the kernel (\040 space, \011 tab, \012 newline,
// \134 backslash) and decoded here.
func parseMountinfo(name string, data []byte) ([]mount, error) {
	var out []mount
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for j := 6; j < len(f); j++ {
			if f[j] == "-" {
				sep = j
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("%s:%d: not a mountinfo line (want 'ID PARENT MAJ:MIN ROOT POINT OPTS ... - TYPE SOURCE OPTS')", name, i+1)
		}
		m := mount{Root: unescapeMount(f[3]), Point: unescapeMount(f[4]), FSType: f[sep+1]}
		if sep+2 < len(f) {
			m.Source = unescapeMount(f[sep+2])
		}
		if sep+3 < len(f) {
			m.SuperOpts = strings.Split(f[sep+3], ",")
		}
		if !strings.HasPrefix(m.Point, "/") {
			return nil, fmt.Errorf("%s:%d: mount point %q is not absolute", name, i+1, clip(m.Point))
		}
		out = append(out, m)
	}
	return out, nil
}

// unescapeMount decodes the kernel's \ooo escapes (fs/proc_namespace.c
// mangle()).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOct(s[i+1]) && isOct(s[i+2]) && isOct(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOct(c byte) bool { return c >= '0' && c <= '7' }

// procCgroup is one line of /proc/PID/cgroup: "ID:CONTROLLERS:PATH"
// (cgroups(7)); v2 is "0::PATH".
type procCgroup struct {
	Controllers []string // empty for v2
	Path        string
}

func parseProcCgroup(name string, data []byte) ([]procCgroup, error) {
	var out []procCgroup
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		id, rest, ok := strings.Cut(line, ":")
		ctl, p, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 || !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("%s:%d: not 'ID:CONTROLLERS:/PATH'", name, i+1)
		}
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return nil, fmt.Errorf("%s:%d: hierarchy ID %q is not a number", name, i+1, clip(id))
		}
		c := procCgroup{Path: p}
		if ctl != "" {
			c.Controllers = strings.Split(ctl, ",")
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no cgroup lines", name)
	}
	return out, nil
}

// jobComponent finds Slurm's job_<id> directory in a cgroup path and returns
// the id and the path up to and including it.
var jobComponent = regexp.MustCompile(`^(.*?/job_([0-9]+))(?:/|$)`)

func jobInPath(p string) (id, dir string, ok bool) {
	m := jobComponent.FindStringSubmatch(p)
	if m == nil {
		return "", "", false
	}
	return m[2], m[1], true
}

// uidComponent is cgroup v1's uid_<uid> directory above job_<id>.
var uidComponent = regexp.MustCompile(`/uid_([0-9]+)/job_[0-9]+(?:/|$)`)

// fdinfo is what gpuprobe reads of /proc/PID/fdinfo/FD (proc(5)): the file
// offset and the open flags (octal).
type fdinfo struct {
	Pos   uint64
	Flags uint64
}

// Open flags (include/uapi/asm-generic/fcntl.h; x86, arm64 and ppc64le
// agree on these two).
const (
	oAccMode   = 0o3
	oRDONLY    = 0o0
	oDirectory = 0o200000
)

func parseFdinfo(name string, data []byte) (fdinfo, error) {
	var fi fdinfo
	var havePos, haveFlags bool
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "pos":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fi, fmt.Errorf("%s: pos %q is not a number", name, clip(v))
			}
			fi.Pos, havePos = n, true
		case "flags":
			n, err := strconv.ParseUint(v, 8, 64)
			if err != nil {
				return fi, fmt.Errorf("%s: flags %q is not octal", name, clip(v))
			}
			fi.Flags, haveFlags = n, true
		}
	}
	if !havePos || !haveFlags {
		return fi, fmt.Errorf("%s: no pos: and flags: lines", name)
	}
	return fi, nil
}

// clip bounds untrusted text quoted in an error (ASCII marker, as before).
func clip(s string) string { return safetext.ClipWith(s, 64, "...") }

// MaxWchan bounds a wchan kept: the kernel writes one symbol name
// (KSYM_NAME_LEN is 512, real ones are tens of bytes).
const MaxWchan = 128

// parseWchan reads /proc/PID/wchan (proc(5)): the kernel function the task
// sleeps in, no newline; "0" (or empty) while it runs. Without
// CONFIG_KALLSYMS, or to a reader the kernel hides addresses from, it is
// "0" too. Anything but one symbol name ([A-Za-z0-9_.$]) is an error: the
// value is printed, and a symbol never holds anything else.
func parseWchan(name string, data []byte) (string, error) {
	s := strings.TrimSpace(string(data))
	if s == "" || s == "0" {
		return "", nil
	}
	if len(s) > MaxWchan {
		return "", fmt.Errorf("%s: %d bytes, not a kernel symbol", name, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '.' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return "", fmt.Errorf("%s: %q is not a kernel symbol", name, clip(s))
		}
	}
	return s, nil
}

// parseEnvironVar finds key's value in /proc/PID/environ (NUL-separated
// KEY=VALUE strings, as the process was exec'd with; proc(5)). ok is false
// where the key is absent.
func parseEnvironVar(data []byte, key string) (value string, ok bool) {
	prefix := []byte(key + "=")
	for len(data) > 0 {
		var kv []byte
		if i := bytes.IndexByte(data, 0); i >= 0 {
			kv, data = data[:i], data[i+1:]
		} else {
			kv, data = data, nil
		}
		if v, found := bytes.CutPrefix(kv, prefix); found {
			return string(v), true
		}
	}
	return "", false
}

// hangEnv is what --hang reads of a task's environment (once: the
// environment a process was exec'd with does not change).
type hangEnv struct {
	procID, rasAddr, rasEnable string
	// ncclLib is whether /proc/PID/maps maps a libnccl shared object
	// (scanMapsNCCL; read with the environment, once).
	ncclLib string
}

// parseHangEnv reads SLURM_PROCID, NCCL_RAS_ADDR and NCCL_RAS_ENABLE from
// /proc/PID/environ. The values are the job's text: the NCCL ones are kept
// as read, cut to 64 bytes (ncclras validates the address before use).
func parseHangEnv(name string, data []byte) hangEnv {
	var e hangEnv
	e.procID, _ = parseProcID(name, data)
	if v, ok := parseEnvironVar(data, "NCCL_RAS_ADDR"); ok {
		e.rasAddr = cut64(v)
	}
	if v, ok := parseEnvironVar(data, "NCCL_RAS_ENABLE"); ok {
		e.rasEnable = cut64(v)
	}
	return e
}

func cut64(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.ToValidUTF8(s, "?")
}

// parseProcID reads SLURM_PROCID from /proc/PID/environ: the task's rank
// in the step (srun sets it for every task). Only a decimal number of at
// most 9 digits is a rank; anything else is an error.
func parseProcID(name string, data []byte) (string, error) {
	v, ok := parseEnvironVar(data, "SLURM_PROCID")
	if !ok {
		return "", nil
	}
	if v == "" || len(v) > 9 || strings.Trim(v, "0123456789") != "" {
		return "", fmt.Errorf("%s: SLURM_PROCID %q is not a rank number", name, clip(v))
	}
	return v, nil
}

// MaxMapsBytes bounds how much of /proc/PID/maps --hang scans for a
// libnccl mapping (once per process). A PyTorch process's maps is a few
// hundred KB (a line per mapping, some thousands of mappings); one larger
// than this without a match is "not known", not "not loaded".
const MaxMapsBytes = 2 << 20

// maxMapsLine bounds one line of /proc/PID/maps: the fixed fields and a
// path of at most PATH_MAX (4096) bytes.
const maxMapsLine = 8 << 10

// scanMapsNCCL reads /proc/PID/maps from r, at most limit bytes, and says
// whether a libnccl shared object is mapped: state.NCCLLoaded at the first
// mapping whose path's base name starts "libnccl" and contains ".so"
// (libnccl.so.2, as PyTorch wheels load it from
// site-packages/nvidia/nccl/lib; libnccl-net.so, a plugin only NCCL loads),
// state.NCCLNotLoaded when the whole file was read without one, and ""
// (not known) when it was cut at limit, a line was longer than any maps
// line, the read failed, or the file was empty (a zombie or a kernel
// thread maps nothing). The paths are the job's own names: none is kept.
func scanMapsNCCL(r io.Reader, limit int64) string {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), maxMapsLine)
	lines := 0
	var read int64
	for sc.Scan() {
		line := sc.Bytes()
		read += int64(len(line)) + 1
		if read > limit {
			// The line may be the cut end of a longer one: not judged.
			return ""
		}
		lines++
		if mapsLineNCCL(line) {
			return state.NCCLLoaded
		}
	}
	if sc.Err() != nil || lr.N <= 0 || lines == 0 {
		return ""
	}
	return state.NCCLNotLoaded
}

// mapsLineNCCL says whether one maps line ("start-end perms offset dev
// inode   path") maps a libnccl shared object.
func mapsLineNCCL(line []byte) bool {
	// Skip the five fixed fields; the rest, trimmed, is the path (it may
	// hold spaces, and ends " (deleted)" for a replaced file).
	rest := line
	for i := 0; i < 5; i++ {
		rest = bytes.TrimLeft(rest, " \t")
		j := bytes.IndexAny(rest, " \t")
		if j < 0 {
			return false
		}
		rest = rest[j:]
	}
	p := bytes.TrimSpace(rest)
	p = bytes.TrimSuffix(p, []byte(" (deleted)"))
	if len(p) == 0 || p[0] != '/' {
		return false // anonymous, [heap], [stack], [vdso]
	}
	base := p[bytes.LastIndexByte(p, '/')+1:]
	return bytes.HasPrefix(base, []byte("libnccl")) && bytes.Contains(base, []byte(".so"))
}
