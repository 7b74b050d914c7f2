package collect

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// /proc/PID/cgroup files of processes in containers, as published in
// public issues (each case names its source), and a Slurm step's.
func TestProcessContainer(t *testing.T) {
	env := func(kv ...string) []byte { return []byte(strings.Join(kv, "\x00") + "\x00") }
	for _, c := range []struct {
		name, cgroup string
		environ      []byte
		containerenv bool
		want, from   string // runtime, a substring of the marker
		job          string // slurmstate.JobFromCgroup of the same file
	}{
		// moby/moby#4450 and containerd/containerd#285 (docker run fedora
		// cat /proc/self/cgroup, systemd cgroup driver, cgroup v1).
		{name: "docker, systemd driver", cgroup: "4:cpuset:/system.slice/docker-b33dda97580e721a69fa81742190341f858ea809ec4a9d74a8cfd411b0ee7c26.scope\n1:name=systemd:/system.slice/docker-b33dda97580e721a69fa81742190341f858ea809ec4a9d74a8cfd411b0ee7c26.scope\n",
			want: "docker", from: "docker-b33dda97580e"},
		// ctrsploit/ctrsploit#280 (cgroupfs driver, cgroup v1; the v2 line
		// is containerd's).
		{name: "docker, cgroupfs driver", cgroup: "12:net_cls,net_prio:/docker/2403ccfe427f1dc7b6120dccb9ac58c2f8456950380d587a9f33ea7f00dd303d\n10:rdma:/\n1:name=systemd:/docker/2403ccfe427f1dc7b6120dccb9ac58c2f8456950380d587a9f33ea7f00dd303d\n0::/system.slice/containerd.service\n",
			want: "docker", from: "/docker/2403ccfe427f"},
		// moby/moby#34220: a 32-digit ID.
		{name: "docker, short ID", cgroup: "10:perf_event:/docker/c8cef9e2ff114e429cb845559c4a0dff\n1:name=systemd:/user.slice/user-52321.slice/session-128207.scope\n", want: "docker"},
		// podman-container-tools/podman#20423 (rootful, systemd, cgroup v2,
		// crun's "container" sub-cgroup).
		{name: "podman, systemd v2", cgroup: "0::/user.slice/user-0.slice/user@0.service/machine.slice/libpod-cf21d19260ace8544fe8b769fc2638bf2c0873dfbfff0b6253f0569b26a1d5eb.scope/container\n",
			want: "podman", from: "libpod-cf21d19260ac"},
		// podman-container-tools/podman#10602 (cgroup v1).
		{name: "podman, systemd v1", cgroup: "12:pids:/machine.slice/libpod-2521e906f0a0c758c3a7dc4fd68c197e32e96abb4b36807d0b0ede6d014a7c24.scope\n1:name=systemd:/machine.slice/libpod-2521e906f0a0c758c3a7dc4fd68c197e32e96abb4b36807d0b0ede6d014a7c24.scope/init.scope\n", want: "podman"},
		// DOMjudge/domjudge#3093 (podman with --cgroup-manager cgroupfs, as
		// scripts/container-e2e.sh runs it).
		{name: "podman, cgroupfs", cgroup: "0::/libpod_parent/libpod-5ad0debee049e150d851d81fa3e8184ee20725412e5702c7ffe3aae7e5173207\n", want: "podman"},
		// falcosecurity/libs#1613: conmon's scope is Podman's monitor, not a
		// container process.
		{name: "podman's conmon", cgroup: "0::/machine.slice/libpod-conmon-a2bc7b153f034b17f358cde43a7f8c7475147e8a0d1b2573c26473244ec44ce4.scope\n"},
		// opencontainers/runc#4620 (CRI-O pod, systemd driver).
		{name: "kubernetes, CRI-O", cgroup: "13:freezer:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-5eed917563583925ffdbd40a64efb2aaffe58638e57add8becaf460fe74f5b1c.scope\n",
			want: "kubernetes", from: "kubepods.slice"},
		// open-telemetry/opentelemetry-java#4507 (containerd, systemd
		// driver on cgroup v1: "slice:cri-containerd:id").
		{name: "kubernetes, containerd", cgroup: "11:perf_event:/kubepods-besteffort-pod0125ec2f_b64a_4868_8f5b_94b56cbab864.slice:cri-containerd:ee4b20e90ac7f42a10bd004d05646b13d8ab5e2c5e7cbc01abf8006bac016459\n", want: "kubernetes"},
		// kontena/pharos-cluster#440: a Docker-backed pod is Kubernetes'.
		{name: "kubernetes over docker", cgroup: "1:name=systemd:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9692aa0e_748e_11e8_8dfa_76d458035df6.slice/docker-abddff03dfd7710c79a750ce3e730365cbb2c8247a974170c1062683bc3e9152.scope\n", want: "kubernetes"},
		// A Pyxis/Enroot step: the process stays in the Slurm step's cgroup
		// (Enroot makes none), so the job is told from the cgroup and the
		// runtime from the environment Pyxis passed.
		{name: "pyxis in a Slurm step", cgroup: "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n",
			environ: env("SLURM_JOB_ID=4242", "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image=nvcr.io#nvidia/pytorch:25.01-py3", "PATH=/usr/bin"),
			want:    "enroot", from: "environ SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image", job: "4242"},
		{name: "apptainer in a Slurm step", cgroup: "0::/system.slice/slurmstepd.scope/job_77/step_1/user/task_3\n",
			environ: env("APPTAINER_CONTAINER=/scratch/pytorch.sif", "APPTAINER_NAME=pytorch.sif"), want: "apptainer", from: "environ APPTAINER_", job: "77"},
		// Rootless Podman inside a job with --cgroups=disabled: no cgroup of
		// its own; its /run/.containerenv in the process's root says so.
		{name: "podman without a cgroup, in a Slurm step", cgroup: "0::/system.slice/slurmstepd.scope/job_9/step_0/user/task_0\n", containerenv: true,
			want: "podman", from: "root/run/.containerenv", job: "9"},
		{name: "bare process in a Slurm step", cgroup: "0::/system.slice/slurmstepd.scope/job_9/step_0/user/task_0\n", environ: env("SLURM_JOB_ID=9"), job: "9"},
		// The environment is the user's: a name that is not a variable name
		// is skipped, and only names are reported (never a value).
		{name: "a forged name", environ: env("ENROOT_\x1b[31m=x", "container=docker"), want: ""},
		{name: "container=podman", environ: env("container=podman"), want: "podman", from: "environ container=podman"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, from := ProcessContainer([]byte(c.cgroup), c.environ, c.containerenv)
			if rt != c.want || !strings.Contains(from, c.from) || (rt == "") != (from == "") {
				t.Errorf("got %q from %q, want %q from %q", rt, from, c.want, c.from)
			}
			if job := slurmstate.JobFromCgroup([]byte(c.cgroup)); job != c.job {
				t.Errorf("job %q, want %q", job, c.job)
			}
		})
	}
}

// The host reader reads a PID's own files under --path.procfs, bounded.
func TestHostProcessContainer(t *testing.T) {
	dir := t.TempDir()
	pid := filepath.Join(dir, "31337")
	if err := os.MkdirAll(filepath.Join(pid, "root/run"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(pid, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup", "0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_0\n")
	write("environ", "HOME=/root\x00"+strings.Repeat("X", maxEnviron)+"\x00ENROOT_ROOTFS=/x\x00")
	tab := &procTable{root: dir, reg: &deadline.Registry{}, timeout: lookupTimeout}
	// The marker past the bound is not read.
	if rt, from := tab.container(context.Background(), 31337); rt != "" {
		t.Errorf("past the bound: %q %q", rt, from)
	}
	write("root/run/.containerenv", "engine=\"podman-4.3.1\"\n")
	if rt, from := tab.container(context.Background(), 31337); rt != "podman" || from != "root/run/.containerenv" {
		t.Errorf("got %q %q", rt, from)
	}
	if rt, _ := tab.container(context.Background(), 404); rt != "" {
		t.Errorf("a gone process: %q", rt)
	}
}

// The job's GPU processes, each once, in PID order; bare ones left out.
func TestJobContainers(t *testing.T) {
	p := &state.JobPerf{GPUs: []state.JobGPU{{JobPIDs: []uint32{30, 10}}, {JobPIDs: []uint32{10, 20}}}}
	asked := 0
	got := jobContainers(context.Background(), p, func(_ context.Context, pid int32) (string, string) {
		asked++
		if pid == 20 {
			return "", ""
		}
		return "enroot", "environ ENROOT_ROOTFS"
	})
	want := []state.ProcessContainer{{PID: 10, Runtime: "enroot", From: "environ ENROOT_ROOTFS"}, {PID: 30, Runtime: "enroot", From: "environ ENROOT_ROOTFS"}}
	if !reflect.DeepEqual(got, want) || asked != 3 {
		t.Errorf("got %+v (%d asked), want %+v", got, asked, want)
	}
}
