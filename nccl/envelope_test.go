package nccl

import (
	"bytes"
	"strings"
	"testing"
)

// TestParseLineEnvelopes covers every launcher and collector prefix in
// FORMATS.md section A: the record and its envelope must come out the same
// whatever precedes them.
func TestParseLineEnvelopes(t *testing.T) {
	type want struct {
		host     string
		pid, tid int64
		dev      int64
		prefixed bool
		level    string
		source   string
		msg      string
		kind     Kind
	}
	info := func(host string, pid, tid, dev int64, msg string, kind Kind) want {
		return want{host, pid, tid, dev, true, "INFO", "", msg, kind}
	}
	tests := []struct {
		name string
		line string
		want []want
	}{
		{"A1 plain", "10-90-43-152:120890:121560 [0] NCCL INFO Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA",
			[]want{info("10-90-43-152", 120890, 121560, 0, "Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA", KindConnection)}},
		{"path glued before the host", "logs/run/gpu-b:77:78 [1] NCCL INFO Using network IB",
			[]want{info("gpu-b", 77, 78, 1, "Using network IB", KindNetSelected)}},
		{"A2 WARN with source tag", "gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration",
			[]want{{"gpu1", 5021, 5386, 0, true, "WARN", "transport/net_ib.cc:93", "NET/IB : Got async event : client reregistration", KindWarn}}},
		{"A2 WARN with function (2.29+)", "h:1:2 [3] init.cc:1776 (ncclCommInitRankFunc) NCCL WARN Cuda failure 'out of memory'",
			[]want{{"h", 1, 2, 3, true, "WARN", "init.cc:1776 (ncclCommInitRankFunc)", "Cuda failure 'out of memory'", KindWarn}}},
		{"A2 WARN with NCCL's timestamp", "[2025-03-01 10:11:12] node7:4410:4490 [5] proxy.cc:1521 NCCL WARN [Proxy Service 2] Failed to execute operation Connect from rank 2, retcode 3",
			[]want{{"node7", 4410, 4490, 5, true, "WARN", "proxy.cc:1521", "[Proxy Service 2] Failed to execute operation Connect from rank 2, retcode 3", KindWarn}}},
		{"A3 return-code trace", "kp-ddp-worker-0:3468:3905 [4] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
			[]want{info("kp-ddp-worker-0", 3468, 3905, 4, "proxy.cc:878 -> 6 [Progress Thread]", KindTrace)}},
		{"host redacted by hand with a blank", "NAME :70918:70918 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
			[]want{info("NAME", 70918, 70918, 0, "Bootstrap : Using lo:127.0.0.1<0>", KindBootstrap)}},
		{"empty host after a launcher tag stays empty", "[1,0]<stdout>: :5:6 [0] NCCL INFO Using network IB",
			[]want{info("", 5, 6, 0, "Using network IB", KindNetSelected)}},
		{"A4 bare version", "NCCL version 2.4.2+cuda10.0",
			[]want{{"", 0, 0, -1, false, "VERSION", "", "NCCL version 2.4.2+cuda10.0", KindVersion}}},
		{"A5 prefixed version", "cn76:155:155 [5] NCCL INFO NCCL version 2.28.9+cuda13.0",
			[]want{info("cn76", 155, 155, 5, "NCCL version 2.28.9+cuda13.0", KindVersion)}},
		{"A6 Open MPI tag", "[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO NET/IB : No device found.",
			[]want{info("5873af64cf59", 10158, 10560, 0, "NET/IB : No device found.", KindNoDevice)}},
		{"A6 Open MPI bare version", "[1,0]<stdout>:NCCL version 2.5.6+cuda10.2",
			[]want{{"", 0, 0, -1, false, "VERSION", "", "NCCL version 2.5.6+cuda10.2", KindVersion}}},
		{"A7 srun --label", "[155] crow-ib-new-nccl-256-info-19:5330:5330 [3] NCCL INFO Bootstrap : Using [0]eth0:10.100.62.64<0>",
			[]want{info("crow-ib-new-nccl-256-info-19", 5330, 5330, 3, "Bootstrap : Using [0]eth0:10.100.62.64<0>", KindBootstrap)}},
		{"A7 srun numeric label", "137: gpu-a001:77:78 [1] NCCL INFO Using network IB",
			[]want{info("gpu-a001", 77, 78, 1, "Using network IB", KindNetSelected)}},
		{"A8 pdsh host", "rdma-gpu-train-worker-0: rdma-gpu-train-worker-0:19484:21054 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1",
			[]want{info("rdma-gpu-train-worker-0", 19484, 21054, 0, "Trees [0] 1/-1/-1->0->-1", KindTrees)}},
		{"A9 torchrun rank tag", "[rank0]:costa-671b-5-worker-1:382:582 [0] NCCL INFO Channel 05/0 : 8[0] -> 15[7] via P2P/CUMEM",
			[]want{info("costa-671b-5-worker-1", 382, 582, 0, "Channel 05/0 : 8[0] -> 15[7] via P2P/CUMEM", KindConnection)}},
		{"A10 Ray", "(RayWorkerWrapper pid=50232, ip=10.1.0.67) gh-3714u07:50232:50232 [0] NCCL INFO cudaDriverVersion 12020",
			[]want{info("gh-3714u07", 50232, 50232, 0, "cudaDriverVersion 12020", KindOther)}},
		{"A10 Ray bare version", "(RayTrainWorker pid=355353) NCCL version 2.18.1+cuda12.1",
			[]want{{"", 0, 0, -1, false, "VERSION", "", "NCCL version 2.18.1+cuda12.1", KindVersion}}},
		{"A11 Python logging", "2025-11-12 20:41:43,851 - INFO - node-3:91:91 [2] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.3<0>",
			[]want{info("node-3", 91, 91, 2, "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.3<0>", KindNetDevices)}},
		{"A12 CloudWatch", "  | 2024-12-04T05:27:39.074Z | algo-1:18057:18130 [0] NCCL INFO Using network AWS Libfabric",
			[]want{info("algo-1", 18057, 18130, 0, "Using network AWS Libfabric", KindNetSelected)}},
		{"A12 CloudWatch glued timestamp and copy", "  | 2024-12-04T05:27:39.074Zalgo-1:18057:18130 [0] NCCL INFO Using network AWS Libfabric | algo-1:18057:18130 [0] NCCL INFO Using network AWS Libfabric",
			[]want{info("algo-1", 18057, 18130, 0, "Using network AWS Libfabric", KindNetSelected), info("algo-1", 18057, 18130, 0, "Using network AWS Libfabric", KindNetSelected)}},
		{"A13 web viewer", "pytorch card-16-final-4509-master-0:22789:28201 [0] NCCL INFO + NVL[264.0] - NVS/0",
			[]want{info("card-16-final-4509-master-0", 22789, 28201, 0, "+ NVL[264.0] - NVS/0", KindOther)}},
		{"A14 markdown quote", "> tj5-sc-ai-h800r-dev01:532:1764 [1] NCCL INFO Using network Socket",
			[]want{info("tj5-sc-ai-h800r-dev01", 532, 1764, 1, "Using network Socket", KindNetSelected)}},
		{"A14 markdown bold host", "**gpu2:4:5 [0] NCCL INFO Using network IB**",
			[]want{info("gpu2", 4, 5, 0, "Using network IB**", KindNetSelected)}},
		{"A14 stripped envelope", "NCCL INFO Using network IB",
			[]want{{"", 0, 0, -1, false, "INFO", "", "Using network IB", KindNetSelected}}},
		{"A14 trailing blanks and CR", "worker-node1:2304:2340 [5] NCCL INFO Using network IB  \r",
			[]want{info("worker-node1", 2304, 2340, 5, "Using network IB", KindNetSelected)}},
		{"A15 folded paste", "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC                    a:1:3 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC",
			[]want{info("a", 1, 2, 0, "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", KindConnection), info("a", 1, 3, 1, "Channel 00/0 : 1[1] -> 0[0] via P2P/IPC", KindConnection)}},
		{"A16 torn interleaving", "learnfair062:40515:40655 [6] NCCL INFO learnfair062:40517:40631 [7] NCCL INFO Ring 04 : 7[7] -> 3[3] via P2P/IPC",
			[]want{info("learnfair062", 40515, 40655, 6, "", KindOther), info("learnfair062", 40517, 40631, 7, "Ring 04 : 7[7] -> 3[3] via P2P/IPC", KindConnection)}},
		{"A17 empty host", ":22901:22901 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
			[]want{info("", 22901, 22901, 0, "Bootstrap : Using eth0:10.0.0.1<0>", KindBootstrap)}},
		{"A17 redacted host", "<cluster_name>:922:1149 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer <cluster_name>.ibnet<53735>",
			[]want{{"<cluster_name>", 922, 1149, 3, true, "WARN", "misc/socket.cc:49", "socketProgress: Connection closed by remote peer <cluster_name>.ibnet<53735>", KindWarn}}},
		{"negative device", "h:1:2 [-1] NCCL INFO Using network IB",
			[]want{info("h", 1, 2, -1, "Using network IB", KindNetSelected)}},
		{"A18 watchdog is foreign", "[rank7]:[E226 11:16:37.170295281 ProcessGroupNCCL.cpp:616] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5653, OpType=ALLREDUCE) ran for 600077 milliseconds before timing out.", nil},
		{"A18 libfabric is foreign", "libfabric:18058:1733290059::efa:ep_ctrl:efa_rdm_ep_set_shared_memory_permitted():1410<warn> FI_OPT_SHARED_MEMORY_PERMITTED set to false", nil},
		{"A18 vLLM is foreign", "INFO 01-29 05:10:25 pynccl.py:69] vLLM is using nccl==2.21.5", nil},
		{"word before marker is not NCCL's", "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseLine([]byte(tt.line))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d records %+v, want %d", len(got), got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Host != w.host || g.PID != w.pid || g.TID != w.tid || g.Dev != w.dev || g.Prefixed != w.prefixed ||
					g.Level != w.level || g.Source != w.source || g.Message != w.msg || g.Kind != w.kind {
					t.Errorf("record %d:\n got %+v\nwant %+v", i, g, w)
				}
			}
		})
	}
}

// TestParseLineCorpus checks that every NCCL line of the real logs yields
// records with an envelope, except the forms that have none.
func TestParseLineCorpus(t *testing.T) {
	for _, path := range corpus(t) {
		for i, line := range readLines(t, path) {
			recs := ParseLine([]byte(line))
			if !strings.Contains(line, "NCCL INFO") && !strings.Contains(line, "NCCL WARN") {
				continue
			}
			if len(recs) == 0 {
				t.Errorf("%s:%d: no record in %q", path, i+1, line)
				continue
			}
			for _, r := range recs {
				if !r.Prefixed && r.Level != "VERSION" && !envelopeStripped(line) {
					t.Errorf("%s:%d: envelope not found in %q", path, i+1, line)
				}
			}
		}
	}
}

// envelopeStripped reports whether a line carries no host:pid:tid
// envelope: it starts with "NCCL", or with only the device tag left of it
// (" [0] NCCL INFO …", a poster's edit in 096.log).
func envelopeStripped(line string) bool {
	l := strings.TrimSpace(line)
	if strings.HasPrefix(l, "[") {
		if e := strings.Index(l, "] "); e > 1 && strings.Trim(l[1:e], "0123456789") == "" {
			l = l[e+2:]
		}
	}
	return strings.HasPrefix(l, "NCCL")
}

// TestCouldStartTransport: a text whose first byte couldStartTransport
// refuses never looksLikeTransport once trimmed, whatever follows, so that
// skipping the look changes nothing. Every first byte is tried before
// transports, blanks and Unicode spaces.
func TestCouldStartTransport(t *testing.T) {
	tails := []string{"NET/IB/0/GDRDMA", "P2P/IPC", "SHM/direct/direct", "COLLNET/IB", "direct shared memory",
		" NET/Socket", "\u00a0NET/IB", "\u3000P2P/IPC/read", "*P2P/CUMEM*", "`SHM`", ""}
	for c := 0; c < 256; c++ {
		if couldStartTransport(byte(c)) {
			continue
		}
		for _, tail := range tails {
			f := append([]byte{byte(c)}, tail...)
			if looksLikeTransport(bytes.TrimSpace(f)) {
				t.Errorf("%q looks like a transport, but its first byte %#x is refused", f, c)
			}
		}
	}
	for _, f := range []string{"NET/IB/0", "P2P/IPC", "SHM/direct/direct", "COLLNET/IB", "direct shared memory", "*P2P/IPC*", "`SHM/direct`", " P2P/IPC", "\t\vNET/IB", "\u00a0SHM/direct/direct"} {
		if !couldStartTransport(f[0]) || !looksLikeTransport(bytes.TrimSpace([]byte(f))) {
			t.Errorf("%q: a transport refused", f)
		}
	}
	// Host names start with a letter or digit: all but seven are refused.
	for _, c := range []byte("abcefghijklmnopqrstuvwxyzABDEFGHIJKLMOQRTUVWXYZ0123456789") {
		if couldStartTransport(c) {
			t.Errorf("%q starts a host name, and the look is not spared for it", c)
		}
	}
}
