package jobperf

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/rootfs"
)

// Kernel stacks as /proc/PID/stack prints them (proc(5), "stack";
// kernel fs/proc/base.c proc_pid_stack: "[<%pK>] %pB", the address shown
// as 0 since Linux 4.16 unless kptr_restrict allows it).
func TestParseKernelStack(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
		err      bool
	}{
		// nfs-ganesha/nfs-ganesha#1327 (2025-10-03): `cat /proc/3734491/stack`
		// of a bash in D on an NFSv4 mount, RHEL 9.6 kernel 5.14.
		{"NFSv4 open (nfs-ganesha#1327)", "[<0>] nfs_set_open_stateid_locked+0xfc/0x370 [nfsv4]\n[<0>] update_open_stateid+0x9f/0x290 [nfsv4]\n[<0>] _nfs4_opendata_to_nfs4_state+0x10b/0x220 [nfsv4]\n[<0>] _nfs4_open_and_get_state+0xc6/0x2b0 [nfsv4]\n[<0>] _nfs4_do_open.isra.0+0x168/0x4e0 [nfsv4]\n[<0>] nfs4_do_open+0xcd/0x1f0 [nfsv4]\n[<0>] nfs4_atomic_open+0xf1/0x100 [nfsv4]\n[<0>] nfs4_file_open+0x12f/0x240 [nfsv4]\n[<0>] do_dentry_open+0x14f/0x430\n[<0>] do_open+0x219/0x400\n[<0>] path_openat+0x111/0x280\n[<0>] do_filp_open+0xb2/0x160\n",
			[]string{"nfs_set_open_stateid_locked [nfsv4]", "update_open_stateid [nfsv4]", "_nfs4_opendata_to_nfs4_state [nfsv4]", "_nfs4_open_and_get_state [nfsv4]", "_nfs4_do_open.isra.0 [nfsv4]", "nfs4_do_open [nfsv4]", "nfs4_atomic_open [nfsv4]", "nfs4_file_open [nfsv4]", "do_dentry_open", "do_open", "path_openat", "do_filp_open"}, false},
		// microsoft/pai#2117 (2019-03-28): `sudo cat /proc/32363/stack` of
		// node_exporter in D; its first frame.
		{"RPC wait (microsoft/pai#2117)", "[<0>] rpc_wait_bit_killable+0x24/0xa0 [sunrpc]\n", []string{"rpc_wait_bit_killable [sunrpc]"}, false},
		// Before Linux 4.16 the address was printed: the format of the
		// kernel's own call traces of the time (dCache/dcache#3769's).
		{"address shown (before 4.16)", "[<ffffffffa01874de>] xprt_wait_bit+0xe/0x20 [sunrpc]\n[<ffffffff8154baba>] __wait_on_bit_lock+0x5a/0xc0\n",
			[]string{"xprt_wait_bit [sunrpc]", "__wait_on_bit_lock"}, false},
		// rwth-i6/returnn#1480 (2023-12-20): a torchrun rank in D in
		// uvm_ioctl; its frames from the hung-task trace in dmesg, laid
		// out as /proc/PID/stack prints them.
		{"NVIDIA UVM ioctl (returnn#1480)", "[<0>] __mutex_lock.constprop.0+0x263/0x490\n[<0>] mutex_lock+0x34/0x40\n[<0>] uvm_page_tree_get_ptes_async+0x93/0x970 [nvidia_uvm]\n[<0>] uvm_ioctl+0x13e0/0x16f0 [nvidia_uvm]\n",
			[]string{"__mutex_lock.constprop.0", "mutex_lock", "uvm_page_tree_get_ptes_async [nvidia_uvm]", "uvm_ioctl [nvidia_uvm]"}, false},
		{"empty (running)", "", nil, false},
		{"hostile module is dropped", "[<0>] f+0x1/0x2 [\x1b[31m]\n", []string{"f"}, false},
		{"not a stack", "hello\n", nil, true},
		{"not a symbol", "[<0>] \x1b]0;pwn+0x1/0x2\n", nil, true},
		{"no function", "[<0>]\n", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseKernelStack("stack", []byte(c.in))
			if (err != nil) != c.err || !slices.Equal(got, c.want) {
				t.Errorf("got %q, %v; want %q (error %v)", got, err, c.want, c.err)
			}
		})
	}
	long := strings.Repeat("[<0>] schedule+0x1/0x2\n", 64)
	if got, err := parseKernelStack("stack", []byte(long)); err != nil || len(got) != MaxStackFrames {
		t.Errorf("64 frames: %d kept, %v; want %d", len(got), err, MaxStackFrames)
	}
}

// A stack file past the bound is not read: a fact not known.
func TestReadStackBounded(t *testing.T) {
	ok := "[<0>] rpc_wait_bit_killable+0x24/0xa0 [sunrpc]\n"
	tree := fstest.MapFS{
		"proc/1/stack": {Data: []byte(ok)},
		"proc/2/stack": {Data: []byte(strings.Repeat(ok, MaxStackBytes/len(ok)+1))},
	}
	j := &Job{r: reader{fs: rootfs.FS{Tree: tree}, d: time.Second}}
	if got := j.readStack(context.Background(), "/proc/1"); !slices.Equal(got, []string{"rpc_wait_bit_killable [sunrpc]"}) {
		t.Errorf("got %q", got)
	}
	if got := j.readStack(context.Background(), "/proc/2"); got != nil {
		t.Errorf("over the bound: got %d frames, want none", len(got))
	}
	if got := j.readStack(context.Background(), "/proc/3"); got != nil {
		t.Errorf("absent: got %q", got)
	}
}
