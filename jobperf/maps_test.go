package jobperf

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/rootfs"
	"github.com/gpuprobe/gpuprobe/state"
)

// Lines as /proc/PID/maps prints them (fs/proc/task_mmu.c show_map_vma:
// "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu " then, for a named mapping,
// padding and the path). The PyTorch wheel's path is where pip puts
// nvidia-nccl-cu13 (site-packages/nvidia/nccl/lib/libnccl.so.2).
const (
	mapsAnon   = "7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 \n"
	mapsHeap   = "55d0c4a3e000-55d0c4e5f000 rw-p 00000000 00:00 0                          [heap]\n"
	mapsCudart = "7f1c30000000-7f1c30080000 r-xp 00000000 fd:01 2623417                    /usr/local/lib/python3.12/dist-packages/nvidia/cuda_runtime/lib/libcudart.so.13\n"
	mapsTorch  = "7f1c3a000000-7f1c3a2f5000 r-xp 00000000 fd:01 2623501                    /usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2\n"
	mapsStack  = "7ffd5a1c2000-7ffd5a1e3000 rw-p 00000000 00:00 0                          [stack]\n"
)

func TestScanMapsNCCL(t *testing.T) {
	filler := strings.Repeat(mapsCudart, 40) // ~5.5 KB
	for _, c := range []struct {
		name, maps string
		limit      int64
		want       string
	}{
		{"PyTorch wheel", mapsAnon + mapsHeap + mapsCudart + mapsTorch + mapsStack, 1 << 20, state.NCCLLoaded},
		{"conda, versioned name", "7f00-7f10 r-xp 00000000 08:01 42 /opt/conda/lib/libnccl.so.2.21.5\n", 1 << 20, state.NCCLLoaded},
		{"a replaced file", "7f00-7f10 r-xp 00000000 08:01 42 /opt/nccl/lib/libnccl.so.2 (deleted)\n", 1 << 20, state.NCCLLoaded},
		{"a path with spaces", "7f00-7f10 r-xp 00000000 08:01 42   /home/a b/lib/libnccl.so.2\n", 1 << 20, state.NCCLLoaded},
		{"a net plugin only NCCL loads", "7f00-7f10 r-xp 00000000 08:01 42 /opt/amazon/ofi-nccl/lib/libnccl-net.so\n", 1 << 20, state.NCCLLoaded},
		{"no NCCL: a spin kernel's process", mapsAnon + mapsHeap + mapsCudart + mapsStack, 1 << 20, state.NCCLNotLoaded},
		{"libnccl in a directory, not the file", "7f00-7f10 r-xp 00000000 08:01 42 /opt/libnccl.so.d/libfoo.so\n", 1 << 20, state.NCCLNotLoaded},
		{"libnccl without .so", "7f00-7f10 r--p 00000000 08:01 42 /data/libnccl_notes.txt\n", 1 << 20, state.NCCLNotLoaded},
		{"a name in brackets", "7f00-7f10 rw-p 00000000 00:00 0 [anon:libnccl.so]\n", 1 << 20, state.NCCLNotLoaded},
		{"empty: a zombie maps nothing", "", 1 << 20, ""},
		// Cut at the cap: a match before it counts, none is not known.
		{"cut without a match", filler + mapsTorch, int64(len(filler)) / 2, ""},
		{"cut after a match", mapsTorch + filler, int64(len(filler)) / 2, state.NCCLLoaded},
		{"a match on the cut line is not believed", filler + mapsTorch, int64(len(filler)) + 80, ""},
		{"a line longer than maps prints", "7f00-7f10 r-xp 00000000 08:01 42 /" + strings.Repeat("a", maxMapsLine) + "\n" + mapsTorch, 1 << 20, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := scanMapsNCCL(strings.NewReader(c.maps), c.limit); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// hangFacts reads maps once per process, through the job's reader: an
// unreadable maps (another user's process without root) is not known.
func TestHangFactsReadsMapsOnce(t *testing.T) {
	m := fstest.MapFS{
		"proc/100/maps":    {Data: []byte(mapsAnon + mapsTorch)},
		"proc/100/environ": {Data: []byte("SLURM_PROCID=0\x00")},
		"proc/200/maps":    {Data: []byte(mapsAnon + mapsCudart)},
		"proc/300/environ": {Data: []byte("SLURM_PROCID=2\x00")},
	}
	j := &Job{r: reader{fs: rootfs.FS{Tree: m}, d: time.Second}, proc: "/proc", seen: map[int32]bool{}, procIDs: map[int32]hangEnv{}}
	ctx := context.Background()
	for pid, want := range map[int32]string{100: state.NCCLLoaded, 200: state.NCCLNotLoaded, 300: ""} {
		tk, budget := &Task{}, 100
		j.hangFacts(ctx, pid, tk, &budget)
		if tk.NCCLLibrary != want {
			t.Errorf("pid %d: %q, want %q", pid, tk.NCCLLibrary, want)
		}
	}
	// Read once: a later tick keeps the first answer.
	m["proc/200/maps"] = &fstest.MapFile{Data: []byte(mapsTorch)}
	tk, budget := &Task{}, 100
	j.hangFacts(ctx, 200, tk, &budget)
	if tk.NCCLLibrary != state.NCCLNotLoaded {
		t.Errorf("maps read again: %q", tk.NCCLLibrary)
	}
	// SummarizeHang carries it to the rank.
	h := SummarizeHang([]*Sample{{At: time.Unix(1, 0), Tasks: map[int32]*Task{200: tk}}}, map[int32][]int{200: {0}})
	if len(h.Ranks) != 1 || h.Ranks[0].NCCLLibrary != state.NCCLNotLoaded {
		t.Errorf("%+v", h.Ranks)
	}
}
