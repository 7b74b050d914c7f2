package jobperf

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpuprobe/gpuprobe/state"
)

// Every parser of an untrusted pseudo-file gets a fuzz target: any input is
// an answer or an error, never a panic (scripts/fuzz.sh finds them by name).

func seeds(f *testing.F, extra ...string) {
	for _, s := range append(extra, "", "\x00", "some total=", "1 (a) S", ":\n:", "\\0") {
		f.Add([]byte(s))
	}
}

func FuzzParseKeyed(f *testing.F) {
	seeds(f, "rchar: 750339\nread_bytes: 1024\ncancelled_write_bytes: -1024\n", "usage_usec 126686\nthrottled_usec 0\n", "pos:\t0\nflags:\t02004002\ninotify wd:3 ino:1\n")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseKeyed("f", b) })
}

func FuzzParseUint(f *testing.F) {
	seeds(f, "max\n", "1835008000\n", "-1", "18446744073709551616")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseUint("f", b) })
}

func FuzzParsePressure(f *testing.F) {
	seeds(f, "some avg10=0.10 avg60=2.00 avg300=3.85 total=15\nfull avg10=0.20 avg60=3.00 avg300=4.95 total=25\n", "some\n", "some total=x")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parsePressure("f", b) })
}

func FuzzParseProcStat(f *testing.F) {
	seeds(f, "26231 (vim) R 5392 7446 5392 34835 7446 4218880 32533 309516 26 82 1677 44 158 99 20 0 1 0 82375 56274944 1981", "1 ()) ) D", "1 (x) SS 1 1 1 1 1 1 1 1 1 1 1 1")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseProcStat("f", b) })
}

func FuzzParseProcStatus(f *testing.F) {
	seeds(f, "Name:\tbash\nUid:\t1000\t1000\t1000\t1000\nCpus_allowed_list:\t0-7\n", "Uid:\n", "Uid: x")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseProcStatus("f", b) })
}

func FuzzParsePIDs(f *testing.F) {
	seeds(f, "49276\n49334\n", "0\n", "-1\n", "99999999999\n")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parsePIDs("f", b) })
}

func FuzzParseMountinfo(f *testing.F) {
	seeds(f, "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
		`40 30 0:26 /a\040b /mnt/x\040y rw - nfs4 srv:/a\134 rw`+"\n", "1 2 3 4 5 6 -\n", "1 2 3 4 5 6 - \\\n")
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := parseMountinfo("f", b)
		if err == nil {
			for _, m := range ms {
				_ = mountOf(ms, m.Point+"/x")
				_ = m.under("/job_1")
			}
		}
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	seeds(f, "0::/system.slice/slurmstepd.scope/job_4/step_0/user/task_0\n", "10:devices:/slurm/uid_2101171/job_280678/step_interactive/task_0\n", "x:y:z")
	f.Fuzz(func(t *testing.T, b []byte) {
		ls, err := parseProcCgroup("f", b)
		if err == nil {
			for _, l := range ls {
				_, _, _ = jobInPath(l.Path)
			}
		}
	})
}

func FuzzParseFdinfo(f *testing.F) {
	seeds(f, "pos:\t0\nflags:\t02004002\nmnt_id:\t13\n", "pos: 1\nflags: 9\n")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseFdinfo("f", b) })
}

func FuzzParseWchan(f *testing.F) {
	seeds(f, "rpc_wait_bit_killable", "0", "do_epoll_wait\n", "nfs_wait_bit_killable.cold", "\x1b[31m")
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := parseWchan("f", b)
		if err == nil && len(w) > MaxWchan {
			t.Fatalf("kept %d bytes", len(w))
		}
	})
}

func FuzzParseProcID(f *testing.F) {
	seeds(f, "PATH=/usr/bin\x00SLURM_PROCID=12\x00", "SLURM_PROCID=\x00", "SLURM_PROCID=1\x1b", "SLURM_PROCID=1234567890")
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseProcID("f", b)
		if err == nil && strings.Trim(v, "0123456789") != "" {
			t.Fatalf("rank %q", v)
		}
	})
}

func FuzzParseHangEnv(f *testing.F) {
	seeds(f, "SLURM_PROCID=3\x00NCCL_RAS_ADDR=localhost:28028\x00NCCL_RAS_ENABLE=0\x00", "NCCL_RAS_ADDR="+strings.Repeat("\xff", 100))
	f.Fuzz(func(t *testing.T, b []byte) {
		e := parseHangEnv("f", b)
		for _, v := range []string{e.rasAddr, e.rasEnable} {
			if len(v) > 64+3 || !utf8.ValidString(v) {
				t.Fatalf("kept %q", v)
			}
		}
	})
}

func FuzzParseKernelStack(f *testing.F) {
	seeds(f, "[<0>] rpc_wait_bit_killable+0x24/0xa0 [sunrpc]\n", "[<ffffffffa01874de>] xprt_wait_bit+0xe/0x20 [sunrpc]\n", "[<0>]\n", "[<>] x", "[<0>] f+1 [")
	f.Fuzz(func(t *testing.T, b []byte) {
		frames, err := parseKernelStack("f", b)
		if err == nil && len(frames) > MaxStackFrames {
			t.Errorf("%d frames kept", len(frames))
		}
	})
}

func FuzzParsePySpyDump(f *testing.F) {
	seeds(f, pySpyDumpTorch(f), "Thread 0x7F (idle)\n    f (a.py)\n", "Thread 1 (active+gil): \"MainThread\"\n        Locals:\n", "Thread \x1b[", "Thread 1 (")
	f.Fuzz(func(t *testing.T, b []byte) {
		th, ok := ParsePySpyDump(b)
		if !ok && (th.ID != "" || len(th.Frames) > 0) {
			t.Errorf("no thread, yet %+v", th)
		}
		if len(th.Frames) > MaxPyFrames {
			t.Errorf("%d frames kept", len(th.Frames))
		}
	})
}

func FuzzScanMapsNCCL(f *testing.F) {
	seeds(f, mapsAnon+mapsTorch, mapsHeap+mapsCudart, "7f00-7f10 r-xp 00000000 08:01 42 /a b/libnccl.so.2 (deleted)\n", "a b c d e /libnccl.so")
	f.Fuzz(func(t *testing.T, b []byte) {
		switch v := scanMapsNCCL(strings.NewReader(string(b)), 4096); v {
		case "", state.NCCLLoaded, state.NCCLNotLoaded:
		default:
			t.Fatalf("%q", v)
		}
	})
}
