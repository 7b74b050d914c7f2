package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// The severity label is gpu.xid's, under the configuration the latest
// snapshot was judged with: xid.ignore included (the label said "warning"
// for an ignored code while the report said nothing), xid.critical too.
func TestXIDSeverityLabelFollowsTheConfig(t *testing.T) {
	g := GPU{"0", "GPU-a", "0000:10:00.0"}
	for _, tc := range []struct {
		name   string
		cfg    func(c *check.Config) // nil: no snapshot yet
		daemon check.XIDConfig       // XIDCounter.Config
		code   int
		want   string
	}{
		{name: "no snapshot: the catalogue", code: 13, want: "warning"},
		{name: "no snapshot: the daemon's xid.critical stands in", daemon: check.XIDConfig{Critical: []int{13}}, code: 13, want: "critical"},
		{name: "no snapshot: the daemon's xid.ignore stands in", daemon: check.XIDConfig{Ignore: []int{79}}, code: 79, want: "ignored"},
		{name: "default config", cfg: func(*check.Config) {}, code: 13, want: "warning"},
		{name: "default config, critical code", cfg: func(*check.Config) {}, code: 79, want: "critical"},
		{name: "NVIDIA's IGNORE row", cfg: func(*check.Config) {}, code: 63, want: "ignored"},
		{name: "xid.ignore", cfg: func(c *check.Config) { c.XID.Ignore = []int{13} }, code: 13, want: "ignored"},
		{name: "xid.ignore beats critical", cfg: func(c *check.Config) { c.XID.Ignore = []int{79} }, code: 79, want: "ignored"},
		{name: "xid.critical", cfg: func(c *check.Config) { c.XID.Critical = []int{13} }, code: 13, want: "critical"},
		{name: "xid.critical replaces the set", cfg: func(c *check.Config) { c.XID.Critical = []int{13} }, code: 48, want: "warning"},
		// The snapshot's configuration, not the counter's start-up copy.
		{name: "snapshot config over the daemon's", daemon: check.XIDConfig{Critical: []int{13}}, cfg: func(c *check.Config) { c.XID.Ignore = []int{13} }, code: 13, want: "ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(false)
			e.XIDs.Config = tc.daemon
			e.XIDs.Add(g, tc.code, time.Unix(1, 0), 0)
			if tc.cfg != nil {
				cfg := check.DefaultConfig()
				tc.cfg(cfg)
				e.Update(&Snapshot{Node: &state.Node{}, Success: true, Config: cfg})
			}
			out, err := testutil.CollectAndFormat(e, expfmt.TypeTextPlain, "gpuprobe_gpu_xid_errors_total")
			if err != nil {
				t.Fatal(err)
			}
			if want := `severity="` + tc.want + `"`; !strings.Contains(string(out), want) {
				t.Errorf("want %s in\n%s", want, out)
			}
		})
	}
}
