package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/deadline"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
)

// Why --from-daemon verifies its daemon: the root health check resumes a
// node its report says is healthy. Any local user can listen on
// 127.0.0.1:10495 while the daemon is not holding the port (restarting,
// crashed, not installed) and serve an all-pass report. So a loopback URL is
// trusted only when every socket listening on that port is owned by root
// (systemd's socket activation), by the user running the check, or by the
// unit's own user "gpuprobe" (the shipped unit runs with DynamicUser=yes:
// that name exists only while the unit runs, and only root can create it),
// as the kernel records it in /proc/net/tcp{,6}; a remote daemon only over
// https (its certificate is checked). Anything else is judged directly.

// procNetRoot is where the tcp tables are read (tests point it elsewhere).
var procNetRoot = "/proc"

// trustDaemon returns nil when the daemon at rawURL may be trusted.
func trustDaemon(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
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
		return fmt.Errorf("%s is not on this node and not https: who answers cannot be verified", rawURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: scheme %q", rawURL, u.Scheme)
	}
	if portStr == "" {
		portStr = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("%s: port %q", rawURL, portStr)
	}
	var socks []listenSock
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := readlimit.File(ctx, "/proc/net/"+name, filepath.Join(procNetRoot, "net", name), 64<<20)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("cannot verify who listens on port %d: %w", port, err)
		}
		socks = append(socks, parseListeners(data)...)
	}
	me := uint32(os.Geteuid())
	found := 0
	for _, s := range socks {
		if s.port != port || !(s.ip.IsUnspecified() || containsIP(ips, s.ip)) {
			continue
		}
		found++
		if s.uid != 0 && s.uid != me && lookupUser(ctx, s.uid) != daemonUser {
			return fmt.Errorf("the socket listening on %s:%d belongs to uid %d, not root or %s: not gpuprobe's daemon", s.ip, port, s.uid, daemonUser)
		}
	}
	if found == 0 {
		return fmt.Errorf("no listening socket on port %d in /proc/net/tcp{,6}", port)
	}
	return nil
}

// daemonUser is the shipped unit's (dynamic) user.
const daemonUser = "gpuprobe"

// lookupUser names uid through NSS under a deadline (LDAP may hang).
var lookupUser = func(ctx context.Context, uid uint32) string {
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

type listenSock struct {
	ip   net.IP
	port int
	uid  uint32
}

// parseListeners reads the LISTEN (state 0A) rows of /proc/net/tcp or tcp6:
//
//	sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
//	 0: 0100007F:28FF 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39963 ...
//
// Addresses are hex, each 32-bit word in host (little-endian) byte order.
func parseListeners(data []byte) []listenSock {
	var out []listenSock
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), 4096)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[3] != "0A" {
			continue
		}
		addr, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		raw, err := hex.DecodeString(addr)
		if err != nil || (len(raw) != 4 && len(raw) != 16) {
			continue
		}
		for i := 0; i+4 <= len(raw); i += 4 {
			raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
		}
		port, err1 := strconv.ParseUint(portHex, 16, 16)
		uid, err2 := strconv.ParseUint(f[7], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, listenSock{ip: net.IP(raw), port: int(port), uid: uint32(uid)})
	}
	return out
}
