package collect

import (
	"os"
	"path"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpuprobe/gpuprobe/state"
)

// Mount lines as runc writes them for a container started with Docker's
// (and Podman's) defaults: /dev/shm is its own "shm" tmpfs of 64 MiB
// (docker run --shm-size: "default is 64MB"). The format is
// proc_pid_mountinfo(5): ID parent major:minor root mount-point options
// optional-fields - fstype source super-options.
const dockerMountinfo = `1300 1299 0:58 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/ABC:/var/lib/docker/overlay2/l/DEF,upperdir=/var/lib/docker/overlay2/0f1e/diff,workdir=/var/lib/docker/overlay2/0f1e/work
1301 1300 0:63 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
1302 1300 0:64 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755,inode64
1303 1302 0:65 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,gid=5,mode=620,ptmxmode=666
1304 1300 0:66 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
1319 1302 0:62 / /dev/mqueue rw,nosuid,nodev,noexec,relatime - mqueue mqueue rw
1320 1302 0:67 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k,inode64
`

// An Enroot container (Pyxis) with the Mellanox hook: the fstab lines of
// conf/mounts/10-system.fstab ("/dev/shm /dev/shm none bind", /dev rbind)
// and conf/hooks/99-mellanox.sh ("tmpfs /sys/class/infiniband tmpfs ...")
// as the kernel shows them: the host's /dev/shm bound in (no size=: half of
// RAM) and a tmpfs over /sys/class/infiniband.
const enrootMountinfo = `812 640 0:141 / / rw,nosuid,nodev,relatime - overlay overlay rw,lowerdir=/run/enroot/pyxis_4242.0/lower,upperdir=/run/enroot/pyxis_4242.0/upper,workdir=/run/enroot/pyxis_4242.0/work
813 812 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
814 812 0:20 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs rw
815 812 0:5 / /dev rw,nosuid,noexec,relatime - devtmpfs udev rw,size=1056440296k,nr_inodes=264110074,mode=755,inode64
816 815 0:25 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,inode64
850 814 0:150 / /sys/class/infiniband rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755,inode64
`

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadContainer(t *testing.T) {
	limits := mustRead(t, "testdata/container/limits-kernel-6.18.txt")
	unlimited := strings.Replace(limits, "Max locked memory         8388608              8388608    ", "Max locked memory         unlimited            unlimited  ", 1)
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	dir := &fstest.MapFile{Mode: os.ModeDir | 0o755}
	base := func() fstest.MapFS {
		return fstest.MapFS{
			"proc/self/limits":                                   file(limits),
			"proc/meminfo":                                       file("MemTotal:       2113155272 kB\nMemFree:        2000000000 kB\n"),
			"proc/1/cgroup":                                      file("0::/\n"),
			"proc/driver/nvidia/version":                         file("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n"),
			"sys/class/infiniband/mlx5_0":                        dir,
			"sys/class/infiniband/mlx5_1":                        dir,
			"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1":         {Data: []byte("libnvidia-ml.so.550.54.15"), Mode: os.ModeSymlink},
			"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": file("ELF"),
		}
	}
	for _, c := range []struct {
		name    string
		env     []string
		mut     func(fstest.MapFS)
		runtime string
		check   func(t *testing.T, c *state.Container)
	}{
		{name: "bare host: nothing recorded", env: []string{"SLURM_JOB_ID=1"},
			check: func(t *testing.T, c *state.Container) {
				if c.Memlock != nil || c.Shm != nil || c.IBDevices != nil || len(c.Evidence) != 0 {
					t.Errorf("facts recorded outside a container: %+v", c)
				}
			}},
		{name: "docker, 64 MB shm, no IB devices", runtime: "docker",
			mut: func(m fstest.MapFS) {
				m["proc/self/mountinfo"] = file(dockerMountinfo)
				m[".dockerenv"] = file("")
				m["proc/1/cgroup"] = file("12:devices:/docker/136811d8fa1136e2746d10f6443c4c787c3cfbab5273270cc3aeeb3a94b3cc51\n0::/\n")
			},
			check: func(t *testing.T, c *state.Container) {
				want := &state.ShmMount{FSType: "tmpfs", Source: "shm", Root: "/", SuperOptions: "rw,size=65536k,inode64", SizeBytes: 64 << 20}
				if !reflect.DeepEqual(c.Shm, want) {
					t.Errorf("shm %+v, want %+v", c.Shm, want)
				}
				if c.Memlock == nil || c.Memlock.Soft == nil || *c.Memlock.Soft != 8<<20 || c.Memlock.Unit != "bytes" {
					t.Errorf("memlock %+v", c.Memlock)
				}
				if len(c.Evidence) != 2 {
					t.Errorf("evidence %+v: want /.dockerenv and /proc/1/cgroup", c.Evidence)
				}
				if !reflect.DeepEqual(c.IBDevices, []string{"mlx5_0", "mlx5_1"}) || c.UverbsDevices != nil || !c.DevInfinibandRead {
					t.Errorf("ib %v uverbs %v read %v", c.IBDevices, c.UverbsDevices, c.DevInfinibandRead)
				}
				if c.ModuleVersion != "550.54.15" || c.ModuleVersionFrom != "/proc/driver/nvidia/version" {
					t.Errorf("module %q from %q", c.ModuleVersion, c.ModuleVersionFrom)
				}
				if want := []state.NVMLLibrary{{Path: "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15", Version: "550.54.15"}}; !reflect.DeepEqual(c.NVMLLibraries, want) {
					t.Errorf("libraries %+v", c.NVMLLibraries)
				}
			}},
		{name: "podman: containerenv and container=podman", runtime: "podman", env: []string{"container=podman"},
			mut: func(m fstest.MapFS) {
				m["run/.containerenv"] = file("engine=\"podman-4.3.1\"\nname=\"gpuprobe-test\"\nrootless=0\n")
				m["proc/self/limits"] = file(unlimited)
				m["dev/infiniband/uverbs0"] = file("")
				m["dev/infiniband/rdma_cm"] = file("")
			},
			check: func(t *testing.T, c *state.Container) {
				if c.Memlock == nil || c.Memlock.Soft != nil || c.Memlock.Hard != nil {
					t.Errorf("memlock %+v, want unlimited", c.Memlock)
				}
				if !reflect.DeepEqual(c.UverbsDevices, []string{"/dev/infiniband/uverbs0"}) || !c.RDMACM {
					t.Errorf("uverbs %v rdma_cm %v", c.UverbsDevices, c.RDMACM)
				}
				if len(c.Evidence) != 2 || !strings.Contains(c.Evidence[1].Seen, `engine="podman-4.3.1"`) {
					t.Errorf("evidence %+v", c.Evidence)
				}
			}},
		{name: "pyxis/enroot with the Mellanox hook", runtime: "enroot",
			env: []string{"SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image=nvcr.io#nvidia/pytorch:24.01-py3", "NVIDIA_VISIBLE_DEVICES=0,1", "MELLANOX_VISIBLE_DEVICES=all",
				"LD_LIBRARY_PATH=/usr/local/cuda/compat/lib:/opt/nvml"},
			mut: func(m fstest.MapFS) {
				m["proc/self/mountinfo"] = file(enrootMountinfo)
				m["sys/module/nvidia/version"] = file("550.54.15\n")
				m["opt/nvml/libnvidia-ml.so.535.104.05"] = file("ELF")
			},
			check: func(t *testing.T, c *state.Container) {
				if c.Shm == nil || c.Shm.SizeBytes != 0 || c.MemTotalBytes != 2113155272<<10 {
					t.Errorf("shm %+v memtotal %d", c.Shm, c.MemTotalBytes)
				}
				if len(c.Evidence) != 2 || !strings.Contains(c.Evidence[1].Seen, "/sys/class/infiniband") {
					t.Errorf("evidence %+v", c.Evidence)
				}
				if c.NVIDIAVisibleDevices == nil || *c.NVIDIAVisibleDevices != "0,1" || c.MellanoxVisibleDevices == nil {
					t.Errorf("visible %v %v", c.NVIDIAVisibleDevices, c.MellanoxVisibleDevices)
				}
				if c.ModuleVersionFrom != "/sys/module/nvidia/version" || len(c.NVMLLibraries) != 2 || c.NVMLLibraries[0].Version != "535.104.05" {
					t.Errorf("module %q from %q, libraries %+v", c.ModuleVersion, c.ModuleVersionFrom, c.NVMLLibraries)
				}
			}},
		{name: "apptainer", runtime: "apptainer", env: []string{"APPTAINER_CONTAINER=/scratch/alice/pytorch.sif", "APPTAINER_NAME=pytorch.sif"},
			mut: func(m fstest.MapFS) { m[".singularity.d/runscript"] = file("#!/bin/sh\n") },
			check: func(t *testing.T, c *state.Container) {
				if len(c.Evidence) != 3 {
					t.Errorf("evidence %+v", c.Evidence)
				}
			}},
		{name: "kubernetes pod on docker", runtime: "kubernetes", env: []string{"KUBERNETES_SERVICE_HOST=10.96.0.1"},
			mut: func(m fstest.MapFS) {
				m[".dockerenv"] = file("")
				m["proc/1/cgroup"] = file("11:devices:/kubepods/burstable/pod94598a35-ad1e-4a00-91b1-1db37e8f52f6/22c18c845c47\n")
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := base()
			if c.mut != nil {
				c.mut(m)
			}
			got := readContainer(m, m, "/proc", "/sys", c.env)
			if got.Runtime != c.runtime {
				t.Errorf("runtime %q, want %q (evidence %+v)", got.Runtime, c.runtime, got.Evidence)
			}
			if len(got.Errors) > 0 {
				t.Errorf("errors %v", got.Errors)
			}
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}

// TestReadContainerSplitView: with a view of its own (the real container
// under --simulate ...,real-container), the step's files come from the view
// and the host's side (sysfs, the kernel module) from the host's tree; the
// view's own /sys/class/infiniband and module version are not read.
func TestReadContainerSplitView(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	dir := &fstest.MapFile{Mode: os.ModeDir | 0o755}
	view := fstest.MapFS{
		"run/.containerenv":          file("engine=\"podman-4.3.1\"\n"),
		"proc/self/mountinfo":        file(dockerMountinfo),
		"proc/self/limits":           file(mustRead(t, "testdata/container/limits-kernel-6.18.txt")),
		"sys/class/infiniband/x":     dir,
		"proc/driver/nvidia/version": file("NVRM version: NVIDIA UNIX x86_64 Kernel Module  999.1.1  Tue Mar  5 22:23:56 UTC 2024\n"),
	}
	host := fstest.MapFS{
		"sys/class/infiniband/mlx5_0": dir,
		"sys/module/nvidia/version":   file("550.54.15\n"),
	}
	c := readContainer(view, host, "/proc", "/sys", nil)
	if c.Runtime != "podman" || c.Shm == nil || c.Shm.SizeBytes != 64<<20 || c.Memlock == nil {
		t.Fatalf("the view's files not read: %+v", c)
	}
	if !reflect.DeepEqual(c.IBDevices, []string{"mlx5_0"}) || c.ModuleVersion != "550.54.15" {
		t.Errorf("host side: ib %v module %q, want the host's mlx5_0 and 550.54.15", c.IBDevices, c.ModuleVersion)
	}
	// The same files with no view of its own: the host's tree has no
	// marker, so nothing is recorded.
	if c := readContainer(host, host, "/proc", "/sys", nil); c.Runtime != "" || c.Shm != nil {
		t.Errorf("host tree alone: %+v", c)
	}
}

func TestParseLimits(t *testing.T) {
	l := ParseLimits(mustRead(t, "testdata/container/limits-kernel-6.18.txt"))
	if len(l) != 16 {
		t.Errorf("%d rows, want 16: %+v", len(l), l)
	}
	if r := l["Max locked memory"]; r.Soft == nil || *r.Soft != 8388608 || r.Hard == nil || *r.Hard != 8388608 || r.Unit != "bytes" {
		t.Errorf("memlock %+v", r)
	}
	if r := l["Max cpu time"]; r.Soft != nil || r.Hard != nil {
		t.Errorf("cpu time %+v, want unlimited", r)
	}
	if r, ok := l["Max nice priority"]; !ok || r.Unit != "" || *r.Soft != 0 {
		t.Errorf("nice %+v", r)
	}
	if len(ParseLimits("garbage\nMax locked memory 1 2 bytes\n")) != 0 {
		t.Error("rows read without the header")
	}
}

func TestParseMountinfo(t *testing.T) {
	ms := ParseMountinfo(dockerMountinfo + "bad line\n" + `99 1 0:1 /a\040b /mnt/with\040space rw shared:2 master:3 - ext4 /dev/sda1 rw` + "\n")
	if len(ms) != 8 {
		t.Fatalf("%d mounts", len(ms))
	}
	if m := ms[7]; m.Root != "/a b" || m.MountPoint != "/mnt/with space" || m.FSType != "ext4" || m.Source != "/dev/sda1" || m.Super != "rw" {
		t.Errorf("%+v", m)
	}
	if m := mountAt(ms, "/dev/shm"); m == nil || mountSize(m.Super) != 64<<20 {
		t.Errorf("shm %+v", m)
	}
	for in, want := range map[string]uint64{"rw,size=65536k": 64 << 20, "size=1g": 1 << 30, "size=12345": 12345, "rw": 0, "size=99999999999999999999k": 0, "size=k": 0} {
		if got := mountSize(in); got != want {
			t.Errorf("mountSize(%q) = %d, want %d", in, got, want)
		}
	}
}

func FuzzParseLimits(f *testing.F) {
	f.Add(mustReadF(f, "testdata/container/limits-kernel-6.18.txt"))
	f.Add("Limit   Soft Limit\nMax x   unlimited 5\n")
	f.Fuzz(func(t *testing.T, s string) {
		for name, r := range ParseLimits(s) {
			if name == "" || strings.TrimSpace(name) != name {
				t.Errorf("row name %q", name)
			}
			_ = r
		}
	})
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add(dockerMountinfo)
	f.Add(enrootMountinfo)
	f.Add(`1 2 3:4 /\134 /\04 rw - t s o`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range ParseMountinfo(s) {
			if m.FSType == "" || m.MountPoint == "" {
				t.Errorf("empty field in %+v", m)
			}
			_ = mountSize(m.Super)
		}
	})
}

func mustReadF(f *testing.F, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return string(b)
}

// The NCCL network plugins in the loader's order: LD_LIBRARY_PATH, then
// /etc/ld.so.conf.d (the EFA installer's 100_ofinccl.conf on AWS images),
// then the defaults, then install directories no loader source names; an
// absolute NCCL_NET_PLUGIN first. Other names (libnccl.so.2, the tuner) are
// not plugins of the NET type.
func TestNetPlugins(t *testing.T) {
	m := fstest.MapFS{
		"etc/ld.so.conf":                                     {Data: []byte("include /etc/ld.so.conf.d/*.conf\n")},
		"etc/ld.so.conf.d/100_ofinccl.conf":                  {Data: []byte("/opt/amazon/ofi-nccl/lib\n")},
		"etc/ld.so.conf.d/x86_64-linux-gnu.conf":             {Data: []byte("# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n")},
		"opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so":         {},
		"opt/amazon/ofi-nccl/lib/libnccl-tuner-ofi.so":       {},
		"opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so": {},
		"work/plugins/libnccl-net.so":                        {},
		"usr/lib/x86_64-linux-gnu/libnccl.so.2":              {},
		"usr/lib/x86_64-linux-gnu/libnccl-net-mock.so":       {},
		"custom/ofi.so":                                      {},
	}
	got := netPlugins(m, "/work/plugins:relative", "/custom/ofi.so,ofi", true)
	want := []state.NetPluginLibrary{
		{Path: "/custom/ofi.so", OnLoaderPath: true, From: "NCCL_NET_PLUGIN"},
		{Path: "/work/plugins/libnccl-net.so", OnLoaderPath: true, From: "LD_LIBRARY_PATH"},
		{Path: "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", OnLoaderPath: true, From: "/etc/ld.so.conf.d/100_ofinccl.conf"},
		{Path: "/usr/lib/x86_64-linux-gnu/libnccl-net-mock.so", OnLoaderPath: true, From: "/etc/ld.so.conf.d/x86_64-linux-gnu.conf"},
		{Path: "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so", From: "install directory"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("netPlugins:\n got %+v\nwant %+v", got, want)
	}
	if got := netPlugins(fstest.MapFS{}, "", "", false); got != nil {
		t.Errorf("an image without plugins: %+v", got)
	}
}

// TestCompatLibrariesShadowed: the loader takes libcuda.so.1 from the first
// LD_LIBRARY_PATH directory holding one (ld.so(8)), so a compat directory
// after GKE's /usr/local/nvidia/lib64 is not used.
func TestCompatLibrariesShadowed(t *testing.T) {
	f := func() *fstest.MapFile { return &fstest.MapFile{Data: []byte("ELF")} }
	fsys := fstest.MapFS{
		"usr/local/nvidia/lib64/libcuda.so.1":           f(),
		"usr/local/cuda/compat/libcuda.so.1":            f(),
		"usr/local/cuda/compat/libcuda.so.580.65.06":    f(),
		"usr/local/cuda-12.8/compat/libcuda.so.570.1.1": f(),
	}
	got := compatLibraries(fsys, "/usr/local/nvidia/lib64:/usr/local/cuda/compat")
	if len(got) != 1 || got[0].ShadowedBy != "/usr/local/nvidia/lib64/libcuda.so.1" || !got[0].OnLDLibraryPath {
		t.Errorf("compat after the host's libcuda: %+v", got)
	}
	got = compatLibraries(fsys, "/usr/local/cuda/compat:/usr/local/nvidia/lib64")
	if len(got) != 1 || got[0].ShadowedBy != "" || !got[0].OnLDLibraryPath {
		t.Errorf("compat first: %+v", got)
	}
	got = compatLibraries(fsys, "/usr/local/nvidia/lib64")
	if len(got) != 1 || got[0].ShadowedBy != "" || got[0].OnLDLibraryPath {
		t.Errorf("compat off the path: %+v", got)
	}
}

// TestCompatLibrariesLoaderCache: NVIDIA/nvidia-container-toolkit#1679 on
// Jetson Thor, laid out as its `ldconfig -p` shows it: the toolkit's
// enable-cuda-compat hook wrote /etc/ld.so.conf.d/00-compat-888138641.conf
// naming /usr/local/cuda-13.0/compat, and the cache lists that libcuda.so.1
// before the host's /usr/lib/aarch64-linux-gnu/nvidia one. The loader takes
// the compat library with no LD_LIBRARY_PATH; an LD_LIBRARY_PATH directory
// holding a libcuda.so.1 comes first; a conf file ldconfig has not read
// into the cache (or no cache) does not count; a compat directory named
// after the host's in conf order is shadowed by it.
func TestCompatLibrariesLoaderCache(t *testing.T) {
	f := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	const conf = "/etc/ld.so.conf.d/00-compat-888138641.conf"
	cache := "glibc-ld.so.cache1.1\x00libcuda.so.1\x00/usr/local/cuda-13.0/compat/libcuda.so.1\x00libcuda.so.1\x00/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1\x00"
	thor := func() fstest.MapFS {
		return fstest.MapFS{
			"etc/ld.so.conf": f("include /etc/ld.so.conf.d/*.conf\n"),
			"etc/ld.so.conf.d/00-compat-888138641.conf":       f("/usr/local/cuda-13.0/compat\n"),
			"etc/ld.so.conf.d/nvidia-tegra.conf":              f("/usr/lib/aarch64-linux-gnu/nvidia # the host's, injected\n"),
			"etc/ld.so.cache":                                 f(cache),
			"usr/local/cuda-13.0/compat/libcuda.so.1":         f("ELF"),
			"usr/local/cuda-13.0/compat/libcuda.so.580.65.06": f("ELF"),
			"usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1":   f("ELF"),
			"usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1.1": f("ELF"),
			"opt/host/lib/libcuda.so.1":                       f("ELF"),
		}
	}
	want := []state.NVMLLibrary{{Path: "/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", Version: "580.65.06", LoaderConf: conf}}
	if got := compatLibraries(thor(), ""); !reflect.DeepEqual(got, want) {
		t.Errorf("#1679:\n got %+v\nwant %+v", got, want)
	}
	want[0].ShadowedBy = "/opt/host/lib/libcuda.so.1"
	if got := compatLibraries(thor(), "/opt/host/lib"); !reflect.DeepEqual(got, want) {
		t.Errorf("behind LD_LIBRARY_PATH:\n got %+v\nwant %+v", got, want)
	}
	stale := thor()
	stale["etc/ld.so.cache"] = f("glibc-ld.so.cache1.1\x00libcuda.so.1\x00/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1\x00")
	noCache := thor()
	delete(noCache, "etc/ld.so.cache")
	for name, fsys := range map[string]fstest.MapFS{"conf not in the cache": stale, "no cache": noCache} {
		got := compatLibraries(fsys, "")
		if len(got) != 1 || got[0].LoaderConf != "" || got[0].OnLDLibraryPath || got[0].ShadowedBy != "" {
			t.Errorf("%s: %+v", name, got)
		}
	}
	late := thor()
	delete(late, "etc/ld.so.conf.d/00-compat-888138641.conf")
	late["etc/ld.so.conf.d/zz-compat.conf"] = f("/usr/local/cuda-13.0/compat\n")
	got := compatLibraries(late, "")
	if len(got) != 1 || got[0].LoaderConf != "/etc/ld.so.conf.d/zz-compat.conf" || got[0].ShadowedBy != "/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1" {
		t.Errorf("compat after the host's in conf order: %+v", got)
	}
	// On LD_LIBRARY_PATH as well: LD_LIBRARY_PATH is what the loader uses.
	got = compatLibraries(thor(), "/usr/local/cuda-13.0/compat")
	if len(got) != 1 || !got[0].OnLDLibraryPath || got[0].LoaderConf != "" || got[0].ShadowedBy != "" {
		t.Errorf("on LD_LIBRARY_PATH too: %+v", got)
	}
}

// FuzzParseLdSoConf: every directory is absolute, clean, on one line and
// without a comment.
func FuzzParseLdSoConf(f *testing.F) {
	f.Add("include /etc/ld.so.conf.d/*.conf\n")
	f.Add("# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n")
	f.Add("/usr/local/cuda-13.0/compat\n")
	f.Add("  /a//b/../c # x\r\nhwcap 0 nosegneg\n/#\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range ParseLdSoConf(s) {
			if !strings.HasPrefix(d, "/") || path.Clean(d) != d || strings.ContainsAny(d, "#\n") {
				t.Errorf("%q: directory %q", s, d)
			}
		}
	})
}

// FuzzCompatLibrariesConf: any ld.so.conf.d file and LD_LIBRARY_PATH give
// compat libraries found through a conf file only off LD_LIBRARY_PATH and
// only when the cache holds them, shadowed only by a libcuda.so.1.
func FuzzCompatLibrariesConf(f *testing.F) {
	f.Add("/usr/local/cuda-13.0/compat\n", "")
	f.Add("/usr/lib/host\n/usr/local/cuda-13.0/compat/\n", "/usr/lib/host")
	f.Add("#/usr/local/cuda-13.0/compat", "/usr/local/cuda-13.0/compat")
	f.Fuzz(func(t *testing.T, conf, ld string) {
		fsys := fstest.MapFS{
			"etc/ld.so.conf.d/a.conf":                         &fstest.MapFile{Data: []byte(conf)},
			"etc/ld.so.cache":                                 &fstest.MapFile{Data: []byte("/usr/local/cuda-13.0/compat/libcuda.so.1\x00/usr/lib/host/libcuda.so.1")},
			"usr/local/cuda-13.0/compat/libcuda.so.580.65.06": &fstest.MapFile{Data: []byte("ELF")},
			"usr/lib/host/libcuda.so.1":                       &fstest.MapFile{Data: []byte("ELF")},
		}
		for _, l := range compatLibraries(fsys, ld) {
			if l.LoaderConf != "" && (l.OnLDLibraryPath || l.LoaderConf != "/etc/ld.so.conf.d/a.conf") {
				t.Errorf("conf %q, LD_LIBRARY_PATH %q: %+v", conf, ld, l)
			}
			if l.ShadowedBy != "" && (!(l.OnLDLibraryPath || l.LoaderConf != "") || !strings.HasSuffix(l.ShadowedBy, "/libcuda.so.1")) {
				t.Errorf("conf %q, LD_LIBRARY_PATH %q: %+v", conf, ld, l)
			}
		}
	})
}

// FuzzCompatLibraries: any LD_LIBRARY_PATH gives compat libraries whose
// shadowing library is in an LD_LIBRARY_PATH directory, and only for ones
// on the path.
func FuzzCompatLibraries(f *testing.F) {
	fsys := fstest.MapFS{
		"usr/local/nvidia/lib64/libcuda.so.1":        &fstest.MapFile{Data: []byte("ELF")},
		"usr/local/cuda/compat/libcuda.so.580.65.06": &fstest.MapFile{Data: []byte("ELF")},
	}
	f.Add("/usr/local/nvidia/lib64:/usr/local/cuda/compat")
	f.Add("/usr/local/cuda/compat::relative:/usr/local/nvidia/lib64/")
	f.Add("")
	f.Fuzz(func(t *testing.T, ld string) {
		for _, l := range compatLibraries(fsys, ld) {
			if l.ShadowedBy != "" && (!l.OnLDLibraryPath || !strings.HasSuffix(l.ShadowedBy, "/libcuda.so.1")) {
				t.Errorf("LD_LIBRARY_PATH %q: %+v", ld, l)
			}
		}
	})
}
