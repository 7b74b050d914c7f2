// Package ncclras asks NCCL's RAS subsystem (NCCL 2.24+) for a running
// job's status and records what it says as facts (state.HangRAS). It never
// judges: check/perfhang.go does.
//
// The protocol is NCCL's client text protocol, as src/ras/client.cc (the
// ncclras binary) speaks it and src/ras/client_support.cc answers it
// (NCCL 2.30.7, github.com/NVIDIA/nccl):
//
//	-> CLIENT PROTOCOL 2\n      <- SERVER PROTOCOL 2\n
//	-> TIMEOUT 5\n              <- OK\n
//	-> STATUS\n                 <- the text report, then the server closes
//
// Whatever listens on the loopback port may be any user's process, so the
// client trusts nothing of it: it connects only to loopback addresses, one
// deadline covers the whole exchange (a trickle cannot extend it), the
// report is read to at most MaxReport bytes, and every string kept is
// bounded and printed escaped by the judge.
package ncclras

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// DefaultAddr is where RAS listens unless NCCL_RAS_ADDR says otherwise
// (ras_internal.h NCCL_RAS_CLIENT_PORT; the RAS docs: "localhost, port
// 28028").
const DefaultAddr = "localhost:28028"

// ClientProtocol is NCCL_RAS_CLIENT_PROTOCOL (ras_internal.h).
const ClientProtocol = 2

// MaxReport bounds the report read: a healthy 32-rank job's is under
// 1 KiB, and RAS lists only outlier ranks, so 1 MiB is thousands of
// listed ranks.
const MaxReport = 1 << 20

// maxLine bounds a handshake answer (the ncclras client reads it into a
// 1 KiB buffer).
const maxLine = 1024

// NotAvailable is what a refused connection means.
const NotAvailable = "RAS not available (NCCL < 2.24, or NCCL_RAS_ENABLE=0)"

// Dialer opens a connection to a loopback host:port; nil is net.Dialer's.
// Simulation hands in one that serves a canned report.
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

// Options say how to ask.
type Options struct {
	// Timeout bounds the whole exchange, connect to last byte (0: 15 s).
	Timeout time.Duration
	// RASTimeout is sent as "TIMEOUT n": how long RAS itself waits for
	// the job's other processes (0: RAS's default, 5 s).
	RASTimeout time.Duration
	// Dial connects; nil dials TCP.
	Dial Dialer
	// LocalAddrs are this node's own addresses: a process or rank RAS names
	// on one of them is marked Local.
	LocalAddrs []string
	// Verbose sends "VERBOSE STATUS" (RAS lists outliers up to half of a
	// group instead of a quarter and at most 10).
	Verbose bool
}

// ValidateAddr checks an NCCL_RAS_ADDR value (the job's text: untrusted)
// and returns the address to dial: host:port with a loopback host
// ("localhost", 127.0.0.0/8, ::1) and a port 1-65535. "localhost" is dialled
// as 127.0.0.1, never resolved.
func ValidateAddr(v string) (string, error) {
	if len(v) > 64 {
		return "", fmt.Errorf("longer than 64 bytes")
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("not host:port")
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 || strings.Trim(port, "0123456789") != "" {
		return "", fmt.Errorf("port %q is not 1-65535", port)
	}
	if strings.EqualFold(host, "localhost") || host == "" {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("host %q is not an IP address or localhost", host)
	}
	if !ip.Unmap().IsLoopback() {
		return "", fmt.Errorf("host %s is not a loopback address: RAS is asked only on this node", host)
	}
	return net.JoinHostPort(ip.Unmap().String(), port), nil
}

// Query asks the RAS at addr (already validated) for the job's status and
// returns what it said. A refused connection is NotAvailable; any other
// failure is recorded with whatever came back before it.
func Query(ctx context.Context, addr string, o Options) *state.HangRAS {
	start := time.Now()
	r := &state.HangRAS{Addr: addr}
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := o.Dial
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	conn, err := dial(ctx, addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			r.Error = NotAvailable + ": nothing listens on " + addr
		} else {
			r.Error = "connecting to " + addr + ": " + err.Error()
		}
		return r
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	// A cancelled run closes the connection under a blocked read.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	// Two handshake answers of at most maxLine each, then the report.
	br := bufio.NewReaderSize(io.LimitReader(conn, 2*(maxLine+1)+MaxReport+1), 4096)
	ask := func(cmd string) (string, error) {
		if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
			return "", err
		}
		return readLine(br)
	}
	line, err := ask("CLIENT PROTOCOL " + strconv.Itoa(ClientProtocol))
	if err != nil {
		r.Error = "handshake: " + explain(err, timeout).Error()
		return r
	}
	v, ok := cutPrefixFold(line, "SERVER PROTOCOL ")
	if !ok {
		r.Error = fmt.Sprintf("handshake: the port answered %q, not SERVER PROTOCOL: not NCCL's RAS", safetext.Clip(line, 80))
		return r
	}
	r.Answered = true
	r.Protocol, _ = strconv.Atoi(strings.TrimSpace(v))
	if o.RASTimeout > 0 {
		secs := int((o.RASTimeout + time.Second - 1) / time.Second)
		line, err := ask("TIMEOUT " + strconv.Itoa(secs))
		if err != nil {
			r.Error = "TIMEOUT: " + explain(err, timeout).Error()
			return r
		}
		if !strings.EqualFold(strings.TrimSpace(line), "OK") {
			r.Error = fmt.Sprintf("TIMEOUT: RAS answered %q", safetext.Clip(line, 80))
			return r
		}
	}
	cmd := "STATUS"
	if o.Verbose {
		cmd = "VERBOSE STATUS"
	}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		r.Error = cmd + ": " + explain(err, timeout).Error()
		return r
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(io.LimitReader(br, MaxReport+1))
	text := buf.Bytes()
	if len(text) > MaxReport {
		text, r.Truncated = text[:MaxReport], true
		r.Error = fmt.Sprintf("the report is longer than %d bytes: read the first %d", MaxReport, MaxReport)
	} else if err != nil {
		r.Error = cmd + ": " + explain(err, timeout).Error() + fmt.Sprintf(" after %d bytes (parsed what came)", len(text))
	}
	r.Bytes = len(text)
	Parse(text, r)
	markLocal(r, o.LocalAddrs)
	return r
}

func explain(err error, timeout time.Duration) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("no complete answer within %s", timeout)
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("the port closed the connection")
	}
	return err
}

// readLine reads one line of at most maxLine bytes.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > maxLine {
			return "", fmt.Errorf("an answer line longer than %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return "", false
}

// markLocal marks the processes and ranks RAS names on this node's own
// addresses.
func markLocal(r *state.HangRAS, local []string) {
	if len(local) == 0 {
		return
	}
	is := func(node string) bool {
		for _, a := range local {
			if node != "" && node == a {
				return true
			}
		}
		return false
	}
	for i := range r.Unresponsive {
		r.Unresponsive[i].Local = is(r.Unresponsive[i].Node)
	}
	for i := range r.Dead {
		r.Dead[i].Local = is(r.Dead[i].Node)
	}
	for c := range r.Comms {
		cm := &r.Comms[c]
		for i := range cm.Missing {
			cm.Missing[i].Local = is(cm.Missing[i].Node)
		}
		for s := range cm.Splits {
			for g := range cm.Splits[s].Groups {
				l := cm.Splits[s].Groups[g].Listed
				for i := range l {
					l[i].Local = is(l[i].Node)
				}
			}
		}
	}
}

// LocalAddrs lists this machine's interface addresses: RAS names a
// process's node by the address of its RAS socket (ncclSocketToHost).
func LocalAddrs() []string {
	var out []string
	if as, err := net.InterfaceAddrs(); err == nil {
		for _, a := range as {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out = append(out, p.Addr().Unmap().String())
			}
		}
	}
	return out
}
