package httpserve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Starvation attacks (issue 32, finding 2), scaled down from the issue's
// 2,000 idle / 2,000 concurrent / 300 slowloris clients against a cap of
// 256 to a cap of 64, loopback only. Each attack runs while a probe makes
// fresh-connection scrapes from its own address (127.0.0.1, as Prometheus
// scrapes from its own host); the attackers dial from 127.0.0.2 and up.
// None of the probe's scrapes may fail. A probe waits at most the server's
// shortest timeout (starveLimits: ReadHeaderTimeout, 20 s): a scrape that
// waits for any server timeout to free a place is a failure too. Their
// latency is logged, not bounded by a fixed figure: on a loaded machine a
// scrape that was never refused took 4.7 s at p99 and some over 5 s (the
// attackers share this process's CPU), while a starved probe is refused at
// once (a cap that sheds nobody refused 71 of 71).

const starveCap = 64

// starveBody stands in for an exposition: large enough that a client that
// does not read blocks the handler's write.
var starveBody = strings.Repeat("gpuprobe_gpu_up{gpu=\"0\"} 1\n", 1<<15) // ~900 KiB

// starveLimits are DefaultLimits with the header timeouts long enough that
// a probe slowed by a loaded machine is never mistaken for one that waited
// for a server timeout; the guard, not a timeout, must let the probe in.
var starveLimits = Limits{
	ReadHeaderTimeout: 20 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      DefaultLimits.WriteTimeout,
	IdleTimeout:       DefaultLimits.IdleTimeout,
	MaxHeaderBytes:    DefaultLimits.MaxHeaderBytes,
}

// starveGuards are the test servers' guards, by address.
var starveGuards sync.Map

func starveServer(t *testing.T, o Options) string {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			io.WriteString(w, starveBody)
			return
		}
		io.WriteString(w, "gpuprobe_up 1\n")
	})
	if o.Limits == (Limits{}) {
		o.Limits = starveLimits
	}
	srv := New(h, o)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); starveGuards.Delete(l.Addr().String()) })
	starveGuards.Store(l.Addr().String(), srv.Guard)
	return l.Addr().String()
}

// from dials addr from the loopback address src.
func from(src string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: starveLimits.ReadHeaderTimeout}
}

// probe makes fresh-connection scrapes from 127.0.0.1 every 20 ms until
// stop is closed and returns their latencies and failures. Before the next
// scrape it waits (at most 5 s) until the server has let go of the previous
// one's connection, as it has when Prometheus scrapes again 15 s or more
// later: on a loaded machine the server noticed the close late, and the
// probe's address still held a connection, so it was not a new client.
func probe(addr string, stop <-chan struct{}) (lat []time.Duration, fails []string) {
	d := from("127.0.0.1")
	var mu sync.Mutex
	var last string // the previous scrape's local address
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, a)
		if err == nil {
			mu.Lock()
			last = c.LocalAddr().String()
			mu.Unlock()
		}
		return c, err
	}
	g, _ := starveGuards.Load(addr)
	c := &http.Client{Timeout: starveLimits.ReadHeaderTimeout, Transport: &http.Transport{DisableKeepAlives: true, DialContext: dial}}
	for {
		select {
		case <-stop:
			return lat, fails
		default:
		}
		t0 := time.Now()
		resp, err := c.Get("http://" + addr + "/metrics")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		if err != nil {
			fails = append(fails, err.Error())
		} else {
			lat = append(lat, time.Since(t0))
		}
		mu.Lock()
		prev := last
		mu.Unlock()
		for end := time.Now().Add(5 * time.Second); g != nil && tracks(g.(*Guard), prev) && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tracks says whether g still counts a connection from remote.
func tracks(g *Guard, remote string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.open {
		if a := c.RemoteAddr(); a != nil && a.String() == remote {
			return true
		}
	}
	return false
}

func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)*99)/100]
}

// underAttack measures a baseline p99, starts attack (which must return
// once ctx is done), probes for d, and checks the probe's scrapes.
func underAttack(t *testing.T, addr string, d time.Duration, attack func(ctx context.Context)) {
	t.Helper()
	stop := make(chan struct{})
	time.AfterFunc(500*time.Millisecond, func() { close(stop) })
	base, bfails := probe(addr, stop)
	if len(bfails) > 0 || len(base) == 0 {
		t.Fatalf("baseline: %d ok, failures %q", len(base), bfails)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); attack(ctx) }()
	time.Sleep(500 * time.Millisecond) // let the attack fill the server
	stop = make(chan struct{})
	time.AfterFunc(d, func() { close(stop) })
	lat, fails := probe(addr, stop)
	cancel()
	wg.Wait()
	// A starved probe is refused, or waits for a server timeout
	// (ReadHeaderTimeout 20 s, IdleTimeout 2 min), and so fails. Its latency
	// is not bounded: the attackers share this process's CPU, and a scrape
	// that was never refused took 1.33 s at p99 beside two CPU hogs under
	// -race (baseline 19 ms) and 4.7 s beside four and two other tests.
	gs := GuardStats{}
	if g, ok := starveGuards.Load(addr); ok {
		gs = g.(*Guard).Stats()
	}
	t.Logf("probe: baseline p99 %v (%d scrapes); under attack %d ok, %d failed, p99 %v; guard %+v",
		p99(base), len(base), len(lat), len(fails), p99(lat), gs)
	if len(fails) > 0 {
		t.Errorf("%d of %d probe scrapes failed under attack, first: %s", len(fails), len(fails)+len(lat), fails[0])
	}
	if len(lat) == 0 {
		t.Fatal("no probe scrape succeeded under attack")
	}
}

// attackers runs n copies of one attacker loop, spread over the loopback
// addresses 127.0.0.2 .. 127.0.0.(1+srcs), until ctx is done.
func attackers(ctx context.Context, n, srcs int, one func(ctx context.Context, d *net.Dialer)) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			one(ctx, from(fmt.Sprintf("127.0.0.%d", 2+i%srcs)))
		}(i)
	}
	wg.Wait()
}

// pause waits d or until ctx is done, and says whether to go on.
func pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// idleConn opens a connection, makes one request on it and leaves it idle;
// when the server closes it, it opens another (the issue's client "can
// simply reconnect").
func idleConn(ctx context.Context, d *net.Dialer, addr string) {
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			if !pause(ctx, 50*time.Millisecond) {
				return
			}
			continue
		}
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, nil); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// Idle until the server closes it or the test ends.
			go func() { <-ctx.Done(); c.Close() }()
			io.Copy(io.Discard, br)
		}
		c.Close()
		if !pause(ctx, 20*time.Millisecond) {
			return
		}
	}
}

// TestStarvIdleKeepAlive: 64 idle keep-alive connections from one client
// against a cap of 64 (the issue: 256 against 256, 0 of 177 new scrapes
// got through in 35 s).
func TestStarvIdleKeepAlive(t *testing.T) {
	addr := starveServer(t, Options{MaxInFlight: 40, MaxConns: starveCap})
	underAttack(t, addr, 2*time.Second, func(ctx context.Context) {
		attackers(ctx, starveCap, 1, func(ctx context.Context, d *net.Dialer) { idleConn(ctx, d, addr) })
	})
}

// TestStarvIdleKeepAliveOneAddress: behind a proxy every client has the
// proxy's address, so the per-client limit cannot tell the attacker from
// Prometheus; shedding the oldest idle connection still admits the probe.
func TestStarvIdleKeepAliveOneAddress(t *testing.T) {
	addr := starveServer(t, Options{MaxInFlight: 40, MaxConns: starveCap, MaxPerClient: -1})
	underAttack(t, addr, 2*time.Second, func(ctx context.Context) {
		// The attacker has the probe's address here.
		attackers(ctx, starveCap, 1, func(ctx context.Context, _ *net.Dialer) { idleConn(ctx, from("127.0.0.1"), addr) })
	})
}

// TestStarvConcurrentSlowClients: 256 concurrent clients from 8 addresses
// (the issue: 2,000 concurrent scrapers), each asking for a large
// exposition and reading it slowly (1 KiB every 100 ms, holding the
// request in flight), reconnecting when closed.
func TestStarvConcurrentSlowClients(t *testing.T) {
	addr := starveServer(t, Options{MaxInFlight: 40, MaxConns: starveCap})
	underAttack(t, addr, 2*time.Second, func(ctx context.Context) {
		attackers(ctx, 4*starveCap, 8, func(ctx context.Context, d *net.Dialer) {
			d.Control = smallReceiveBuffer
			buf := make([]byte, 1024)
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					if !pause(ctx, 100*time.Millisecond) {
						return
					}
					continue
				}
				go func() { <-ctx.Done(); c.Close() }()
				fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
				for {
					if _, err := c.Read(buf); err != nil || !pause(ctx, 100*time.Millisecond) {
						break
					}
				}
				c.Close()
				if !pause(ctx, 100*time.Millisecond) {
					return
				}
			}
		})
	})
}

// smallReceiveBuffer keeps a slow reader's socket from taking the whole
// response into the kernel, so the server's write blocks as it would
// across a network.
func smallReceiveBuffer(_, _ string, rc syscall.RawConn) error {
	var err error
	rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	return err
}

// TestStarvSlowloris: 64 clients from 8 addresses send their request
// headers a byte at a time and reconnect when closed (the issue: 300
// reconnecting clients, 78 of 149 probe scrapes failed).
func TestStarvSlowloris(t *testing.T) {
	addr := starveServer(t, Options{MaxInFlight: 40, MaxConns: starveCap})
	req := "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Padding: " + strings.Repeat("a", 200) + "\r\n\r\n"
	underAttack(t, addr, 2*time.Second, func(ctx context.Context) {
		attackers(ctx, starveCap, 8, func(ctx context.Context, d *net.Dialer) {
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					if !pause(ctx, 100*time.Millisecond) {
						return
					}
					continue
				}
				for i := 0; i < len(req); i++ {
					if _, err := c.Write([]byte{req[i]}); err != nil || !pause(ctx, 100*time.Millisecond) {
						break
					}
				}
				c.Close()
				if !pause(ctx, 50*time.Millisecond) {
					return
				}
			}
		})
	})
}
