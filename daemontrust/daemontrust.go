// Package daemontrust decides whether the gpuprobe daemon answering on a
// URL may be believed.
//
// Why a client verifies its daemon: the root health check resumes a node
// its report says is healthy. Any local user can listen on 127.0.0.1:10495
// while the daemon is not holding the port (restarting, crashed, not
// installed) and serve an all-pass report. So a loopback URL is trusted
// only when every socket listening on that port is owned by root (systemd's
// socket activation), by the user running the check, or by the unit's own
// user "gpuprobe" (the shipped unit runs with DynamicUser=yes: that name
// exists only while the unit runs, and only root can create it), as the
// kernel records it in /proc/net/tcp{,6}; a remote daemon only over https
// (its certificate is checked). Anything else is judged directly.
package daemontrust

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/internal/proctcp"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
)

// ErrNotListening: nothing listens on the daemon's port, so no daemon runs
// there. It is told apart from ErrUntrusted because the two call for
// different actions: start the daemon, or find who holds its port.
var ErrNotListening = errors.New("no daemon is running")

// ErrUntrusted: something answers on the port (or could), but it cannot be
// shown to be gpuprobe's daemon.
var ErrUntrusted = errors.New("the daemon cannot be trusted")

// DaemonUser is the shipped unit's (dynamic) user.
const DaemonUser = "gpuprobe"

// Verifier holds where the policy reads its facts; the zero value reads
// this machine's /proc and names users through NSS.
type Verifier struct {
	// ProcRoot is where net/tcp and net/tcp6 are read ("" is /proc).
	ProcRoot string
	// LookupUser names a uid ("" when it has no name); nil asks NSS under
	// a deadline.
	LookupUser func(ctx context.Context, uid uint32) string
}

// Verify returns nil when the daemon at rawURL may be trusted. A refusal
// wraps ErrNotListening when no socket listens on the port, ErrUntrusted
// otherwise.
func (v Verifier) Verify(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	host, portStr := u.Hostname(), u.Port()
	ips := []net.IP{net.ParseIP(host)}
	if host == "localhost" {
		ips = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	if ips[0] == nil || !ips[0].IsLoopback() {
		if u.Scheme == "https" {
			return nil
		}
		return fmt.Errorf("%w: %s is not on this node and not https: who answers cannot be verified", ErrUntrusted, rawURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: %s: scheme %q", ErrUntrusted, rawURL, u.Scheme)
	}
	if portStr == "" {
		portStr = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("%w: %s: port %q", ErrUntrusted, rawURL, portStr)
	}
	root := v.ProcRoot
	if root == "" {
		root = "/proc"
	}
	var socks []proctcp.Listener
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := readlimit.File(ctx, "/proc/net/"+name, filepath.Join(root, "net", name), 64<<20)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("%w: cannot verify who listens on port %d: %w", ErrUntrusted, port, err)
		}
		socks = append(socks, proctcp.Listeners(data)...)
	}
	lookup := v.LookupUser
	if lookup == nil {
		lookup = lookupUser
	}
	me := uint32(os.Geteuid())
	found := 0
	for _, s := range socks {
		if s.Port != port || !(s.IP.IsUnspecified() || containsIP(ips, s.IP)) {
			continue
		}
		found++
		if s.UID != 0 && s.UID != me && lookup(ctx, s.UID) != DaemonUser {
			return fmt.Errorf("%w: the socket listening on %s:%d belongs to uid %d, not root or %s: not gpuprobe's daemon", ErrUntrusted, s.IP, port, s.UID, DaemonUser)
		}
	}
	if found == 0 {
		return fmt.Errorf("%w: nothing listens on %s port %d (no listening socket in /proc/net/tcp{,6})", ErrNotListening, host, port)
	}
	return nil
}

// lookupUser names uid through NSS under a deadline (LDAP may hang).
func lookupUser(ctx context.Context, uid uint32) string {
	name, err := deadline.Do(ctx, "nss:user-lookup", 2*time.Second, func() (string, error) {
		u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
	if err != nil {
		return ""
	}
	return name
}

func containsIP(ips []net.IP, ip net.IP) bool {
	for _, x := range ips {
		if x.Equal(ip) {
			return true
		}
	}
	return false
}
