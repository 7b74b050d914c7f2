package daemontrust

import (
	"context"
	"errors"
	"fmt"
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
