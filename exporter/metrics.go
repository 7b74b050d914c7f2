package exporter

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

const ns = "gpuprobe"

var gpuLabels = []string{"gpu", "uuid", "pci_bus_id"}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(ns+"_"+name, help, labels, nil)
}

func withGPU(extra ...string) []string { return append(append([]string{}, gpuLabels...), extra...) }

var (
	dCollectSuccess  = desc("collect_success", "1 when the last collection finished within its deadline.")
	dCollectDuration = desc("collect_duration_seconds", "Duration of the last collection and judging cycle.")
	dCollectTime     = desc("collect_last_success_timestamp_seconds", "Unix time of the last successful collection.")
	dCollectStale    = desc("collect_stale", "1 when the data served is from an older collection because the last one failed.")
	dCollections     = desc("collections_total", "Collection cycles run since the daemon started.")
	dCollectFailures = desc("collect_failures_total", "Collection cycles that overran or failed.")
	dSourceUp        = desc("source_up", "1 when the collector read its source (0: absent, unreadable or timed out).", "source")
	dSourceDuration  = desc("source_duration_seconds", "Time the collector took in the last cycle.", "source")
	dSimulated       = desc("simulated", "1 when the data comes from --simulate, not real hardware.")

	dNodeHealthy     = desc("node_healthy", "1 when no node check failed or errored (warnings count as healthy) in a fresh collection; 0 while the data is stale.")
	dDrainSuppressed = desc("drain_suppressed", "1 when check --slurm-drain found the node failing but the drain circuit breaker kept it in service (docs/slurm.md); only in a --slurm-drain run's textfile.")
	dCheckStatus     = desc("check_status", "Check verdict: 0 pass, 1 warn, 2 fail, 3 error, -1 skip.", "check")

	dDriverInfo = desc("driver_info", "Driver versions (always 1).", "driver_version", "cuda_driver_version")
	dNVMLUp     = desc("nvml_up", "1 when NVML loaded and initialised.")
	dGPUCount   = desc("gpus", "GPUs NVML reports.")

	dGPUInfo        = desc("gpu_info", "GPU identity (always 1).", withGPU("name", "serial", "minor")...)
	dGPULost        = desc("gpu_lost", "1 when NVML reports the GPU lost (fallen off the bus) or unreachable.", gpuLabels...)
	dMemTotal       = desc("gpu_memory_total_bytes", "Framebuffer memory.", gpuLabels...)
	dMemUsed        = desc("gpu_memory_used_bytes", "Framebuffer memory in use (excluding driver-reserved memory on v2-capable drivers).", gpuLabels...)
	dTemp           = desc("gpu_temperature_celsius", "GPU core temperature.", gpuLabels...)
	dTempSlowdown   = desc("gpu_slowdown_temperature_celsius", "The GPU's own slowdown threshold.", gpuLabels...)
	dPower          = desc("gpu_power_watts", "Power draw.", gpuLabels...)
	dPowerLimit     = desc("gpu_power_limit_watts", "Enforced power limit.", gpuLabels...)
	dECC            = desc("gpu_ecc_errors_total", "ECC errors: type corrected|uncorrected, counter volatile (since reset) | aggregate (lifetime).", withGPU("type", "counter")...)
	dRetired        = desc("gpu_retired_pages", "Retired pages by cause (pre-Ampere GPUs).", withGPU("cause")...)
	dRetiredPending = desc("gpu_retired_pages_pending", "1 when a page retirement awaits a reset.", gpuLabels...)
	dRemapped       = desc("gpu_remapped_rows", "Remapped rows by type (correctable, uncorrectable).", withGPU("type")...)
	dRemapPending   = desc("gpu_row_remap_pending", "1 when a row remap awaits a GPU reset.", gpuLabels...)
	dRemapFailure   = desc("gpu_row_remap_failure", "1 when a row remapping ever failed (nvmlDeviceGetRemappedRows failureOccurred).", gpuLabels...)
	dClockMask      = desc("gpu_clock_event_reasons", "Bitmask of active clock-event (throttle) reasons, NVML's nvmlClocksEventReason bits.", gpuLabels...)
	dClockActive    = desc("gpu_clock_event_active", "1 for each active clock-event reason (only active reasons are exported).", withGPU("reason")...)
	dViolation      = desc("gpu_violation_seconds_total", "Cumulative time a perf policy held the GPU below its application clocks (nvmlDeviceGetViolationStatus), by policy: power, thermal, sync_boost, board_limit, low_utilization, reliability, total_app_clocks, total_base_clocks.", withGPU("policy")...)
	dPCIeGen        = desc("gpu_pcie_link_generation", "PCIe link generation, which=current|max.", withGPU("which")...)
	dPCIeWidth      = desc("gpu_pcie_link_width", "PCIe link width in lanes, which=current|max.", withGPU("which")...)
	dPCIeReplays    = desc("gpu_pcie_replays_total", "PCIe replay counter.", gpuLabels...)
	dPersistence    = desc("gpu_persistence_mode", "1 when persistence mode is on.", gpuLabels...)
	dMIG            = desc("gpu_mig_mode", "1 when MIG is enabled, which=current|pending.", withGPU("which")...)
	dProcesses      = desc("gpu_compute_processes", "Compute processes on the GPU.", gpuLabels...)
	dUtil           = desc("gpu_utilization_ratio", "Share of the driver's last sample period in which a kernel ran on the GPU (nvmlDeviceGetUtilizationRates), 0 to 1.", gpuLabels...)
	dMemUtil        = desc("gpu_memory_utilization_ratio", "Share of the driver's last sample period in which device memory was read or written, 0 to 1.", gpuLabels...)
	dJobInfo        = desc("gpu_job_info", "1 for each Slurm job with a compute process on the GPU; the job is the job_<id> of the process's cgroup, the user its owner, the container the runtime holding its first process there (empty: none seen).", "gpu", "uuid", "job_id", "user", "container")
	dLinksUp        = desc("nvlink_links_up", "NVLinks up on the GPU.", gpuLabels...)
	dLinksTotal     = desc("nvlink_links", "NVLinks the GPU reports (up or down; an unbridged PCIe card reports its links down).", gpuLabels...)
	dLinksExpected  = desc("nvlink_links_expected", "NVLinks the GPU must have up, from its platform (GPU model, DMI) or the config, as nvlink.state judges; absent where the platform is unknown. 0 on a PCIe card without NVLink up (no bridge).", gpuLabels...)
	dLinkErrors     = desc("nvlink_errors_total", "NVLink errors summed over the GPU's links, by type (crc_flit, crc_data, replay, recovery).", withGPU("type")...)
	dLinkUp         = desc("nvlink_link_up", "1 when the link is up (--collector.nvlink.per-link).", withGPU("link")...)
	dLinkErr        = desc("nvlink_link_errors_total", "NVLink errors per link and type (--collector.nvlink.per-link).", withGPU("link", "type")...)
	dFabric         = desc("gpu_fabric_registered", "1 when NVSwitch fabric registration completed with success.", gpuLabels...)
	dFabricDegraded = desc("gpu_fabric_degraded", "1 when the fabric health mask or summary reports a failure (decoded as nvml.h defines it).", gpuLabels...)
	dXIDs           = desc("gpu_xid_errors_total", "XID events seen since the daemon started, by XID code.", withGPU("xid", "severity")...)
	dXIDLast        = desc("gpu_xid_last_seen_timestamp_seconds", "Unix time of the last event of this XID.", withGPU("xid", "severity")...)
)

// statusValue is the documented encoding of gpuprobe_check_status.
func statusValue(s check.Status) float64 {
	switch s {
	case check.Pass:
		return 0
	case check.Warn:
		return 1
	case check.Fail:
		return 2
	case check.Error:
		return 3
	}
	return -1
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

type emitter struct {
	ch chan<- prometheus.Metric
}

func (e emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (e emitter) counter(d *prometheus.Desc, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

func gpuLabelValues(g *state.GPU) []string {
	return []string{strconv.Itoa(g.Index), g.UUID, g.PCIBusID}
}

// emitGPUs writes the per-GPU series of a node state.
func emitGPUs(e emitter, n *state.Node, cfg *check.Config, perLink bool) {
	nv := n.NVML
	if nv == nil {
		return
	}
	platform := cfg.PlatformFor(n)
	for i := range nv.GPUs {
		g := &nv.GPUs[i]
		l := gpuLabelValues(g)
		with := func(extra ...string) []string { return append(append([]string{}, l...), extra...) }
		minor := ""
		if g.Minor != nil {
			minor = strconv.Itoa(*g.Minor)
		}
		e.gauge(dGPUInfo, 1, with(g.Name, g.Serial, minor)...)
		e.gauge(dGPULost, b2f(g.Lost || g.Unreachable), l...)
		if m := g.Memory; m != nil {
			e.gauge(dMemTotal, float64(m.TotalBytes), l...)
			e.gauge(dMemUsed, float64(m.UsedBytes), l...)
		}
		if t := g.Thermal; t != nil {
			e.gauge(dTemp, float64(t.TemperatureC), l...)
			if t.SlowdownC != nil {
				e.gauge(dTempSlowdown, float64(*t.SlowdownC), l...)
			}
		}
		if u := g.Utilization; u != nil {
			e.gauge(dUtil, float64(u.GPUPercent)/100, l...)
			e.gauge(dMemUtil, float64(u.MemoryPercent)/100, l...)
		}
		if p := g.Power; p != nil {
			e.gauge(dPower, p.DrawWatts, l...)
			if p.LimitWatts != nil {
				e.gauge(dPowerLimit, *p.LimitWatts, l...)
			}
		}
		if ecc := g.ECC; ecc != nil {
			for _, c := range []struct {
				v              *uint64
				typ, counterOf string
			}{
				{ecc.Volatile.Corrected, "corrected", "volatile"}, {ecc.Volatile.Uncorrected, "uncorrected", "volatile"},
				{ecc.Aggregate.Corrected, "corrected", "aggregate"}, {ecc.Aggregate.Uncorrected, "uncorrected", "aggregate"},
			} {
				if c.v != nil {
					e.counter(dECC, float64(*c.v), with(c.typ, c.counterOf)...)
				}
			}
		}
		if rp := g.RetiredPages; rp != nil {
			e.gauge(dRetired, float64(rp.SingleBitECC), with("multiple_single_bit_ecc")...)
			e.gauge(dRetired, float64(rp.DoubleBitECC), with("double_bit_ecc")...)
			e.gauge(dRetiredPending, b2f(rp.Pending), l...)
		}
		if rr := g.RemappedRows; rr != nil {
			e.gauge(dRemapped, float64(rr.Correctable), with("correctable")...)
			e.gauge(dRemapped, float64(rr.Uncorrectable), with("uncorrectable")...)
			e.gauge(dRemapPending, b2f(rr.Pending), l...)
			e.gauge(dRemapFailure, b2f(rr.Failure), l...)
		}
		if ce := g.ClockEvents; ce != nil {
			e.gauge(dClockMask, float64(ce.Mask), l...)
			for _, r := range ce.Reasons {
				e.gauge(dClockActive, 1, with(r)...)
			}
		}
		for _, vt := range g.Violations {
			e.counter(dViolation, float64(vt.ViolationNs)/1e9, with(vt.Policy)...)
		}
		if p := g.PCIe; p != nil {
			e.gauge(dPCIeGen, float64(p.CurrentGen), with("current")...)
			e.gauge(dPCIeGen, float64(p.MaxGen), with("max")...)
			e.gauge(dPCIeWidth, float64(p.CurrentWidth), with("current")...)
			e.gauge(dPCIeWidth, float64(p.MaxWidth), with("max")...)
			if p.ReplayCounter != nil {
				e.counter(dPCIeReplays, float64(*p.ReplayCounter), l...)
			}
		}
		if g.PersistenceMode != nil {
			e.gauge(dPersistence, b2f(*g.PersistenceMode), l...)
		}
		if m := g.MIG; m != nil {
			e.gauge(dMIG, b2f(m.Current), with("current")...)
			e.gauge(dMIG, b2f(m.Pending), with("pending")...)
		}
		if g.ProcessesKnown {
			e.gauge(dProcesses, float64(len(g.Processes)), l...)
			e.jobs(g)
		}
		emitNVLinks(e, g, l, perLink)
		if len(g.NVLinks) > 0 && !g.Lost && !g.Unreachable && !g.Denied {
			if want, ok := check.NVLinkExpectation(g, platform, cfg); ok {
				e.gauge(dLinksExpected, float64(want), l...)
			}
		}
		if f := g.Fabric; f != nil && f.State != "not_supported" {
			e.gauge(dFabric, b2f(check.FabricRegistered(f)), l...)
			e.gauge(dFabricDegraded, b2f(check.FabricUnhealthy(f)), l...)
		}
	}
}

func emitNVLinks(e emitter, g *state.GPU, l []string, perLink bool) {
	if len(g.NVLinks) == 0 {
		return
	}
	up := 0
	sums := map[string]float64{}
	for _, link := range g.NVLinks {
		if link.Up {
			up++
		}
		counters := map[string]*uint64{"crc_flit": link.CRCFlitErrors, "crc_data": link.CRCDataErrors, "replay": link.ReplayErrors, "recovery": link.RecoveryErrors}
		for typ, v := range counters {
			if v == nil {
				continue
			}
			sums[typ] += float64(*v)
			if perLink {
				e.counter(dLinkErr, float64(*v), append(append([]string{}, l...), strconv.Itoa(link.Link), typ)...)
			}
		}
		if perLink {
			e.gauge(dLinkUp, b2f(link.Up), append(append([]string{}, l...), strconv.Itoa(link.Link))...)
		}
	}
	e.gauge(dLinksUp, float64(up), l...)
	e.gauge(dLinksTotal, float64(len(g.NVLinks)), l...)
	for _, typ := range []string{"crc_flit", "crc_data", "replay", "recovery"} {
		if v, ok := sums[typ]; ok {
			e.counter(dLinkErrors, v, append(append([]string{}, l...), typ)...)
		}
	}
}

// maxJobsPerGPU bounds gpu_job_info per GPU: MPS or time-slicing can put
// many jobs on one GPU, and the exposition has a series budget.
const maxJobsPerGPU = 16

// jobs exports one gpu_job_info per Slurm job running on the GPU.
func (e emitter) jobs(g *state.GPU) {
	seen := map[string]bool{}
	for _, p := range g.Processes {
		if p.JobID == "" || seen[p.JobID] || len(seen) == maxJobsPerGPU {
			continue
		}
		seen[p.JobID] = true
		e.gauge(dJobInfo, 1, strconv.Itoa(g.Index), g.UUID, p.JobID, p.User, p.Container)
	}
}
