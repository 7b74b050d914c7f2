package collect

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/kernel"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() { collectors = append(collectors, collector{name: "container", run: collectContainer}) }

// containerReadTimeout bounds one file of the container collector; a
// /proc/self/mountinfo of a node with many mounts is the largest, a few
// hundred KiB, so rootfs' 4 MiB is the size bound.
const (
	containerReadTimeout = 2 * time.Second
	containerReadLimit   = 4 << 20
	// maxLibraryDirs bounds the LD_LIBRARY_PATH entries listed.
	maxLibraryDirs = 32
)

func collectContainer(ctx context.Context, n *state.Node, o Options) state.Source {
	root := o.Sources.Root
	if root == nil {
		root = os.DirFS("/")
	}
	view := o.Sources.ContainerView
	if view == nil {
		view = root
	}
	environ := os.Environ
	if o.Environ != nil {
		environ = o.Environ
	}
	sys := o.SysfsRoot
	if sys == "" {
		sys = "/sys"
	}
	done := make(chan *state.Container, 1)
	go func() {
		bound := func(f fs.FS) fs.FS { return readlimit.FS(f, "/", containerReadTimeout, containerReadLimit) }
		done <- readContainer(bound(view), bound(root), o.procfs(), sys, environ())
	}()
	select {
	case c := <-done:
		n.Container = c
		if len(c.Errors) > 0 {
			return state.Source{OK: false, Error: strings.Join(c.Errors, "; ")}
		}
		return state.Source{OK: true}
	case <-ctx.Done():
		return state.Source{OK: false, Error: "container files not read before the collection deadline"}
	}
}

// fsName turns an absolute path into an fs.FS name.
func fsName(p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

// readContainer detects the container runtime from its documented markers
// and, inside one, reads what the container.* checks judge. Outside a
// container it records nothing else: the host's own /dev/shm and limits are
// the node checks' business. fsys is the step's own view (its /proc/self,
// /dev, marker files and libraries); host is where sysfs and the kernel
// module's version are read (the same tree on a real node).
func readContainer(fsys, host fs.FS, procfs, sysfs string, environ []string) *state.Container {
	c := &state.Container{}
	env := map[string]string{}
	var keys []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; !dup {
			keys = append(keys, k)
		}
		env[k] = v
	}
	sort.Strings(keys)
	readIn := func(fsys fs.FS, p string) ([]byte, bool) {
		b, err := fs.ReadFile(fsys, fsName(p))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.Errors = append(c.Errors, p+": "+err.Error())
			}
			return nil, false
		}
		return b, true
	}
	read := func(p string) ([]byte, bool) { return readIn(fsys, p) }
	exists := func(p string) bool {
		_, err := fs.Stat(fsys, fsName(p))
		return err == nil
	}
	var mounts []Mount
	if b, ok := read(path.Join(procfs, "self/mountinfo")); ok {
		mounts = ParseMountinfo(string(b))
	}
	var cgroup1 string
	if b, ok := read(path.Join(procfs, "1/cgroup")); ok {
		cgroup1 = string(b)
	}
	var containerenv []byte
	if b, ok := read("/run/.containerenv"); ok {
		containerenv = b
	}
	c.Evidence = detectContainer(env, keys, mounts, cgroup1, containerenv != nil, string(containerenv), exists)
	if len(c.Evidence) == 0 {
		return c
	}
	c.Runtime = pickRuntime(c.Evidence)

	if m := mountAt(mounts, "/dev/shm"); m != nil {
		c.Shm = &state.ShmMount{FSType: m.FSType, Source: m.Source, Root: m.Root, SuperOptions: m.Super, SizeBytes: mountSize(m.Super)}
	}
	if b, ok := read(path.Join(procfs, "meminfo")); ok {
		c.MemTotalBytes = memTotal(string(b))
	}
	if b, ok := read(path.Join(procfs, "self/limits")); ok {
		if l, found := ParseLimits(string(b))["Max locked memory"]; found {
			c.Memlock = &l
		} else {
			c.Errors = append(c.Errors, procfs+"/self/limits: no \"Max locked memory\" row")
		}
	}
	if es, err := fs.ReadDir(host, fsName(path.Join(sysfs, "class/infiniband"))); err == nil {
		for _, e := range es {
			c.IBDevices = append(c.IBDevices, e.Name())
		}
	}
	es, err := fs.ReadDir(fsys, fsName("/dev/infiniband"))
	c.DevInfinibandRead = err == nil || errors.Is(err, fs.ErrNotExist)
	for _, e := range es {
		switch {
		case strings.HasPrefix(e.Name(), "uverbs"):
			c.UverbsDevices = append(c.UverbsDevices, "/dev/infiniband/"+e.Name())
		case e.Name() == "rdma_cm":
			c.RDMACM = true
		}
	}
	if v, ok := env["NVIDIA_VISIBLE_DEVICES"]; ok {
		c.NVIDIAVisibleDevices = &v
	}
	if v, ok := env["MELLANOX_VISIBLE_DEVICES"]; ok {
		c.MellanoxVisibleDevices = &v
	}
	if b, ok := readIn(host, path.Join(sysfs, "module/nvidia/version")); ok && strings.TrimSpace(string(b)) != "" {
		c.ModuleVersion, c.ModuleVersionFrom = strings.TrimSpace(string(b)), path.Join(sysfs, "module/nvidia/version")
	} else if b, ok := readIn(host, path.Join(procfs, "driver/nvidia/version")); ok {
		c.ModuleVersion, c.ModuleVersionFrom = kernel.ParseModuleVersion(string(b)), path.Join(procfs, "driver/nvidia/version")
	}
	c.NVMLLibraries = nvmlLibraries(fsys, env["LD_LIBRARY_PATH"])
	c.CompatLibraries = compatLibraries(fsys, env["LD_LIBRARY_PATH"])
	plugin, set := env["NCCL_NET_PLUGIN"]
	c.NetPlugins = netPlugins(fsys, env["LD_LIBRARY_PATH"], plugin, set)
	return c
}

// detectContainer lists every marker present. The markers and their
// sources are in docs/checks.md, "Containers".
func detectContainer(env map[string]string, keys []string, mounts []Mount, cgroup1 string, hasContainerenv bool, containerenv string, exists func(string) bool) []state.ContainerEvidence {
	var ev []state.ContainerEvidence
	add := func(rt, seen string) { ev = append(ev, state.ContainerEvidence{Runtime: rt, Seen: seen}) }
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_"):
			add("enroot", "env "+k+"="+env[k]+" (a Pyxis srun option)")
		case strings.HasPrefix(k, "PYXIS_"), strings.HasPrefix(k, "ENROOT_"):
			add("enroot", "env "+k+"="+env[k])
		case k == "APPTAINER_CONTAINER", k == "SINGULARITY_CONTAINER", k == "APPTAINER_NAME", k == "SINGULARITY_NAME":
			add("apptainer", "env "+k+"="+env[k])
		case k == "container" && env[k] == "podman":
			add("podman", "env container=podman")
		case k == "KUBERNETES_SERVICE_HOST":
			add("kubernetes", "env "+k+"="+env[k])
		}
	}
	if m := mountAt(mounts, "/sys/class/infiniband"); m != nil && m.FSType == "tmpfs" {
		add("enroot", "mountinfo: tmpfs over /sys/class/infiniband (Enroot's Mellanox hook)")
	}
	if exists("/.singularity.d") {
		add("apptainer", "directory /.singularity.d")
	}
	if hasContainerenv {
		seen := "file /run/.containerenv"
		for _, l := range strings.Split(containerenv, "\n") {
			if strings.HasPrefix(l, "engine=") {
				seen += " (" + l + ")"
			}
		}
		add("podman", seen)
	}
	if exists("/.dockerenv") {
		add("docker", "file /.dockerenv")
	}
	for _, l := range strings.Split(cgroup1, "\n") {
		_, _, p := cutCgroupLine(l)
		switch {
		case strings.Contains(p, "/docker/") || strings.Contains(p, "/docker-"):
			add("docker", "/proc/1/cgroup: "+l)
		case strings.Contains(p, "/libpod-") || strings.Contains(p, "/machine.slice/libpod"):
			add("podman", "/proc/1/cgroup: "+l)
		case strings.Contains(p, "kubepods"):
			add("kubernetes", "/proc/1/cgroup: "+l)
		default:
			continue
		}
		break
	}
	return ev
}

func cutCgroupLine(l string) (id, ctrl, p string) {
	id, rest, _ := strings.Cut(l, ":")
	ctrl, p, _ = strings.Cut(rest, ":")
	return id, ctrl, p
}

func pickRuntime(ev []state.ContainerEvidence) string {
	for _, rt := range state.ContainerRuntimes {
		for _, e := range ev {
			if e.Runtime == rt {
				return rt
			}
		}
	}
	return ""
}

// Mount is one line of /proc/PID/mountinfo (proc_pid_mountinfo(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
type Mount struct {
	Root, MountPoint, Options, FSType, Source, Super string
}

// ParseMountinfo reads mountinfo lines; a malformed line is skipped. Paths
// have space, tab, newline and backslash escaped as octal (\040).
func ParseMountinfo(text string) []Mount {
	var out []Mount
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(f) < sep+3 {
			continue
		}
		m := Mount{Root: unescapeMount(f[3]), MountPoint: unescapeMount(f[4]), Options: f[5], FSType: f[sep+1], Source: unescapeMount(f[sep+2])}
		if len(f) > sep+3 {
			m.Super = f[sep+3]
		}
		out = append(out, m)
	}
	return out
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountAt is the mount on top at p: a later line over-mounts an earlier one.
func mountAt(ms []Mount, p string) *Mount {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].MountPoint == p {
			return &ms[i]
		}
	}
	return nil
}

// mountSize reads tmpfs' size= option (the kernel prints it in KiB:
// "size=65536k"; a user's fstab may say m or g, shown as given on old
// kernels); 0 when absent or unreadable.
func mountSize(super string) uint64 {
	for _, o := range strings.Split(super, ",") {
		v, ok := strings.CutPrefix(o, "size=")
		if !ok || v == "" {
			continue
		}
		mult := uint64(1)
		switch v[len(v)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			v = v[:len(v)-1]
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > ^uint64(0)/mult {
			return 0
		}
		return n * mult
	}
	return 0
}

func memTotal(meminfo string) uint64 {
	for _, l := range strings.Split(meminfo, "\n") {
		if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if n, err := strconv.ParseUint(f[0], 10, 64); err == nil && n <= ^uint64(0)>>10 {
					return n << 10
				}
			}
		}
	}
	return 0
}

// ParseLimits reads /proc/PID/limits (proc_pid_limits(5); the kernel
// prints it in fs/proc/base.c as "%-25s %-20s %-20s %-10s"):
//
//	Limit                     Soft Limit           Hard Limit           Units
//	Max locked memory         8388608              8388608              bytes
//
// The row name ends where the header's "Soft Limit" column starts; a value
// is a number or "unlimited" (nil). A row that does not parse is left out.
func ParseLimits(text string) map[string]state.Rlimit {
	out := map[string]state.Rlimit{}
	lines := strings.Split(text, "\n")
	if len(lines) == 0 {
		return out
	}
	col := strings.Index(lines[0], "Soft Limit")
	if !strings.HasPrefix(lines[0], "Limit") || col <= 0 {
		return out
	}
	for _, l := range lines[1:] {
		if len(l) <= col {
			continue
		}
		name := strings.TrimSpace(l[:col])
		f := strings.Fields(l[col:])
		if name == "" || len(f) < 2 {
			continue
		}
		soft, ok1 := limitValue(f[0])
		hard, ok2 := limitValue(f[1])
		if !ok1 || !ok2 {
			continue
		}
		r := state.Rlimit{Soft: soft, Hard: hard}
		if len(f) > 2 {
			r.Unit = f[2]
		}
		out[name] = r
	}
	return out
}

func limitValue(s string) (*uint64, bool) {
	if s == "unlimited" {
		return nil, true
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, false
	}
	return &n, true
}

// nvmlLibDirs are the library directories of the images NVIDIA's container
// toolkit and Enroot inject into (the toolkit mounts the host's libraries
// into the image's own library directory; NVIDIA's CUDA images also put
// /usr/local/nvidia/lib64 on LD_LIBRARY_PATH).
var nvmlLibDirs = []string{"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"}

var nvmlLibName = regexp.MustCompile(`^libnvidia-ml\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$`)

func nvmlLibraries(fsys fs.FS, ldLibraryPath string) []state.NVMLLibrary {
	return scanLibraries(fsys, append(ldPathDirs(ldLibraryPath), nvmlLibDirs...), nvmlLibName, nil)
}

// maxLibraries bounds the libraries scanLibraries lists: an image holds a
// few of each; one holding thousands is not judged by the ones past these.
const maxLibraries = 64

// scanLibraries lists the files named like re (its first group is the
// version) in dirs, each directory once, in order, at most maxLibraries;
// onPath marks the ones whose directory is on LD_LIBRARY_PATH. A directory that cannot be read
// is passed over: no library there is what the loader would find too.
func scanLibraries(fsys fs.FS, dirs []string, re *regexp.Regexp, onPath map[string]bool) []state.NVMLLibrary {
	seen := map[string]bool{}
	var out []state.NVMLLibrary
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		es, err := fs.ReadDir(fsys, fsName(d))
		if err != nil {
			continue
		}
		for _, e := range es {
			if len(out) >= maxLibraries {
				return out
			}
			if m := re.FindStringSubmatch(e.Name()); m != nil {
				out = append(out, state.NVMLLibrary{Path: path.Join(d, e.Name()), Version: m[1], OnLDLibraryPath: onPath[d]})
			}
		}
	}
	return out
}

// compatDirs are where NVIDIA's cuda-compat package and CUDA images put the
// forward-compatibility libcuda (CUDA Compatibility, "Installing the CUDA
// Forward Compatibility Package": /usr/local/cuda-<version>/compat;
// /usr/local/cuda is the image's link to it).
var compatDirs = []string{"/usr/local/cuda/compat", "/usr/local/cuda/compat/lib", "/usr/local/cuda/compat/lib.real"}

var libcudaName = regexp.MustCompile(`^libcuda\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$`)

// compatLibraries lists the forward-compatibility libcuda files: in every
// LD_LIBRARY_PATH directory (first 32) and every /etc/ld.so.conf(.d)
// directory whose path names "compat", then in compatDirs. A libcuda
// elsewhere is the host's, injected by the runtime.
//
// Which libcuda.so.1 the loader takes is modelled in ld.so(8)'s order for
// a name without a slash: the LD_LIBRARY_PATH directories in order, then
// /etc/ld.so.cache, then the default directories (/lib, /usr/lib; the
// binary's DT_RUNPATH comes before the cache but CUDA applications do not
// name the driver's directory in it, and DT_RPATH is not modelled).
// ldconfig(8) builds the cache from the /etc/ld.so.conf(.d) directories in
// the order read (loaderConfDirs), and for one name the loader takes the
// cache's first entry of the machine's type (glibc elf/cache.c keeps equal
// names in the order added; elf/dl-cache.c returns the first match), so
// the conf order stands for the cache's: NVIDIA/nvidia-container-toolkit#1679's
// `ldconfig -p` lists the compat libcuda of 00-compat-<n>.conf before the
// host's. A conf directory counts only when the cache holds the library
// under it (ldconfig ran after the file was written, as the toolkit's
// update-ldcache hook does): the loader reads the cache, not the conf files.
func compatLibraries(fsys fs.FS, ldLibraryPath string) []state.NVMLLibrary {
	onPath := map[string]bool{}
	ldp := ldPathDirs(ldLibraryPath)
	var dirs []string
	for _, d := range ldp {
		onPath[d] = true
		if strings.Contains(d, "compat") {
			dirs = append(dirs, d)
		}
	}
	confs := loaderConfDirs(fsys)
	for _, d := range confs {
		if strings.Contains(d.path, "compat") {
			dirs = append(dirs, d.path)
		}
	}
	out := scanLibraries(fsys, append(dirs, compatDirs...), libcudaName, onPath)
	cache, cacheOK := ldCache(fsys)
	// What a directory holds is asked once per directory, not per library
	// found: an image may hold any number of files named libcuda.so.N,
	// and each question is a bounded read or a search of the cache (up to
	// containerReadLimit bytes).
	cached, exist := map[string]bool{}, map[string]bool{}
	inCache := func(dir string) bool {
		v, ok := cached[dir]
		if !ok {
			v = cacheOK && strings.Contains(cache, dir+"/libcuda.so.")
			cached[dir] = v
		}
		return v
	}
	exists := func(p string) bool {
		v, ok := exist[p]
		if !ok {
			v = fsExists(fsys, p)
			exist[p] = v
		}
		return v
	}
	for i := range out {
		dir := path.Dir(out[i].Path)
		if out[i].OnLDLibraryPath {
			// An earlier LD_LIBRARY_PATH directory with a libcuda.so.1
			// (GKE's /usr/local/nvidia/lib64 holding the host's) wins.
			for _, d := range ldp {
				if d == dir {
					break
				}
				if f := path.Join(d, "libcuda.so.1"); exists(f) {
					out[i].ShadowedBy = f
					break
				}
			}
			continue
		}
		conf := ""
		for _, d := range confs {
			if d.path == dir {
				conf = d.from
				break
			}
		}
		if conf == "" || !inCache(dir) {
			continue
		}
		out[i].LoaderConf = conf
		// Every LD_LIBRARY_PATH directory comes before the cache, and an
		// earlier directory of the cache wins too.
		for _, d := range ldp {
			if f := path.Join(d, "libcuda.so.1"); exists(f) {
				out[i].ShadowedBy = f
				break
			}
		}
		if out[i].ShadowedBy != "" {
			continue
		}
		for _, d := range confs {
			if d.path == dir {
				break
			}
			if f := path.Join(d.path, "libcuda.so.1"); inCache(d.path) && exists(f) {
				out[i].ShadowedBy = f
				break
			}
		}
	}
	return out
}

// ldPathDirs is LD_LIBRARY_PATH's absolute directories (the first
// maxLibraryDirs), cleaned, in order.
func ldPathDirs(ldLibraryPath string) []string {
	var dirs []string
	for _, d := range strings.Split(ldLibraryPath, ":") {
		if strings.HasPrefix(d, "/") && len(dirs) < maxLibraryDirs {
			dirs = append(dirs, path.Clean(d))
		}
	}
	return dirs
}

// ldCache is /etc/ld.so.cache's bytes, read through the bounded view (a
// cache is tens to hundreds of KiB; a larger or unreadable one is not
// known). Only whether it holds a path is asked of it.
func ldCache(fsys fs.FS) (string, bool) {
	b, err := fs.ReadFile(fsys, fsName("/etc/ld.so.cache"))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// loaderDir is one directory of the loader's configuration and the file
// that names it.
type loaderDir struct{ path, from string }

// loaderConfDirs lists the directories /etc/ld.so.conf and then the
// /etc/ld.so.conf.d/*.conf files (in name order, as the usual
// "include /etc/ld.so.conf.d/*.conf" expands them; at most
// maxLdSoConfFiles files and 2*maxLibraryDirs directories) name.
func loaderConfDirs(fsys fs.FS) []loaderDir {
	confs := []string{"/etc/ld.so.conf"}
	if es, err := fs.ReadDir(fsys, fsName("/etc/ld.so.conf.d")); err == nil {
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".conf") && len(confs) <= maxLdSoConfFiles {
				confs = append(confs, "/etc/ld.so.conf.d/"+e.Name())
			}
		}
	}
	var out []loaderDir
	for _, conf := range confs {
		b, err := fs.ReadFile(fsys, fsName(conf))
		if err != nil {
			continue
		}
		for _, d := range ParseLdSoConf(string(b)) {
			if len(out) >= 2*maxLibraryDirs {
				return out
			}
			out = append(out, loaderDir{d, conf})
		}
	}
	return out
}

// ParseLdSoConf lists the directories one ld.so.conf file names, in order
// (ldconfig(8): one directory a line; glibc elf/ldconfig.c parse_conf cuts
// a line at '#' and skips "include" and "hwcap" lines, which are not
// directories). Only absolute paths are kept, cleaned.
func ParseLdSoConf(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "/") {
			out = append(out, path.Clean(l))
		}
	}
	return out
}

func fsExists(fsys fs.FS, p string) bool {
	_, err := fs.Stat(fsys, fsName(p))
	return err == nil
}

// netPluginName is a file NCCL's NET plugin loader can open: the default
// libnccl-net.so or libnccl-net-<NCCL_NET_PLUGIN>.so (NCCL
// src/plugin/plugin_open.cc, pluginPrefix "libnccl-net").
var netPluginName = regexp.MustCompile(`^libnccl-net(-[A-Za-z0-9_.+-]+)?\.so$`)

// defaultLoaderDirs are the directories the dynamic loader searches without
// configuration (ld.so(8): /lib and /usr/lib, /lib64 and /usr/lib64 on
// 64-bit systems) and the ones Debian and Ubuntu images list in
// /etc/ld.so.conf.d (the multiarch directories; /usr/local/lib from
// libc.conf), for images whose ld.so.conf.d is not read.
var defaultLoaderDirs = []string{"/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/local/lib"}

// pluginInstallDirs are where the plugins install themselves: the EFA
// installer's aws-ofi-nccl (/opt/amazon/ofi-nccl/lib; older installers
// /opt/amazon/aws-ofi-nccl/lib; a source build's usual prefix
// /opt/aws-ofi-nccl) and HPC-X's nccl-rdma-sharp plugin in NVIDIA's NGC
// images (/opt/hpcx/nccl_rdma_sharp_plugin/lib). A library there is found
// only if one of the loader's sources names the directory.
var pluginInstallDirs = []string{"/opt/amazon/ofi-nccl/lib", "/opt/amazon/aws-ofi-nccl/lib", "/opt/aws-ofi-nccl/lib", "/opt/hpcx/nccl_rdma_sharp_plugin/lib"}

// maxLdSoConfFiles bounds the /etc/ld.so.conf.d files read.
const maxLdSoConfFiles = 64

// netPlugins lists the NCCL network plugin libraries in the loader's order
// (LD_LIBRARY_PATH, /etc/ld.so.conf and its .d files, the defaults), then
// in the plugins' install directories; an absolute path NCCL_NET_PLUGIN
// names (NCCL dlopens it as given) is listed first when it exists.
func netPlugins(fsys fs.FS, ldLibraryPath, plugin string, set bool) []state.NetPluginLibrary {
	var out []state.NetPluginLibrary
	if set {
		for _, name := range strings.Split(plugin, ",") {
			name = strings.TrimSpace(name)
			if strings.HasPrefix(name, "/") {
				if st, err := fs.Stat(fsys, fsName(name)); err == nil && !st.IsDir() {
					out = append(out, state.NetPluginLibrary{Path: path.Clean(name), OnLoaderPath: true, From: "NCCL_NET_PLUGIN"})
				}
			}
		}
	}
	type dir struct {
		path, from string
		loader     bool
	}
	var dirs []dir
	for _, d := range ldPathDirs(ldLibraryPath) {
		dirs = append(dirs, dir{d, "LD_LIBRARY_PATH", true})
	}
	for _, d := range loaderConfDirs(fsys) {
		dirs = append(dirs, dir{d.path, d.from, true})
	}
	for _, d := range defaultLoaderDirs {
		dirs = append(dirs, dir{d, "default", true})
	}
	for _, d := range pluginInstallDirs {
		dirs = append(dirs, dir{d, "install directory", false})
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d.path] {
			continue
		}
		seen[d.path] = true
		es, err := fs.ReadDir(fsys, fsName(d.path))
		if err != nil {
			continue
		}
		for _, e := range es {
			if netPluginName.MatchString(e.Name()) {
				out = append(out, state.NetPluginLibrary{Path: path.Join(d.path, e.Name()), OnLoaderPath: d.loader, From: d.from})
			}
		}
	}
	return out
}
