package collect

import (
	"context"
	"time"

	"github.com/gpuprobe/gpuprobe/state"
)

// LoadWatch samples NVML for the GPUs at these NVML indexes every period
// while `gpuprobe verify` loads them, through the same guarded sampler as
// `gpuprobe job` (nvml.Sampler: one Init, every call under its deadline, a
// GPU whose call hung not called again). stop ends the watch and returns
// each GPU's LoadWatch. ECC growth and Xids are not in a sample: verify's
// command compares the node collected before and after the run
// (verify.AfterRun) and fills them in.
func LoadWatch(ctx context.Context, o Options, indexes []int, period time.Duration) (stop func() map[int]state.LoadWatch) {
	ctx, cancel := context.WithCancel(ctx)
	type result struct {
		watch map[int]state.LoadWatch
	}
	done := make(chan result, 1)
	go func() {
		out := map[int]state.LoadWatch{}
		s, err := openSampler(ctx, JobOptions{Options: o, GPUs: indexes})
		if err != nil {
			for _, i := range indexes {
				out[i] = state.LoadWatch{ECCDelta: -1, ReadError: err.Error()}
			}
			done <- result{out}
			return
		}
		defer s.Close()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			samples := s.Sample(ctx)
			for k, smp := range samples {
				if k < len(indexes) {
					i := indexes[k]
					out[i] = FoldLoad(out[i], smp)
				}
			}
			select {
			case <-ctx.Done():
				for k, g := range s.GPUs() {
					if k < len(indexes) && len(g.Errors) > 0 {
						w := out[indexes[k]]
						w.ReadError = g.Errors[0].Call + ": " + g.Errors[0].Error
						out[indexes[k]] = w
					}
				}
				done <- result{out}
				return
			case <-t.C:
			}
		}
	}()
	return func() map[int]state.LoadWatch {
		cancel()
		return (<-done).watch
	}
}

// FoldLoad adds one NVML sample to a GPU's LoadWatch: clocks min/max, the
// highest power and temperature, the OR of the clock event reasons.
// ECCDelta starts at -1 (not read here).
func FoldLoad(w state.LoadWatch, s state.GPUSample) state.LoadWatch {
	if w.Samples == 0 {
		w.ECCDelta = -1
	}
	read := false
	if s.SMClockMHz != nil {
		c := *s.SMClockMHz
		if w.MinSMClockMHz == 0 || c < w.MinSMClockMHz {
			w.MinSMClockMHz = c
		}
		w.MaxSMClockMHz = max(w.MaxSMClockMHz, c)
		read = true
	}
	if s.MaxSMClockMHz != nil {
		w.MaxClockMHz = *s.MaxSMClockMHz
	}
	if s.PowerWatts != nil {
		w.MaxPowerW = max(w.MaxPowerW, *s.PowerWatts)
	}
	if s.TempC != nil {
		w.MaxTempC = max(w.MaxTempC, *s.TempC)
	}
	if s.ClockEventMask != nil {
		w.ThrottleReasons |= *s.ClockEventMask
		read = true
	}
	if read {
		w.Samples++
	}
	return w
}
