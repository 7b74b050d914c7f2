package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/state"
)

// gpuFigures is one job GPU over the window, as the report prints it.
type gpuFigures struct {
	n                      int
	util, utilMin, utilMax float64
	memUtil                float64
	memUsed                uint64
	pcieRx, pcieTx         float64 // mean KB/s
	nvRx, nvTx             float64 // bytes/s over the window
	hasNV, hasPCIe         bool
	power, limit           float64
	sm, maxSM              uint32
	events                 map[string]int
}

// clockEventNames decode nvmlClocksEventReason* bits (nvml.h) for display.
var clockEventNames = []struct {
	bit  uint64
	name string
}{{0x1, "gpu_idle"}, {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"},
	{0x10, "sync_boost"}, {0x20, "sw_thermal_slowdown"}, {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"}}

func figures(g *state.JobGPU) gpuFigures {
	f := gpuFigures{utilMin: 101, events: map[string]int{}}
	var pcie int
	var firstNV, lastNV *state.GPUSample
	for i := range g.Samples {
		s := &g.Samples[i]
		if s.UtilGPUPercent != nil {
			u := float64(*s.UtilGPUPercent)
			f.n++
			f.util += u
			f.utilMin, f.utilMax = min(f.utilMin, u), max(f.utilMax, u)
			if s.UtilMemoryPercent != nil {
				f.memUtil += float64(*s.UtilMemoryPercent)
			}
		}
		if s.MemoryUsedBytes != nil {
			f.memUsed = max(f.memUsed, *s.MemoryUsedBytes)
		}
		if s.PCIeRxKBps != nil && s.PCIeTxKBps != nil {
			pcie++
			f.pcieRx += float64(*s.PCIeRxKBps)
			f.pcieTx += float64(*s.PCIeTxKBps)
		}
		if s.NVLinkRxBytes != nil && s.NVLinkTxBytes != nil {
			if firstNV == nil {
				firstNV = s
			}
			lastNV = s
		}
		if s.PowerWatts != nil {
			f.power = max(f.power, *s.PowerWatts)
		}
		if s.PowerLimitWatts != nil {
			f.limit = *s.PowerLimitWatts
		}
		if s.SMClockMHz != nil {
			f.sm = *s.SMClockMHz
		}
		if s.MaxSMClockMHz != nil {
			f.maxSM = *s.MaxSMClockMHz
		}
		if s.ClockEventMask != nil {
			for _, e := range clockEventNames {
				if *s.ClockEventMask&e.bit != 0 {
					f.events[e.name]++
				}
			}
		}
	}
	if f.n > 0 {
		f.util /= float64(f.n)
		f.memUtil /= float64(f.n)
	}
	if pcie > 0 {
		f.hasPCIe = true
		f.pcieRx /= float64(pcie)
		f.pcieTx /= float64(pcie)
	}
	if firstNV != nil && lastNV != firstNV {
		if dt := lastNV.At.Sub(firstNV.At).Seconds(); dt > 0 && *lastNV.NVLinkRxBytes >= *firstNV.NVLinkRxBytes && *lastNV.NVLinkTxBytes >= *firstNV.NVLinkTxBytes {
			f.hasNV = true
			f.nvRx = float64(*lastNV.NVLinkRxBytes-*firstNV.NVLinkRxBytes) / dt
			f.nvTx = float64(*lastNV.NVLinkTxBytes-*firstNV.NVLinkTxBytes) / dt
		}
	}
	return f
}

func gb(bytesPerSec float64) string { return fmt.Sprintf("%.2f GB/s", bytesPerSec/1e9) }

// writeJobFigures prints the header and the figures of a sampled job.
func writeJobFigures(b *strings.Builder, d *Document, clean func(string) string) {
	p := d.JobPerf
	fmt.Fprintf(b, "gpuprobe job %s on %s — %d GPUs, %s sampled every %s — %s\n",
		clean(p.JobID), clean(d.NodeName()), len(p.GPUs), seconds(p.WindowSeconds), seconds(p.IntervalSeconds), d.CollectedAt.Format("2006-01-02 15:04:05 MST"))
	owner := ""
	if p.User != "" {
		owner = ", user " + clean(p.User)
	}
	fmt.Fprintf(b, "  job: %d processes (%s%s), GPUs from %s\n", len(p.PIDs), clean(orNA(p.TasksFrom)), owner, clean(orNA(p.GPUsFrom)))
	if len(p.Containers) > 0 {
		// Which runtime holds the job's GPU processes, on what marker
		// (host PIDs, as NVML reports them).
		var cs []string
		for i, c := range p.Containers {
			if i == 8 {
				cs = append(cs, fmt.Sprintf("and %d more", len(p.Containers)-i))
				break
			}
			cs = append(cs, fmt.Sprintf("pid %d %s (%s)", c.PID, clean(c.Runtime), clean(c.From)))
		}
		fmt.Fprintf(b, "  containers: %s\n", strings.Join(cs, ", "))
	}
	for i := range p.GPUs {
		g := &p.GPUs[i]
		f := figures(g)
		line := fmt.Sprintf("  GPU %d", g.Index)
		if g.PCIBusID != "" {
			line += " (" + clean(g.PCIBusID) + ")"
		}
		if f.n == 0 {
			line += ": utilisation not read"
		} else {
			line += fmt.Sprintf(": %3.0f%% busy (%.0f-%.0f), memory controller %.0f%%", f.util, f.utilMin, f.utilMax, f.memUtil)
		}
		if g.MemoryTotalBytes > 0 {
			line += fmt.Sprintf(", %.1f/%.1f GiB", float64(f.memUsed)/(1<<30), float64(g.MemoryTotalBytes)/(1<<30))
		}
		if f.hasPCIe {
			line += fmt.Sprintf(", PCIe rx %s tx %s", gb(f.pcieRx*1000), gb(f.pcieTx*1000))
		}
		if f.hasNV {
			line += fmt.Sprintf(", NVLink rx %s tx %s", gb(f.nvRx), gb(f.nvTx))
		}
		if f.limit > 0 {
			line += fmt.Sprintf(", %.0f/%.0f W", f.power, f.limit)
		}
		if f.sm > 0 && f.maxSM > 0 {
			line += fmt.Sprintf(", SM %d/%d MHz", f.sm, f.maxSM)
		}
		if len(f.events) > 0 {
			var ev []string
			for k, v := range f.events {
				ev = append(ev, fmt.Sprintf("%s×%d", k, v))
			}
			sort.Strings(ev)
			line += ", " + strings.Join(ev, " ")
		}
		line += fmt.Sprintf(", %d job process(es)", len(g.JobPIDs))
		b.WriteString(line + "\n")
	}
	if c := p.CPU; c != nil {
		pct := 0.0
		if c.AllocatedCount > 0 && p.WindowSeconds > 0 {
			pct = 100 * c.UsedSeconds / (float64(c.AllocatedCount) * p.WindowSeconds)
		}
		line := fmt.Sprintf("  CPU: %.1f of %d allocated CPUs busy (%.0f%%, %s; CPUs %s)", c.UsedSeconds/max(p.WindowSeconds, 1e-9), c.AllocatedCount, pct, clean(c.From), clean(c.AllocatedCPUs))
		if c.ThrottledSeconds != nil {
			line += fmt.Sprintf(", quota-throttled %.1f s", *c.ThrottledSeconds)
		}
		if len(c.TopProcesses) > 0 && p.WindowSeconds > 0 {
			// The busiest few, by the CPUs each used over the window; the
			// names are the job owner's choice.
			var top []string
			for i, pr := range c.TopProcesses {
				if i == 3 {
					break
				}
				cpus, _ := pr.CPUs(p.WindowSeconds)
				top = append(top, fmt.Sprintf("pid %d %s %.1f", pr.PID, clean(pr.Comm), cpus))
			}
			line += "; busiest (CPUs): " + strings.Join(top, ", ")
		}
		b.WriteString(line + "\n")
	}
	if m := p.Memory; m != nil {
		line := fmt.Sprintf("  memory: %.1f GiB", float64(m.UsedBytes)/(1<<30))
		if m.LimitBytes != nil {
			line += fmt.Sprintf(" of %.1f GiB limit", float64(*m.LimitBytes)/(1<<30))
		}
		if m.SwapBytes != nil {
			line += fmt.Sprintf(", swap %.1f GiB", float64(*m.SwapBytes)/(1<<30))
		}
		var ev []string
		for k, v := range m.Events {
			if v > 0 {
				ev = append(ev, fmt.Sprintf("%s %d", clean(k), v))
			}
		}
		sort.Strings(ev)
		if len(ev) > 0 {
			line += ", events: " + strings.Join(ev, ", ")
		}
		b.WriteString(line + "\n")
	}
	if io := p.IO; io != nil {
		w := max(p.WindowSeconds, 1e-9)
		line := fmt.Sprintf("  I/O: reads %.1f MiB/s (%.1f MiB/s from block devices)", float64(io.ReadBytes)/(1<<20)/w, float64(io.StorageReadBytes)/(1<<20)/w)
		if io.Ticks > 0 {
			line += fmt.Sprintf(", %.1f task(s) in I/O wait", float64(io.DStateTaskSamples)/float64(io.Ticks))
		}
		for _, fs := range io.Filesystems {
			line += fmt.Sprintf("; %s %s: %d open file(s), %.1f MiB/s", clean(fs.Type), clean(fs.MountPoint), fs.OpenFiles, float64(fs.ReadBytes)/(1<<20)/w)
		}
		b.WriteString(line + "\n")
	}
	for _, e := range p.Errors {
		b.WriteString("  not read: " + clean(e) + "\n")
	}
}

// WriteJobSummary prints one line per GPU of a sampled job and one line of
// verdict, for the job's output file (an Epilog or TaskEpilog).
func (d *Document) WriteJobSummary(w io.Writer) error {
	p := d.JobPerf
	if p == nil {
		return fmt.Errorf("no job sampled")
	}
	clean := safetext.Clean
	var b strings.Builder
	for i := range p.GPUs {
		g := &p.GPUs[i]
		f := figures(g)
		fmt.Fprintf(&b, "gpuprobe: job %s GPU %d: %.0f%% busy, memory %.1f/%.1f GiB, %d process(es) of the job, %.0f s sampled\n",
			clean(p.JobID), g.Index, f.util, float64(f.memUsed)/(1<<30), float64(g.MemoryTotalBytes)/(1<<30), len(g.JobPIDs), p.WindowSeconds)
	}
	var worst []string
	for _, r := range d.Checks {
		if r.Status == d.Status && r.Status != "pass" && r.Status != "skip" {
			worst = append(worst, clean(r.ID)+": "+clean(r.Summary))
		}
	}
	verdict := "no inefficiency found"
	if len(worst) > 0 {
		verdict = strings.Join(worst, "; ")
	}
	fmt.Fprintf(&b, "gpuprobe: job %s: %s: %s\n", clean(p.JobID), strings.ToUpper(string(d.Status)), verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// seconds prints a window or interval as a duration ("10s", "250ms").
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
