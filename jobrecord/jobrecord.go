// Package jobrecord keeps, in the daemon, what each job's GPUs did while the
// job ran: every cycle the GPUs that run a process of a Slurm job (the
// process's cgroup names the job) add one reading to that job's record.
// `gpuprobe job --summary --from-daemon` reads it after the job ended,
// when its processes are gone and sampling would measure nothing. Bounded:
// MaxJobs records of MaxSamples readings per GPU, forgotten after Keep.
package jobrecord

import (
	"sort"
	"sync"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// Defaults: a reading is kept in 24 bytes, so 256 jobs × 8 GPUs × 240
// readings is 12 MiB at the very worst; a node runs a handful of jobs at a
// time, and 240 readings are an hour at the default 15 s interval.
const (
	DefaultMaxJobs    = 256
	DefaultMaxSamples = 240
	DefaultKeep       = 24 * time.Hour
)

// Book is the daemon's record of recent jobs. The zero value is not usable:
// use New.
type Book struct {
	mu         sync.Mutex
	jobs       map[string]*record
	maxJobs    int
	maxSamples int
	keep       time.Duration
}

// A nil *Book records nothing and knows no job.

// New returns an empty book with the given bounds (0: the defaults).
func New(maxJobs, maxSamples int, keep time.Duration) *Book {
	if maxJobs <= 0 {
		maxJobs = DefaultMaxJobs
	}
	if maxSamples <= 0 {
		maxSamples = DefaultMaxSamples
	}
	if keep <= 0 {
		keep = DefaultKeep
	}
	return &Book{jobs: map[string]*record{}, maxJobs: maxJobs, maxSamples: maxSamples, keep: keep}
}

// record is one job: the JobPerf without samples, and each GPU's readings
// in compact form.
type record struct {
	perf     state.JobPerf
	last     time.Time
	readings [][]compact // per perf.GPUs entry
}

// compact is one GPU reading: what the perf verdicts read, in 24 bytes.
// Absent values are flagged, not zero (a GPU at 0% is a finding).
type compact struct {
	at            int64  // unix nanoseconds
	memUsedMiB    uint32 // framebuffer used
	powerDeciWatt uint16
	limitDeciWatt uint16
	mask          uint16 // clock event reasons (nvml.h defines bits below 0x200)
	util, memUtil uint8
	has           uint8 // hasUtil | hasMem | hasPower | hasLimit | hasMask
}

const (
	hasUtil = 1 << iota
	hasMem
	hasPower
	hasLimit
	hasMask
)

// Observe adds one cycle: for each GPU, one reading to each job that has a
// process on it. A GPU of a job that runs none of its processes is not
// seen: the daemon knows a job's GPUs only by their processes.
func (b *Book) Observe(n *state.Node) {
	if b == nil || n == nil || n.NVML == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	at := n.CollectedAt
	for i := range n.NVML.GPUs {
		g := &n.NVML.GPUs[i]
		pids := map[string][]uint32{}
		users := map[string]string{}
		for _, p := range g.Processes {
			if p.JobID == "" {
				continue
			}
			pids[p.JobID] = append(pids[p.JobID], p.PID)
			if p.User != "" {
				users[p.JobID] = p.User
			}
		}
		for id, ps := range pids {
			r := b.jobs[id]
			if r == nil {
				r = &record{perf: state.JobPerf{JobID: id, TasksFrom: "daemon", GPUsFrom: "processes", Start: at}}
				b.jobs[id] = r
			}
			if users[id] != "" {
				r.perf.User = users[id]
			}
			k := r.gpuOf(g)
			r.perf.GPUs[k].JobPIDs = union(r.perf.GPUs[k].JobPIDs, ps)
			r.readings[k] = append(r.readings[k], reading(g, at))
			if over := len(r.readings[k]) - b.maxSamples; over > 0 {
				r.readings[k] = append(r.readings[k][:0:0], r.readings[k][over:]...)
			}
			r.last = at
			r.perf.WindowSeconds = at.Sub(r.perf.Start).Seconds()
			for _, p := range ps {
				r.perf.PIDs = unionPID(r.perf.PIDs, int32(p))
			}
		}
	}
	b.evict(at)
}

// Job returns a copy of a job's record.
func (b *Book) Job(id string) (*state.JobPerf, bool) {
	if b == nil {
		return nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.jobs[id]
	if !ok {
		return nil, false
	}
	c := r.perf
	c.PIDs = append([]int32(nil), r.perf.PIDs...)
	c.GPUs = make([]state.JobGPU, len(r.perf.GPUs))
	for i, g := range r.perf.GPUs {
		g.JobPIDs = append([]uint32(nil), g.JobPIDs...)
		g.Samples = make([]state.GPUSample, len(r.readings[i]))
		for k, x := range r.readings[i] {
			g.Samples[k] = x.sample()
		}
		c.GPUs[i] = g
	}
	return &c, true
}

// Len is how many jobs the book holds.
func (b *Book) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.jobs)
}

// gpuOf is the index of g in the record, added when new.
func (r *record) gpuOf(g *state.GPU) int {
	for i := range r.perf.GPUs {
		if r.perf.GPUs[i].UUID == g.UUID && r.perf.GPUs[i].Index == g.Index {
			return i
		}
	}
	jg := state.JobGPU{Index: g.Index, UUID: g.UUID, PCIBusID: g.PCIBusID, Name: g.Name}
	if g.Memory != nil {
		jg.MemoryTotalBytes = g.Memory.TotalBytes
	}
	r.perf.GPUs = append(r.perf.GPUs, jg)
	r.readings = append(r.readings, nil)
	return len(r.perf.GPUs) - 1
}

// reading is the cycle's values of one GPU, in compact form.
func reading(g *state.GPU, at time.Time) compact {
	c := compact{at: at.UnixNano()}
	if u := g.Utilization; u != nil {
		c.util, c.memUtil = uint8(min(u.GPUPercent, 100)), uint8(min(u.MemoryPercent, 100))
		c.has |= hasUtil
	}
	if m := g.Memory; m != nil {
		c.memUsedMiB = uint32(min(m.UsedBytes>>20, 1<<32-1))
		c.has |= hasMem
	}
	if p := g.Power; p != nil {
		c.powerDeciWatt = deciWatt(p.DrawWatts)
		c.has |= hasPower
		if p.LimitWatts != nil {
			c.limitDeciWatt = deciWatt(*p.LimitWatts)
			c.has |= hasLimit
		}
	}
	if e := g.ClockEvents; e != nil {
		c.mask = uint16(e.Mask & 0xffff)
		c.has |= hasMask
	}
	return c
}

func deciWatt(w float64) uint16 {
	if w <= 0 {
		return 0
	}
	return uint16(min(w*10, 65535))
}

// sample expands a reading back into the state's form.
func (c compact) sample() state.GPUSample {
	s := state.GPUSample{At: time.Unix(0, c.at).UTC()}
	if c.has&hasUtil != 0 {
		u, m := uint32(c.util), uint32(c.memUtil)
		s.UtilGPUPercent, s.UtilMemoryPercent = &u, &m
	}
	if c.has&hasMem != 0 {
		b := uint64(c.memUsedMiB) << 20
		s.MemoryUsedBytes = &b
	}
	if c.has&hasPower != 0 {
		w := float64(c.powerDeciWatt) / 10
		s.PowerWatts = &w
	}
	if c.has&hasLimit != 0 {
		l := float64(c.limitDeciWatt) / 10
		s.PowerLimitWatts = &l
	}
	if c.has&hasMask != 0 {
		m := uint64(c.mask)
		s.ClockEventMask = &m
	}
	return s
}

func (b *Book) evict(now time.Time) {
	for id, r := range b.jobs {
		if now.Sub(r.last) > b.keep {
			delete(b.jobs, id)
		}
	}
	for len(b.jobs) > b.maxJobs {
		oldest := ""
		for id, r := range b.jobs {
			if oldest == "" || r.last.Before(b.jobs[oldest].last) {
				oldest = id
			}
		}
		delete(b.jobs, oldest)
	}
}

func union(a, b []uint32) []uint32 {
	for _, x := range b {
		found := false
		for _, y := range a {
			if x == y {
				found = true
				break
			}
		}
		if !found {
			a = append(a, x)
		}
	}
	sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	return a
}

func unionPID(a []int32, p int32) []int32 {
	for _, x := range a {
		if x == p {
			return a
		}
	}
	return append(a, p)
}
