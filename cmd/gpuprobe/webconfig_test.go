package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
)

// writeTLSFiles writes a self-signed certificate and its key (PEM) into
// dir as cert.pem and key.pem, and returns the certificate's PEM.
func writeTLSFiles(t testing.TB, dir, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	os.WriteFile(filepath.Join(dir, "cert.pem"), cert, 0o600)
	os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return cert
}

// swapForFIFO replaces path with a FIFO no one writes, and lets a read
// still blocked on it (the old code) return at the end of the test.
func swapForFIFO(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// Issue 32: the snapshot holds private copies the toolkit can load, in a
// 0700 directory; swapping the operator's files for FIFOs afterwards does
// not reach it; SIGHUP's reload of a FIFO fails and keeps the snapshot, a
// reload of real files takes them; Remove leaves nothing.
func TestWebConfigSnapshot(t *testing.T) {
	src, base := t.TempDir(), t.TempDir()
	writeTLSFiles(t, src, "one")
	cfg := filepath.Join(src, "web.yml")
	os.WriteFile(cfg, []byte("# operator's config\ntls_server_config:\n  cert_file: cert.pem\n  key_file: "+filepath.Join(src, "key.pem")+"\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: cert.pem\nbasic_auth_users:\n  alice: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"), 0o600)
	snap, err := newWebSnapshot(context.Background(), cfg, base)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(snap.Dir())
	if err != nil || fi.Mode().Perm() != 0o700 || filepath.Dir(snap.Dir()) != base {
		t.Fatalf("snapshot dir %s: %v %v", snap.Dir(), fi.Mode(), err)
	}
	out, _ := os.ReadFile(snap.Path())
	if strings.Contains(string(out), src) || strings.Count(string(out), snap.Dir()) != 3 || !strings.Contains(string(out), "alice") {
		t.Errorf("snapshot config does not name only its own copies:\n%s", out)
	}
	if err := web.Validate(snap.Path()); err != nil {
		t.Fatalf("the toolkit refuses the snapshot: %v\n%s", err, out)
	}
	swapForFIFO(t, filepath.Join(src, "cert.pem"))
	if err := web.Validate(snap.Path()); err != nil {
		t.Errorf("after the original cert became a FIFO: %v", err)
	}
	if err := snap.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "not a regular file (a FIFO)") {
		t.Errorf("reload of a FIFO: %v", err)
	}
	if err := web.Validate(snap.Path()); err != nil {
		t.Errorf("a failed reload broke the snapshot: %v", err)
	}
	os.Remove(filepath.Join(src, "cert.pem"))
	for i := 0; i < 3; i++ {
		writeTLSFiles(t, src, "renewed")
		if err := snap.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := web.Validate(snap.Path()); err != nil {
		t.Errorf("after reloads: %v", err)
	}
	// This generation's three copies, the previous one's, and the config.
	if ents, _ := os.ReadDir(snap.Dir()); len(ents) != 7 {
		t.Errorf("after 3 reloads the snapshot holds %d entries, want 7", len(ents))
	}
	if err := snap.Remove(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Errorf("Remove left %v", ents)
	}
}

// Issue 32: the toolkit re-read cert_file and key_file on every TLS
// handshake with a plain read, so a cert swapped for a FIFO after start-up
// hung every new connection. The daemon serves from its snapshot: new
// handshakes still succeed, a SIGHUP that cannot re-read them keeps the
// snapshot; the snapshot directory is 0700 and gone once the daemon exits.
func TestServeTLSSurvivesCertSwap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary (run without -short)")
	}
	bin := filepath.Join(t.TempDir(), "gpuprobe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	src, rt := t.TempDir(), t.TempDir()
	certPEM := writeTLSFiles(t, src, "gpuprobe")
	cfg := filepath.Join(src, "web.yml")
	os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"), 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--simulate", "dgx-h100", "--web.listen-address", addr, "--web.config.file", cfg)
	cmd.Env = []string{"RUNTIME_DIRECTORY=" + rt, "PATH=/usr/bin:/bin"}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-done
	}()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	handshake := func() error {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err == nil {
			c.Close()
		}
		return err
	}
	var herr error
	for i := 0; i < 300; i++ {
		if herr = handshake(); herr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if herr != nil {
		t.Fatalf("no TLS handshake before the swap: %v\n%s", herr, stderr.String())
	}
	ents, _ := os.ReadDir(rt)
	if len(ents) != 1 {
		t.Fatalf("RUNTIME_DIRECTORY holds %v, want the one snapshot directory", ents)
	}
	snapDir := filepath.Join(rt, ents[0].Name())
	if fi, err := os.Lstat(snapDir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("snapshot directory %s: %v %v, want a 0700 directory", snapDir, fi.Mode(), err)
	}
	swapForFIFO(t, filepath.Join(src, "cert.pem"))
	os.Remove(filepath.Join(src, "key.pem"))
	os.Symlink("/dev/zero", filepath.Join(src, "key.pem"))
	// A reload (SIGHUP) now reads the FIFO bounded, fails, and keeps the
	// snapshot: the daemon neither dies (Go's default for SIGHUP) nor hangs.
	// The reload runs in the daemon's own time, once the signal reaches it:
	// its log is waited for (bounded), not looked for once after three
	// handshakes that a loaded machine can let finish first, and the
	// handshakes come after the failed reload, from the kept snapshot.
	cmd.Process.Signal(syscall.SIGHUP)
	for end := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "web config not reloaded"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no log of the failed reload 30s after SIGHUP:\n%s", stderr.String())
		}
	}
	for i := 0; i < 3; i++ {
		errc := make(chan error, 1)
		go func() { errc <- handshake() }()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("handshake %d after the cert became a FIFO: %v", i, err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("handshake %d after the cert became a FIFO: still waiting after 15s", i)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30s after SIGTERM\n%s", stderr.String())
	}
	if ents, _ := os.ReadDir(rt); len(ents) != 0 {
		t.Errorf("after exit RUNTIME_DIRECTORY still holds %v", ents)
	}
}

// lockedBuffer is a child's stderr, read while the child still writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
