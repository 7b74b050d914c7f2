package check

import (
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// What the kernel frames of a rank in D say it waits on: its wchan, its
// threads' wchans and kernel stacks (/proc/PID/stack, proc(5); each frame
// "function [module]"). The function and module names are the kernel's
// and its modules' own: NFS (fs/nfs, module nfs/nfsv4), its RPC layer
// (net/sunrpc: rpc_wait_bit_killable, __rpc_wait_for_completion_task),
// Lustre's client (llite ll_*, osc_*, ptlrpc_*, ldlm_*, mdc_*), and the
// NVIDIA driver (nvidia.ko's nvidia_* and its OS layer os_*, rm's _nv*,
// nvidia_uvm.ko's uvm_*). docs/job.md, "My job hangs".
const (
	stuckNetFS  = "stuck on a network filesystem (NFS/Lustre)"
	stuckNVIDIA = "stuck in the NVIDIA driver (a GPU ioctl)"
)

var netFSModules = map[string]bool{"nfs": true, "nfsv3": true, "nfsv4": true, "sunrpc": true,
	"lustre": true, "ptlrpc": true, "osc": true, "mdc": true, "lov": true, "lmv": true, "obdclass": true, "lnet": true, "ksocklnd": true, "ko2iblnd": true}

var nvidiaModules = map[string]bool{"nvidia": true, "nvidia_uvm": true, "nvidia_modeset": true, "nvidia_drm": true, "nvidia_peermem": true}

// frameClass classifies one frame ("rpc_wait_bit_killable [sunrpc]", or a
// bare wchan): stuckNetFS, stuckNVIDIA or "".
func frameClass(f string) string {
	fn, mod, _ := strings.Cut(f, " ")
	mod = strings.Trim(mod, "[]")
	switch {
	case netFSModules[mod],
		hasAnyPrefix(fn, "nfs_", "nfs4_", "_nfs4_", "nfs3_", "rpc_wait", "__rpc_wait", "osc_", "ptlrpc", "ldlm_", "mdc_") ||
			strings.HasPrefix(fn, "ll_") && fn != "ll_rw_block" ||
			strings.Contains(fn, "lustre"):
		return stuckNetFS
	case nvidiaModules[mod], hasAnyPrefix(fn, "nvidia", "uvm", "os_", "_nv"):
		return stuckNVIDIA
	}
	return ""
}

func hasAnyPrefix(s string, ps ...string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// stuckOn says what the frames of a rank in D point at (a network
// filesystem before the driver: a GPU process blocked on a mount is the
// mount's fault), and the first frame that says so; "" when none does.
// The main thread's stack counts when its last state read was D.
func stuckOn(r state.HangRank) (what, frame string) {
	frames := append([]string{r.Wchan}, r.DWchans...)
	if strings.HasSuffix(r.States, "D") {
		frames = append(frames, r.KernelStack...)
	}
	for _, st := range r.DStacks {
		frames = append(frames, st...)
	}
	for _, want := range []string{stuckNetFS, stuckNVIDIA} {
		for _, f := range frames {
			if f != "" && frameClass(f) == want {
				return want, f
			}
		}
	}
	return "", ""
}

// stackNote is the top frames of a stack, innermost first, escaped.
func stackNote(frames []string, n int) string {
	var out []string
	for i, f := range frames {
		if i == n {
			out = append(out, "…")
			break
		}
		out = append(out, safetext.Clean(f))
	}
	return strings.Join(out, " < ")
}
