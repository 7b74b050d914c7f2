package collect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/state"
	"github.com/gpuprobe/gpuprobe/state/slurmstate"
)

// maxCommand keeps a process's command line to one readable report line.
const maxCommand = 120

// lookupTimeout bounds one process-table read or user lookup. /proc answers
// in microseconds and NSS from its cache in milliseconds; a lookup that
// takes longer is an LDAP/SSSD server that is down.
const lookupTimeout = 2 * time.Second

// describeProcesses names the owner and executable of every process NVML
// lists, so a report can say whose leftover is on a GPU. The command line
// is recorded only when asked (its arguments can hold secrets).
func describeProcesses(ctx context.Context, n *state.Node, lookup func(context.Context, int32) (user, exe, cmdline string), job func(context.Context, int32) string) {
	if n.NVML == nil {
		return
	}
	for gi := range n.NVML.GPUs {
		for pi := range n.NVML.GPUs[gi].Processes {
			p := &n.NVML.GPUs[gi].Processes[pi]
			p.User, p.Command, p.CommandLine = lookup(ctx, int32(p.PID))
			p.JobID = job(ctx, int32(p.PID))
		}
	}
}

// procTable reads owners from a procfs. Every read and the user lookup run
// under deadline.Do: a hung /proc file or NSS lookup on a hung LDAP costs
// one goroutine, once, and the name falls back to the numeric uid.
type procTable struct {
	root         string
	commandLines bool
	reg          *deadline.Registry
	timeout      time.Duration
	lookupID     func(uid string) (string, error) // NSS; tests swap it
}

// hostProcessJobs names each PID's Slurm job from its /proc/PID/cgroup,
// read under the same guards as the owner.
func hostProcessJobs(o Options) func(context.Context, int32) string {
	t := &procTable{root: o.procfs(), reg: &deadline.Default, timeout: lookupTimeout}
	return t.job
}

func (t *procTable) job(ctx context.Context, pid int32) string {
	p := filepath.Join(t.root, strconv.Itoa(int(pid)), "cgroup")
	data, err := deadline.DoIn(t.reg, ctx, p, t.timeout, func() ([]byte, error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		buf := make([]byte, 16384)
		n, err := io.ReadFull(f, buf)
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = nil
		}
		return buf[:n], err
	})
	if err != nil {
		return ""
	}
	return slurmstate.JobFromCgroup(data)
}

func hostProcesses(o Options) func(context.Context, int32) (string, string, string) {
	t := &procTable{root: o.procfs(), commandLines: o.ProcessCommandLines, reg: &deadline.Default, timeout: lookupTimeout, lookupID: nssUser}
	return t.lookup
}

func (t *procTable) lookup(ctx context.Context, pid int32) (usr, exe, cmdline string) {
	dir := filepath.Join(t.root, strconv.Itoa(int(pid)))
	read := func(name string) ([]byte, error) {
		p := filepath.Join(dir, name)
		return deadline.DoIn(t.reg, ctx, p, t.timeout, func() ([]byte, error) {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			buf := make([]byte, 8192)
			n, err := f.Read(buf)
			if n > 0 {
				err = nil
			}
			return buf[:n], err
		})
	}
	if status, err := read("status"); err == nil {
		if uid, ok := statusUID(string(status)); ok { // slurm_host.go
			usr = t.userName(ctx, strconv.Itoa(uid))
		}
	}
	if link, err := deadline.DoIn(t.reg, ctx, filepath.Join(dir, "exe"), t.timeout, func() (string, error) {
		return os.Readlink(filepath.Join(dir, "exe"))
	}); err == nil {
		exe = filepath.Base(strings.TrimSuffix(link, " (deleted)"))
	} else if comm, err := read("comm"); err == nil {
		exe = strings.TrimSpace(string(comm)) // kernel threads and other namespaces: 15 characters
	}
	if t.commandLines {
		if raw, err := read("cmdline"); err == nil {
			cmdline = strings.TrimSpace(string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '})))
			if len(cmdline) > maxCommand {
				cmdline = cmdline[:maxCommand] + "…"
			}
		}
	}
	return usr, exe, cmdline
}

// userName resolves a uid through NSS (which may ask LDAP or SSSD) under
// one shared name: while a lookup is hung, every other lookup is refused at
// once and the uid is shown as a number.
func (t *procTable) userName(ctx context.Context, uid string) string {
	name, err := deadline.DoIn(t.reg, ctx, "nss:user-lookup", t.timeout, func() (string, error) { return t.lookupID(uid) })
	if err != nil || name == "" {
		return fmt.Sprintf("uid %s", uid)
	}
	return name
}

func nssUser(uid string) (string, error) {
	u, err := user.LookupId(uid)
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

func optional(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}
