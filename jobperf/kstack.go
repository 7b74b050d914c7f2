package jobperf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
)

// Bounds on a kernel stack --hang reads: the bytes of one /proc/PID/stack
// (the kernel prints at most 64 frames of a line each, a few KiB), the
// frames kept (the top ones: where the thread sleeps), and the stacks read
// per task per tick (the main thread's and those of threads in D).
const (
	MaxStackBytes    = 64 << 10
	MaxStackFrames   = 12
	MaxStacksPerTask = 8
)

// parseKernelStack reads /proc/PID/stack (proc(5), "stack"; root only,
// CONFIG_STACKTRACE): a frame a line, innermost first, as the kernel's
// proc_pid_stack prints it: "[<0>] rpc_wait_bit_killable+0x24/0xa0
// [sunrpc]" (the address hidden as 0 since Linux 4.16, a hex address
// before). A frame is kept as its function and, for a module's, the module
// in brackets: "rpc_wait_bit_killable [sunrpc]". At most MaxStackFrames
// are kept; a line that is not a frame is an error (not a stack file).
func parseKernelStack(name string, data []byte) ([]string, error) {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, "[<")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not a stack frame", name, clip(line))
		}
		addr, rest, ok := strings.Cut(rest, ">]")
		if !ok || addr == "" || strings.Trim(addr, "0123456789abcdefABCDEF") != "" {
			return nil, fmt.Errorf("%s: %q is not a stack frame", name, clip(line))
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s: %q has no function", name, clip(line))
		}
		fn, _, _ := strings.Cut(fields[0], "+")
		if _, err := parseWchan(name, []byte(fn)); err != nil || fn == "" {
			return nil, fmt.Errorf("%s: %q is not a kernel symbol", name, clip(fields[0]))
		}
		frame := fn
		if len(fields) > 1 {
			mod := fields[1]
			if len(mod) > 2 && mod[0] == '[' && mod[len(mod)-1] == ']' {
				if _, err := parseWchan(name, []byte(mod[1:len(mod)-1])); err == nil {
					frame += " " + mod
				}
			}
		}
		if len(out) < MaxStackFrames {
			out = append(out, frame)
		}
	}
	return out, nil
}

var errStackTooBig = errors.New("larger than the stack bound")

// readStack reads one /proc/.../stack, at most MaxStackBytes, under the
// call deadline. Unreadable (not root, a kernel without
// CONFIG_STACKTRACE) is nil: a fact not known.
func (j *Job) readStack(ctx context.Context, dir string) []string {
	p := path.Join(dir, "stack")
	data, err := deadline.Do(ctx, "jobperf:"+p, j.r.d, func() ([]byte, error) {
		f, err := j.r.fs.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxStackBytes+1))
		if err != nil {
			return nil, err
		}
		if len(b) > MaxStackBytes {
			return nil, errStackTooBig
		}
		return b, nil
	})
	if err != nil {
		return nil
	}
	frames, err := parseKernelStack(p, data)
	if err != nil {
		return nil
	}
	return frames
}
