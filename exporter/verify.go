package exporter

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/internal/safefile"
	"github.com/gpuprobe/gpuprobe/state"
)

// verify's metrics: a file of their own (verify --textfile), so the daemon's
// and check's textfiles stay as they are, and node_exporter shows the last
// verify's figures with its time (alert on its age).
var (
	dVerifyLast     = desc("verify_last_run_timestamp_seconds", "Unix time the last gpuprobe verify started.")
	dVerifyDuration = desc("verify_duration_seconds", "How long the last verify took.")
	dVerifyHealthy  = desc("verify_healthy", "1 when no verify check failed or errored in the last verify (warnings count as healthy).")
	dVerifyInfo     = desc("verify_info", "The last verify's tier, source (measured, or the tool a --from file came from) and driver (always 1).", "tier", "source", "driver")
	dVerifyStatus   = desc("verify_check_status", "Verify check verdict: 0 pass, 1 warn, 2 fail, 3 error, -1 skip.", "check")
	dVerifyBW       = desc("verify_bandwidth_gbps", "Measured copy bandwidth in GB/s (1e9 bytes/s): kind h2d|d2h|d2d (counted once)|peer; peer is the destination GPU of a peer copy, else empty.", "kind", "gpu", "peer")
	dVerifyTFLOPS   = desc("verify_compute_tflops", "FP32 FMA rate under verify's compute load.", "gpu")
	dVerifyMemTest  = desc("verify_memtest_mismatches", "32-bit words the memory pattern test read back wrong.", "gpu")
	dVerifyError    = desc("verify_measurement_error", "1 for a measurement that failed (its error is in the report).", "kind", "gpu", "peer")
	dVerifyThrottle = desc("verify_load_clock_event_reasons", "OR of the clock event reasons NVML showed during the compute load (nvmlClocksEventReason bits).", "gpu")
)

type verifyCollector struct {
	v       *state.Verify
	results []check.Result
}

func (verifyCollector) Describe(chan<- *prometheus.Desc) {}

func (c verifyCollector) Collect(ch chan<- prometheus.Metric) {
	e := emitter{ch}
	v := c.v
	e.gauge(dVerifyLast, float64(v.Started.UnixNano())/1e9)
	e.gauge(dVerifyDuration, v.Took.Seconds())
	healthy := true
	for _, r := range c.results {
		e.gauge(dVerifyStatus, statusValue(r.Status), r.ID)
		healthy = healthy && r.Status != check.Fail && r.Status != check.Error
	}
	e.gauge(dVerifyHealthy, b2f(healthy))
	e.gauge(dVerifyInfo, 1, v.Tier, v.Source, v.Driver)
	for _, m := range v.Measurements {
		gpu, peer := strconv.Itoa(m.GPU), ""
		if m.Peer >= 0 {
			peer = strconv.Itoa(m.Peer)
		}
		if m.Error != "" {
			e.gauge(dVerifyError, 1, m.Kind, gpu, peer)
			continue
		}
		switch m.Kind {
		case state.MeasureH2D, state.MeasureD2H, state.MeasureD2D, state.MeasurePeer:
			e.gauge(dVerifyBW, m.Value, m.Kind, gpu, peer)
		case state.MeasureCompute:
			e.gauge(dVerifyTFLOPS, m.Value, gpu)
			if m.Load != nil {
				e.gauge(dVerifyThrottle, float64(m.Load.ThrottleReasons), gpu)
			}
		case state.MeasureMemTest:
			e.gauge(dVerifyMemTest, float64(m.Mismatches), gpu)
		}
	}
}

// RenderVerify renders verify's metrics in the text exposition format.
// A --from file can repeat a figure (nccl-tests prints a size twice): the
// first of each series is kept, as a scrape must not hold duplicates.
func RenderVerify(v *state.Verify, results []check.Result) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("no verify run to render")
	}
	reg := prometheus.NewPedanticRegistry()
	seen := map[string]bool{}
	dedup := verifyCollector{v: &state.Verify{}, results: results}
	*dedup.v = *v
	dedup.v.Measurements = nil
	for _, m := range v.Measurements {
		k := fmt.Sprintf("%s/%d/%d/%t", m.Kind, m.GPU, m.Peer, m.Error != "")
		if !seen[k] && (m.Kind != state.MeasureBusBW && m.Kind != state.MeasureDiag) {
			seen[k] = true
			dedup.v.Measurements = append(dedup.v.Measurements, m)
		}
	}
	if err := reg.Register(dedup); err != nil {
		return nil, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("verify metrics: %w", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// WriteVerifyTextfile writes verify's metrics for node_exporter's textfile
// collector, atomically and only over a regular file (internal/safefile).
func WriteVerifyTextfile(path string, v *state.Verify, results []check.Result) error {
	b, err := RenderVerify(v, results)
	if err != nil {
		return fmt.Errorf("textfile: %w", err)
	}
	if err := safefile.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("textfile: %w", err)
	}
	return nil
}
