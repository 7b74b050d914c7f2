package daemontrust

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// procNet writes a /proc/net/tcp with one listener on 127.0.0.1:port owned
// by uid (no listener when uid < 0) and returns its root.
func procNet(t *testing.T, port, uid int) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "net")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	if uid >= 0 {
		tcp += fmt.Sprintf("   0: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000  %d        0 39963 1 0000000000000000 100 0 0 10 0\n", port, uid)
	}
	if err := os.WriteFile(filepath.Join(dir, "tcp"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestVerifyLoopbackOwners(t *testing.T) {
	names := func(_ context.Context, uid uint32) string {
		return map[uint32]string{61234: "gpuprobe", 54321: "mallory"}[uid]
	}
	for _, c := range []struct {
		uid  int
		want error // nil: trusted
	}{
		{0, nil},
		{61234, nil},
		{54321, ErrUntrusted},
		{-1, ErrNotListening},
	} {
		v := Verifier{ProcRoot: procNet(t, 10495, c.uid), LookupUser: names}
		err := v.Verify(t.Context(), "http://127.0.0.1:10495")
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("uid %d: got %v, want %v", c.uid, err, c.want)
		}
	}
}

// The bug: with no daemon running, --from-daemon local said the daemon
// "cannot be trusted". Nothing listening is its own answer, never confused
// with a listener of the wrong owner.
func TestNotListeningIsNotUntrusted(t *testing.T) {
	err := Verifier{ProcRoot: procNet(t, 10495, -1)}.Verify(t.Context(), "http://127.0.0.1:10495")
	if !errors.Is(err, ErrNotListening) || errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "no daemon is running") {
		t.Fatalf("nothing listening: %v", err)
	}
	err = Verifier{ProcRoot: procNet(t, 10495, 54321), LookupUser: func(context.Context, uint32) string { return "" }}.Verify(t.Context(), "http://localhost:10495")
	if errors.Is(err, ErrNotListening) || !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "belongs to uid 54321, not root or gpuprobe") {
		t.Fatalf("a user's listener: %v", err)
	}
}

func TestRemoteHTTPNotTrusted(t *testing.T) {
	if err := (Verifier{}).Verify(t.Context(), "http://10.1.2.3:10495"); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "cannot be verified") {
		t.Fatalf("got %v", err)
	}
	if err := (Verifier{}).Verify(t.Context(), "https://node1.example:10495"); err != nil {
		t.Fatalf("https: %v", err)
	}
}

func TestParseListeners(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:4AA7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39963 2 00000000b5ed7527 100 0 0 10 0
   2: 0100007F:9E65 0100007F:CE38 06 00000000:00000000 03:00000CCF 00000000     0        0 0 3 00000000234b802e
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:28FF 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:28FF 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12346 1 0000000000000000 100 0 0 10 0
`
	got := parseListeners([]byte(tcp))
	if len(got) != 1 || !got[0].ip.Equal(net.IPv4(127, 0, 0, 1)) || got[0].port != 0x4AA7 || got[0].uid != 0 {
		t.Errorf("tcp: %+v", got)
	}
	got = parseListeners([]byte(tcp6))
	if len(got) != 2 || !got[0].ip.IsUnspecified() || got[0].port != 10495 || got[0].uid != 1000 || !got[1].ip.Equal(net.IPv6loopback) {
		t.Errorf("tcp6: %+v", got)
	}
}

func FuzzParseListeners(f *testing.F) {
	f.Add("   0: 0100007F:4AA7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39963 2\n")
	f.Add("   0: 00000000000000000000000001000000:28FF 00000000000000000000000000000000:0000 0A 0:0 0:0 0  1000 0 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range parseListeners([]byte(s)) {
			if len(l.ip) != net.IPv4len && len(l.ip) != net.IPv6len || l.port < 0 || l.port > 65535 {
				t.Fatalf("bad listener %+v", l)
			}
		}
	})
}
