package collect

import (
	"context"
	"errors"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuprobe/gpuprobe/state"
)

// fakeTree writes files under a temp dir: path -> content.
func fakeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func testHost(root string) slurmHost {
	return slurmHost{
		proc: filepath.Join(root, "proc"), sys: filepath.Join(root, "sys"),
		hostname: func() (string, error) { return "gpu001.cluster.local", nil },
		affinity: func() ([]int, error) { return []int{0, 1, 2, 3}, nil },
		uid:      func() int { return 1000 },
		pid:      func() int { return 4242 },
		lookupID: func(uid string) (string, error) { return map[string]string{"1000": "alice"}[uid], nil },
		resolve: func(_ context.Context, h string) ([]string, error) {
			if h == "gpu001" {
				return []string{"10.0.0.1"}, nil
			}
			return nil, errors.New("lookup " + h + ": no such host")
		},
		readFile: os.ReadFile,
		procFile: func(pid int32, name string) ([]byte, error) {
			return os.ReadFile(filepath.Join(root, "proc", strconv.Itoa(int(pid)), name))
		},
		probe: func(p string) error {
			if strings.HasSuffix(p, "fakegpu1") {
				return unix.EPERM
			}
			return unix.ENXIO // a device node with no driver behind it
		},
		timeout: time.Second,
	}
}

func TestGatherSlurmInAJob(t *testing.T) {
	root := fakeTree(t, map[string]string{
		"etc/slurm/slurm.conf":    "ClusterName=c\nGresTypes=gpu\nTaskPlugin=task/cgroup\nNodeName=gpu[001-002] Gres=gpu:2 CPUs=8\n",
		"etc/slurm/cgroup.conf":   "ConstrainDevices=yes\n",
		"etc/slurm/topology.conf": "SwitchName=s0 Nodes=gpu[001-002]\n",
		"proc/self/cgroup":        "12:devices:/slurm/uid_1000/job_42/step_0/task_0\n11:cpuset:/slurm/uid_1000/job_42/step_0\n0::/\n",
		"sys/fs/cgroup/devices/slurm/uid_1000/job_42/step_0/task_0/devices.list": "c 195:0 rwm\nc 195:255 rwm\n",
		"proc/777/status":  "Name:\tpython\nUid:\t1001\t1001\t1001\t1001\n",
		"proc/777/cgroup":  "12:devices:/slurm/uid_1001/job_41/step_0/task_0\n",
		"proc/778/status":  "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n",
		"proc/778/environ": "PATH=/bin\x00SLURM_JOB_ID=42\x00",
		// Another user's process claiming this job in its environment: not believed.
		"proc/780/status":  "Name:\tpython\nUid:\t1002\t1002\t1002\t1002\n",
		"proc/780/environ": "SLURM_JOB_ID=42\x00",
		"sys/bus/pci/devices/0000:19:00.0/local_cpulist": "0-55,112-167\n",
		"sys/bus/pci/devices/0000:19:00.0/numa_node":     "0\n",
		"sys/class/infiniband/mlx5_0/fw_ver":             "28.39.1002\n",
		"sys/class/net/eth0/mtu":                         "1500\n",
		"cuda/lib64/libcudart.so.12.4.127":               "",
		"cuda/lib64/libcudart.so.12":                     "",
		"old/libcudart.so.11.8.89":                       "",
	})
	// Device files: symlinks to /dev/null are character devices (1:3), as the
	// reference cluster's fake GPUs were; one is missing.
	gres := "NodeName=gpu001 Name=gpu File=" + root + "/dev/fakegpu[0-2]\n"
	if err := os.WriteFile(filepath.Join(root, "etc/slurm/gres.conf"), []byte(gres), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	for _, n := range []string{"fakegpu0", "fakegpu1"} {
		if err := os.Symlink("/dev/null", filepath.Join(root, "dev", n)); err != nil {
			t.Fatal(err)
		}
	}
	n := &state.Node{NVML: &state.NVML{Available: true, GPUs: []state.GPU{
		{Index: 0, PCIBusID: "00000000:19:00.0", ProcessesKnown: true, Processes: []state.Process{{PID: 777, User: "bob", JobID: "41"}, {PID: 778}, {PID: 779}, {PID: 780}}}, // JobID as the NVML collector read it from 777's cgroup
		{Index: 1, PCIBusID: "00000000:3B:00.0"},
	}}}
	env := []string{"SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURMD_NODENAME=gpu001", "SLURM_JOB_NODELIST=gpu[001-002]",
		"CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0", "SLURM_CONF=" + root + "/etc/slurm/slurm.conf",
		"MASTER_ADDR=gpu001.cluster.local", "LD_LIBRARY_PATH=" + root + "/old:" + root + "/cuda/lib64"}
	st := gatherSlurm(context.Background(), n, Options{}, env, testHost(root))

	if !st.InJob || st.NodeName != "gpu001" || st.NodeNameFrom != "SLURMD_NODENAME" || len(st.Errors) > 0 {
		t.Fatalf("state %+v", st)
	}
	c := st.Conf
	if c.SlurmConf == nil || c.GresConf == nil || c.CgroupConf == nil || !c.CgroupConf.ConstrainDevices || !strings.HasSuffix(c.TopologyConf, "topology.conf") || len(c.Missing) > 0 {
		t.Errorf("conf %+v", c)
	}
	var access []string
	for _, d := range st.Devices {
		access = append(access, filepath.Base(d.Path)+"="+d.Access)
		if d.Access == "ok" && (!d.Char || d.Major != 1 || d.Minor != 3) {
			t.Errorf("device %+v: want char 1:3", d)
		}
	}
	if want := []string{"fakegpu0=ok", "fakegpu1=denied", "fakegpu2=absent"}; !reflect.DeepEqual(access, want) {
		t.Errorf("devices %v, want %v", access, want)
	}
	task := st.Task
	if task.PID != 4242 || task.User != "alice" || task.CgroupJobID != "42" || !reflect.DeepEqual(task.DeviceRules, []string{"c 195:0 rwm", "c 195:255 rwm"}) || len(task.CPUs) != 4 {
		t.Errorf("task %+v", task)
	}
	// The GPUs' local CPUs are the topology collector's: not read twice.
	if len(st.GPUCPUs) != 0 {
		t.Errorf("gpu cpus read again by the Slurm collector: %+v", st.GPUCPUs)
	}
	got := map[uint32]slurmstate.Process{}
	for _, p := range st.Processes {
		got[p.PID] = p
	}
	if p := got[777]; p.JobID != "41" || p.JobFrom != "cgroup" || *p.UID != 1001 || p.User != "bob" {
		t.Errorf("pid 777 %+v", p)
	}
	if p := got[778]; p.JobID != "42" || p.JobFrom != "environ" {
		t.Errorf("pid 778 %+v", p)
	}
	if p := got[780]; p.JobID != "" {
		t.Errorf("pid 780 (uid 1002) claims job 42 in its environment and was believed: %+v", p)
	}
	if p := got[779]; !p.Gone {
		t.Errorf("pid 779 %+v", p)
	}
	h := st.Host
	if !reflect.DeepEqual(h.IBDevices, []string{"mlx5_0"}) || !reflect.DeepEqual(h.NetInterfaces, []string{"eth0"}) {
		t.Errorf("host %+v", h)
	}
	if len(h.Resolved["gpu001"]) != 1 || len(h.Resolved["gpu001.cluster.local"]) != 0 || h.ResolveErrors["gpu001.cluster.local"] == "" {
		t.Errorf("resolved %v %v", h.Resolved, h.ResolveErrors)
	}
	if h.CUDARuntime == nil || h.CUDARuntime.Version != "12.4" || !strings.HasSuffix(h.CUDARuntime.From, "libcudart.so.12.4.127") {
		t.Errorf("cuda runtime %+v", h.CUDARuntime)
	}
}

func TestGatherSlurmHealthCheckEnvironment(t *testing.T) {
	root := fakeTree(t, map[string]string{"proc/self/cgroup": "0::/system.slice/slurmd.service\n"})
	n := &state.Node{NVML: &state.NVML{Available: true, GPUs: []state.GPU{{Index: 0, Processes: []state.Process{{PID: 1}}}}}}
	h := testHost(root)
	probed := false
	h.probe = func(string) error { probed = true; return nil }
	// slurmd gives a HealthCheckProgram SLURMD_NODENAME and nothing else.
	st := gatherSlurm(context.Background(), n, Options{SlurmConf: filepath.Join(root, "nope", "slurm.conf")}, []string{"SLURMD_NODENAME=vm"}, h)
	if st.InJob || !strings.Contains(st.JobReason, "SLURM_JOB_ID is not set") || st.NodeName != "vm" {
		t.Errorf("state %+v", st)
	}
	// A --slurm-conf naming no file is unreadable (an error), not missing (issue 32).
	if _, bad := st.Conf.UnreadableFile(filepath.Join(root, "nope", "slurm.conf")); st.Conf.SlurmConf != nil || !bad || st.Host != nil || st.Processes != nil || probed {
		t.Errorf("outside a job nothing job-only is collected: %+v", st)
	}
	if st.Task.Cgroup != "/system.slice/slurmd.service" {
		t.Errorf("cgroup v2 path %q", st.Task.Cgroup)
	}
	forced := gatherSlurm(context.Background(), n, Options{SlurmJob: "always"}, []string{}, h)
	if !forced.InJob || forced.JobReason != "forced by --job" || forced.NodeName != "gpu001" || forced.NodeNameFrom != "hostname" {
		t.Errorf("forced %+v", forced)
	}
	off := gatherSlurm(context.Background(), n, Options{SlurmJob: "never"}, []string{"SLURM_JOB_ID=1"}, h)
	if off.InJob {
		t.Errorf("--no-job still in job: %+v", off)
	}
}

// The device files and the processes come from Sources' hooks, whatever
// fills them (the driver and /proc, or a simulation): the collector's code is
// the same either way.
func TestGatherSlurmSourceHooks(t *testing.T) {
	root := fakeTree(t, map[string]string{"proc/777/status": "Uid:\t0\n"})
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	if err := os.Symlink("/dev/null", filepath.Join(root, "dev", "gpu0")); err != nil {
		t.Fatal(err)
	}
	gpu0 := filepath.Join(root, "dev", "gpu0")
	status := func(uid string) func(int32, string) ([]byte, error) {
		return func(pid int32, name string) ([]byte, error) {
			if pid == 777 && name == "status" {
				return []byte("Uid:\t" + uid + "\n"), nil
			}
			return nil, os.ErrNotExist
		}
	}
	for _, c := range []struct {
		name    string
		sources Sources
		devices []string // path=access
		procs   []string // pid:uid, or pid:gone
	}{
		{"no device files, the process has exited", Sources{GPUDeviceFiles: func() []string { return nil }, ProcessFile: func(int32, string) ([]byte, error) { return nil, os.ErrNotExist }},
			nil, []string{"777:gone"}},
		{"the hook's device files and status", Sources{GPUDeviceFiles: func() []string { return []string{gpu0, "/nonexistent/gpu1"} }, ProcessFile: status("4321")},
			[]string{gpu0 + "=ok", "/nonexistent/gpu1=absent"}, []string{"777:4321"}},
		{"status unreadable", Sources{GPUDeviceFiles: func() []string { return []string{gpu0} }, ProcessFile: func(int32, string) ([]byte, error) { return nil, os.ErrPermission }},
			[]string{gpu0 + "=ok"}, []string{"777:?"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := &state.Node{NVML: &state.NVML{Available: true, GPUs: []state.GPU{{Index: 0, Processes: []state.Process{{PID: 777}}}}}}
			h := testHost(root)
			real := realSlurmHost(Options{Sources: c.sources})
			h.gpuDevices, h.procFile = real.gpuDevices, real.procFile
			st := gatherSlurm(context.Background(), n, Options{}, []string{"SLURM_JOB_ID=5", "SLURM_STEP_ID=0", "CUDA_VISIBLE_DEVICES=0"}, h)
			var devs, procs []string
			for _, d := range st.Devices {
				devs = append(devs, d.Path+"="+d.Access)
			}
			for _, p := range st.Processes {
				s := "?"
				switch {
				case p.Gone:
					s = "gone"
				case p.UID != nil:
					s = strconv.Itoa(*p.UID)
				}
				procs = append(procs, strconv.Itoa(int(p.PID))+":"+s)
			}
			if !reflect.DeepEqual(devs, c.devices) || !reflect.DeepEqual(procs, c.procs) {
				t.Errorf("devices %v, processes %v; want %v, %v", devs, procs, c.devices, c.procs)
			}
		})
	}
}

func TestGatherSlurmHungFilesystem(t *testing.T) {
	h := testHost(t.TempDir())
	h.readFile = func(string) ([]byte, error) { select {} }
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	st := gatherSlurm(ctx, &state.Node{}, Options{}, []string{"SLURM_JOB_ID=5", "SLURM_STEP_ID=0"}, h)
	if time.Since(start) > 2*time.Second || len(st.Errors) == 0 || !st.InJob || st.Env == nil {
		t.Errorf("hung reads: %s, %+v", time.Since(start), st)
	}
}

func TestFindCUDARuntime(t *testing.T) {
	root := fakeTree(t, map[string]string{
		"a/version.json":            `{"cuda": {"name": "CUDA SDK", "version": "12.2.140"}}`,
		"b/version.txt":             "CUDA Version 11.8.89\n",
		"c/lib64/libcudart.so.11.0": "",
	})
	h := testHost(root)
	for env, want := range map[string]string{
		"CUDA_VERSION=12.6.1":                               "12.6.1",
		"CUDA_HOME=" + root + "/a":                          "12.2.140",
		"CUDA_HOME=" + root + "/b":                          "11.8.89",
		"CUDA_HOME=" + root + "/c":                          "11.0",
		"LD_LIBRARY_PATH=/nonexistent:" + root + "/c/lib64": "11.0",
		"PATH=/bin": "",
	} {
		got := findCUDARuntime(slurmstate.ParseEnv([]string{env}), h)
		if want == "" && got != nil || want != "" && (got == nil || got.Version != want) {
			t.Errorf("%s: %+v, want %s", env, got, want)
		}
	}
}

// Issue 32: a slurm.conf that cannot be read is unreadable with its reason,
// never "missing"; no slurm.conf at the default path stays missing (a skip);
// a --slurm-conf that names no file is unreadable too.
func TestReadSlurmConfUnreadable(t *testing.T) {
	h := testHost(t.TempDir())
	files := map[string]error{}
	h.readFile = func(p string) ([]byte, error) {
		if err, ok := files[p]; ok {
			if err != nil {
				return nil, err
			}
			return []byte("ClusterName=c\n"), nil
		}
		return nil, &os.PathError{Op: "open", Path: p, Err: syscall.ENOENT}
	}
	c := readSlurmConf("", h)
	if c.SlurmConf != nil || len(c.Unreadable) != 0 || len(c.Missing) != 1 || c.Missing[0] != "/etc/slurm/slurm.conf" {
		t.Errorf("no slurm.conf: %+v", c)
	}
	files["/etc/slurm/slurm.conf"] = &os.PathError{Op: "open", Path: "/etc/slurm/slurm.conf", Err: syscall.EACCES}
	files[configlessConf] = nil
	c = readSlurmConf("", h)
	if e, ok := c.UnreadableFile("/etc/slurm/slurm.conf"); !ok || e.Reason != "permission denied" || c.SlurmConf != nil || len(c.Missing) != 0 {
		t.Errorf("unreadable default slurm.conf (configless beside it): %+v", c)
	}
	c = readSlurmConf("/site/slurm.conf", h)
	if e, ok := c.UnreadableFile("/site/slurm.conf"); !ok || !strings.Contains(e.Reason, "--slurm-conf") {
		t.Errorf("--slurm-conf naming no file: %+v", c)
	}
	files["/etc/slurm/slurm.conf"] = nil
	files["/etc/slurm/gres.conf"] = errors.New("/etc/slurm/gres.conf: over the size limit: more than 16 MiB")
	c = readSlurmConf("", h)
	if e, ok := c.UnreadableFile("/etc/slurm/gres.conf"); !ok || e.Reason != "over the size limit: more than 16 MiB" || c.SlurmConf == nil || slices.Contains(c.Missing, "/etc/slurm/gres.conf") {
		t.Errorf("unreadable gres.conf: %+v", c)
	}
}

// The task's PID namespace is /proc/self/ns/pid's link, as the kernel
// names it; an unreadable link leaves it empty (not judged).
func TestReadTaskPIDNamespace(t *testing.T) {
	root := fakeTree(t, map[string]string{"proc/self/cgroup": "0::/system.slice/slurmstepd.scope/job_4/step_0/user/task_0\n"})
	h := testHost(root)
	h.pidNS = func() (string, error) { return "pid:[4026532512]", nil }
	if task, _ := readTask(context.Background(), h); task.PIDNamespace != "pid:[4026532512]" {
		t.Errorf("PIDNamespace %q", task.PIDNamespace)
	}
	h.pidNS = func() (string, error) { return "", os.ErrPermission }
	if task, _ := readTask(context.Background(), h); task.PIDNamespace != "" {
		t.Errorf("unreadable: %q", task.PIDNamespace)
	}
}

// A simulated job step's cgroup (Sources.StepCgroup, sim cgroup-gpu) stands
// for this process's where that names no Slurm job; a real step's own
// cgroup (its devices.list included) is kept.
func TestReadTaskStepCgroup(t *testing.T) {
	const step = "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0"
	for _, tc := range []struct {
		name, self, job, cgroup string
		rules                   int
	}{
		{"no cgroup file", "", "4242", "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0", 0},
		{"a login shell", "0::/user.slice/user-1000.slice/session-3.scope\n", "4242", "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0", 0},
		{"a real step", "12:devices:/slurm/uid_1000/job_42/step_0/task_0\n0::/\n", "42", "/slurm/uid_1000/job_42/step_0/task_0", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"sys/fs/cgroup/devices/slurm/uid_1000/job_42/step_0/task_0/devices.list": "c 195:0 rwm\nc 195:255 rwm\n"}
			if tc.self != "" {
				files["proc/self/cgroup"] = tc.self
			}
			h := testHost(fakeTree(t, files))
			h.stepCgroup = step
			task, _ := readTask(context.Background(), h)
			if task.CgroupJobID != tc.job || task.Cgroup != tc.cgroup || len(task.DeviceRules) != tc.rules {
				t.Errorf("task job %q cgroup %q rules %v; want %q %q %d", task.CgroupJobID, task.Cgroup, task.DeviceRules, tc.job, tc.cgroup, tc.rules)
			}
		})
	}
}
