package jobperf

import (
	"testing"
	"time"
)

func TestSummarizeHang(t *testing.T) {
	at := func(k int) time.Time { return time.Unix(1000+int64(k), 0) }
	rank := func(st byte, cpu uint64, id string) *Task {
		return &Task{Comm: "python", State: st, UTime: cpu, PPID: 50, ProcID: id, ThreadsRead: 4}
	}
	worker := &Task{Comm: "pt_data_worker", State: 'S', PPID: 100, ProcID: "0"}
	var ticks []*Sample
	for k := 0; k < 4; k++ {
		s := &Sample{At: at(k), Tasks: map[int32]*Task{
			100: rank('S', 10, "0"),      // a rank by SLURM_PROCID, its parent slurmstepd (not the job's)
			110: worker,                  // forked by 100: not a rank
			300: {Comm: "x", State: 'R'}, // on a GPU by NVML, no environment readable
		}}
		if k < 2 {
			s.Tasks[200] = rank('S', 5, "1") // exits after tick 1
		}
		if k != 2 {
			r := rank('D', uint64(k), "2") // missed at one tick, not exited
			r.DThreads, r.DWchans = 2, []string{"rpc_wait_bit_killable"}
			s.Tasks[400] = r
		}
		ticks = append(ticks, s)
	}
	h := SummarizeHang(ticks, map[int32][]int{300: {3}})
	if h.Ticks != 4 || len(h.Ranks) != 4 {
		t.Fatalf("%+v, want ranks 100, 200, 300, 400", h)
	}
	r100, r200, r300, r400 := h.Ranks[0], h.Ranks[1], h.Ranks[2], h.Ranks[3]
	if r100.PID != 100 || r100.Rank != "0" || r100.States != "SSSS" || r100.Exited || r100.SeenSeconds != 3 || r100.CPUSeconds != 0 {
		t.Errorf("rank 0: %+v", r100)
	}
	if r200.PID != 200 || !r200.Exited || r200.States != "SS" || r200.SeenSeconds != 1 {
		t.Errorf("exited rank: %+v", r200)
	}
	if r300.PID != 300 || r300.Rank != "" || len(r300.GPUs) != 1 || r300.GPUs[0] != 3 {
		t.Errorf("rank on GPU: %+v", r300)
	}
	if r400.Exited || r400.States != "DDD" || r400.DTicks != 3 || r400.DThreads != 2 || r400.CPUSeconds != 0.03 {
		t.Errorf("rank in D: %+v", r400)
	}
}

// gpuprobe itself, an srun --overlap task of the job with a SLURM_PROCID
// of its own, is not a rank.
func TestSummarizeHangExcludesItself(t *testing.T) {
	s := &Sample{At: time.Unix(1, 0), Tasks: map[int32]*Task{
		100: {Comm: "python", State: 'R', PPID: 50, ProcID: "0", NCCLRASAddr: "localhost:29000"},
		900: {Comm: "gpuprobe", State: 'R', PPID: 60, ProcID: "0"},
	}}
	h := SummarizeHang([]*Sample{s, s}, nil, 900)
	if len(h.Ranks) != 1 || h.Ranks[0].PID != 100 || h.Ranks[0].NCCLRASAddr != "localhost:29000" {
		t.Errorf("%+v", h.Ranks)
	}
	if h := SummarizeHang([]*Sample{s, s}, nil); len(h.Ranks) != 2 {
		t.Errorf("without the exclusion: %+v", h.Ranks)
	}
}
