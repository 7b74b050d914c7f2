package collect

import (
	"context"
	"strings"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/gpuprobe/gpuprobe/state"
)

// maxCommand keeps a process's command line to one readable report line.
const maxCommand = 120

// describeProcesses names the owner and command of every process NVML lists,
// so a report can say whose leftover is on a GPU.
func describeProcesses(ctx context.Context, n *state.Node, lookup func(context.Context, int32) (user, cmd string)) {
	if n.NVML == nil {
		return
	}
	for gi := range n.NVML.GPUs {
		for pi := range n.NVML.GPUs[gi].Processes {
			p := &n.NVML.GPUs[gi].Processes[pi]
			p.User, p.Command = lookup(ctx, int32(p.PID))
		}
	}
}

func hostProcess(ctx context.Context, pid int32) (string, string) {
	p, err := process.NewProcessWithContext(ctx, pid)
	if err != nil {
		return "", ""
	}
	user, _ := p.UsernameWithContext(ctx)
	cmd, _ := p.CmdlineWithContext(ctx)
	if len(cmd) > maxCommand {
		cmd = cmd[:maxCommand] + "…"
	}
	return user, strings.TrimSpace(cmd)
}
