package httpserve

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestConnectionCap(t *testing.T) {
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		Options{MaxInFlight: 40, MaxConns: 50, MaxPerClient: -1, Reserved: -1, Limits: DefaultLimits})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 80; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	time.Sleep(200 * time.Millisecond)
	closed := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed != 30 {
		t.Errorf("%d of 80 connections closed with a cap of 50, want 30", closed)
	}
}

func TestLimitInFlight(t *testing.T) {
	block := make(chan struct{})
	h := LimitInFlight(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }), 2)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	defer srv.Close()
	url := "http://" + l.Addr().String() + "/"
	for i := 0; i < 2; i++ {
		go http.Get(url)
	}
	time.Sleep(100 * time.Millisecond)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	close(block)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third request in flight with a cap of 2: %d", resp.StatusCode)
	}
}

// The zero Limits mean the defaults: a server built without them must not
// run without timeouts.
func TestZeroLimitsAreTheDefaults(t *testing.T) {
	srv := New(http.NotFoundHandler(), Options{})
	if srv.ReadHeaderTimeout != DefaultLimits.ReadHeaderTimeout || srv.IdleTimeout != DefaultLimits.IdleTimeout || srv.MaxHeaderBytes != DefaultLimits.MaxHeaderBytes {
		t.Errorf("zero limits: %+v", srv)
	}
}
