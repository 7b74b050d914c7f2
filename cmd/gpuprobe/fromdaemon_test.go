package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeDaemon serves a /report that passes gpu.driver, as an unprivileged
// user's impostor on the daemon's port would.
func fakeDaemon(t *testing.T, gpus string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"schema_version":1,"host":"impostor","simulated":false,"status":"pass","collected_at":%q,
			"driver_version":"550.54.15","gpus":%s,"counts":{"pass":1},
			"checks":[{"id":"gpu.driver","status":"pass","summary":"all good","devices":[]}]}`, time.Now().UTC().Format(time.RFC3339), gpus)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func procNetWithOwner(t *testing.T, addr string, uid int) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	ip := net.ParseIP(host).To4()
	dir := filepath.Join(t.TempDir(), "net")
	os.MkdirAll(dir, 0o755)
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		fmt.Sprintf("   0: %02X%02X%02X%02X:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000  %d        0 39963 1 0000000000000000 100 0 0 10 0\n", ip[3], ip[2], ip[1], ip[0], p, uid)
	os.WriteFile(filepath.Join(dir, "tcp"), []byte(tcp), 0o644)
	old := daemonTrust
	daemonTrust.ProcRoot = filepath.Dir(dir)
	t.Cleanup(func() { daemonTrust = old })
}

// The bug: check --from-daemon trusted whatever listened on the port; an
// unprivileged user's all-pass report made the root health check resume a
// node drained for gpu.driver.
func TestFromDaemonRefusesUnprivilegedListener(t *testing.T) {
	srv := fakeDaemon(t, "8")
	procNetWithOwner(t, srv.Listener.Addr().String(), 1000)
	code, out, errs := runCLI(t, "check", "--from-daemon", srv.URL, "--checks", "gpu.driver", "--format", "json", "--log.level", "info")
	if !strings.Contains(errs, "belongs to uid 1000, not root or gpuprobe") || decode(t, out).Host == "impostor" {
		t.Fatalf("an unprivileged listener's report was used: exit %d\n%s", code, errs)
	}
	if code != 1 { // judged directly: no driver on this machine
		t.Errorf("exit %d, want the direct run's 1", code)
	}
	// The same report from a root-owned listener (socket activation) or the
	// unit's dynamic user "gpuprobe" is used.
	old := daemonTrust
	defer func() { daemonTrust = old }()
	daemonTrust.LookupUser = func(_ context.Context, uid uint32) string { return map[uint32]string{61234: "gpuprobe"}[uid] }
	for _, uid := range []int{0, 61234} {
		procNetWithOwner(t, srv.Listener.Addr().String(), uid)
		code, out, errs = runCLI(t, "check", "--from-daemon", srv.URL, "--checks", "gpu.driver", "--format", "json", "--log.level", "info")
		if code != 0 || decode(t, out).Host != "impostor" {
			t.Fatalf("daemon listening as uid %d not used: exit %d\n%s", uid, code, errs)
		}
	}
}

// The bug: "gpus": -1 panicked the health check (makeslice), 50000000 ran
// it out of memory.
func TestFromDaemonBoundsTheReport(t *testing.T) {
	for _, gpus := range []string{"-1", "50000000", `"8"`} {
		srv := fakeDaemon(t, gpus)
		code, out, errs := runCLI(t, "check", "--from-daemon", srv.URL, "--checks", "gpu.driver", "--format", "json", "--log.level", "info")
		if !strings.Contains(errs, "judging directly") || decode(t, out).Host == "impostor" {
			t.Errorf("gpus %s: the report was used: exit %d\n%s", gpus, code, errs)
		}
	}
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"schema_version":1,"x":"`))
		chunk := []byte(strings.Repeat("a", 1<<20))
		for i := 0; i < 64; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer big.Close()
	_, _, errs := runCLI(t, "check", "--from-daemon", big.URL, "--checks", "gpu.driver", "--log.level", "info")
	if !strings.Contains(errs, "more than 4 MiB") {
		t.Errorf("a 64 MiB report was not refused by size: %s", errs)
	}
}
