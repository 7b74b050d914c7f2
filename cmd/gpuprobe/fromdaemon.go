package main

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/daemonapi"
	"github.com/gpuprobe/gpuprobe/daemontrust"
	"github.com/gpuprobe/gpuprobe/state"
)

// daemonTrust is where the daemon-trust policy reads this machine's
// listeners (the zero value: /proc and NSS); tests point it at a fake
// /proc/net/tcp.
var daemonTrust daemontrust.Verifier

// daemonClient is the one client of the daemon ("local": this node's) that
// check --from-daemon and job --from-daemon share.
func daemonClient(base string) *daemonapi.Client {
	cl := daemonapi.New(base)
	cl.Trust = daemonTrust
	return cl
}

// fromDaemon fetches the daemon's latest report. It returns a nil node when
// the report is unusable (no daemon, an untrusted one, stale, or missing a
// selected check), and the caller then collects directly; source says
// where a usable report came from.
func (c *cli) fromDaemon(ctx context.Context, base string, maxAge time.Duration, checks []check.Check) (n *state.Node, results []check.Result, source string) {
	cl := daemonClient(base)
	doc, err := cl.Report(ctx)
	if err == nil {
		n, results, err = daemonapi.Verdicts(doc, checks, maxAge, time.Now())
	}
	switch {
	case errors.Is(err, daemonapi.ErrNotRunning):
		c.log.Warn("judging directly: the daemon is not running", zap.String("url", cl.Base), zap.Error(err))
	case errors.Is(err, daemonapi.ErrUntrusted):
		c.log.Warn("judging directly: the daemon cannot be trusted", zap.String("url", cl.Base), zap.Error(err))
	case err != nil:
		c.log.Info("judging directly: daemon report not usable", zap.String("url", cl.Base), zap.Error(err))
	}
	if err != nil {
		return nil, nil, ""
	}
	c.log.Info("judged from the daemon's report", zap.String("url", cl.Base), zap.Time("collected_at", doc.CollectedAt))
	return n, results, cl.Source(doc)
}
