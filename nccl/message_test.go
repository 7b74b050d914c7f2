package nccl

import (
	"bytes"
	"testing"
)

// TestConnectionGrammar covers every era of connection line (FORMATS.md D).
func TestConnectionGrammar(t *testing.T) {
	type want struct {
		ch, idx, from, to int64
		dir               connDir
		class             trClass
		net               string
		netDev            int64
		gdr, shared       bool
		proxy, pci        bool
		name              string
	}
	tests := []struct {
		msg  string
		want want
	}{
		{"Ring 00 : 0 -> 1 [send] via NET/Socket/0", want{0, -1, 0, 1, dirSend, trNET, "Socket", 0, false, false, false, false, "NET/Socket/0"}},
		{"Ring 00 : 6 -> 2 [receive] via NET/IB/0", want{0, -1, 6, 2, dirRecv, trNET, "IB", 0, false, false, false, false, "NET/IB/0"}},
		{"Ring 00 : 7 -> 8 [receive] via NET/AWS Libfabric/0", want{0, -1, 7, 8, dirRecv, trNET, "AWS Libfabric", 0, false, false, false, false, "NET/AWS Libfabric/0"}},
		{"Ring 00 : 3[3] -> 1[1] via P2P/IPC", want{0, -1, 3, 1, dirNone, trP2P, "", -1, false, false, false, false, "P2P/IPC"}},
		{"Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC", want{0, -1, 155, 157, dirNone, trP2P, "", -1, false, false, false, false, "P2P/IPC"}},
		{"Ring 00 : 3[b0] -> 0[80] via direct shared memory", want{0, -1, 3, 0, dirNone, trSHM, "", -1, false, false, false, false, "direct shared memory"}},
		{"Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA", want{1, -1, 2, 0, dirRecv, trNET, "IB", 5, true, false, false, false, "NET/IB/5/GDRDMA"}},
		{"Channel 02 : 13[901d0] -> 4[901c0] [receive] via NET/AWS Libfabric/2/GDRDMA", want{2, -1, 13, 4, dirRecv, trNET, "AWS Libfabric", 2, true, false, false, false, "NET/AWS Libfabric/2/GDRDMA"}},
		{"Channel 01 : 14[c9000] -> 13[92000] via P2P/direct pointer/read", want{1, -1, 14, 13, dirNone, trP2P, "", -1, false, false, false, false, "P2P/direct pointer/read"}},
		{"Channel 03/0 : 19[201d0] -> 26[201c0] [send] via NET/AWS Libfabric/0/GDRDMA", want{3, 0, 19, 26, dirSend, trNET, "AWS Libfabric", 0, true, false, false, false, "NET/AWS Libfabric/0/GDRDMA"}},
		{"Channel 07/0 : 15[7] -> 7[7] [receive] via NET/IBext_v8/7/GDRDMA", want{7, 0, 15, 7, dirRecv, trNET, "IBext_v8", 7, true, false, false, false, "NET/IBext_v8/7/GDRDMA"}},
		{"Channel 04/1 : 15[7] -> 2[2] [receive] via NET/AWS Libfabric/1/GDRDMA/Shared", want{4, 1, 15, 2, dirRecv, trNET, "AWS Libfabric", 1, true, true, false, false, "NET/AWS Libfabric/1/GDRDMA/Shared"}},
		{"Channel 07 : 2[6] -> 3[7] via SHM/direct/direct", want{7, -1, 2, 3, dirNone, trSHM, "", -1, false, false, false, false, "SHM/direct/direct"}},
		{"Channel 05/0 : 8[0] -> 15[7] via P2P/CUMEM/read", want{5, 0, 8, 15, dirNone, trP2P, "", -1, false, false, false, false, "P2P/CUMEM/read"}},
		{"Channel 02/0 : 1[1] -> 9[1] [send] via NET/IB/1(0)/GDRDMA(PCI)/Shared", want{2, 0, 1, 9, dirSend, trNET, "IB", 1, true, true, true, true, "NET/IB/1(0)/GDRDMA(PCI)/Shared"}},
		{"Channel 00/0 : 3[3] -> 5[5] via P2P/indirect/4[4]", want{0, 0, 3, 5, dirNone, trP2P, "", -1, false, false, false, false, "P2P/indirect/4[4]"}},
		{"CollNet 00/0 : 3 [send] via COLLNET/SHARP/0/GDRDMA", want{0, 0, 3, -1, dirSend, trCollNet, "SHARP", 0, true, false, false, false, "COLLNET/SHARP/0/GDRDMA"}},
		{"Channel 00/0 : 0[0] -> 1[1] via P2P/IPC [22/1819]", want{0, 0, 0, 1, dirNone, trP2P, "", -1, false, false, false, false, "P2P/IPC"}},
		{"Channel 01/0 : 1[2a000] -> 8[27000] [send] via NET/Socket/0", want{1, 0, 1, 8, dirSend, trNET, "Socket", 0, false, false, false, false, "NET/Socket/0"}},
	}
	for _, tt := range tests {
		var c connInfo
		if !parseConn([]byte(tt.msg), &c) {
			t.Errorf("%q: not parsed", tt.msg)
			continue
		}
		w := tt.want
		got := want{c.channel, c.connIdx, c.from, c.to, c.dir, c.tr.class, string(c.tr.net), c.tr.netDev, c.tr.gdr, c.tr.shared, c.tr.proxy, c.tr.gdrPCI, string(c.tr.name)}
		if got != w {
			t.Errorf("%q:\n got %+v\nwant %+v", tt.msg, got, w)
		}
	}
	for _, msg := range []string{
		"Ring 00 : 7 -> 0 -> 1",                   // 2.10+ ring neighbours
		"Channel 00/02 :    0   1   2   3",        // ring order
		"Channel 00 :    0   1   3   2   6   4",   // 2.4 ring order
		"Channel 00/0 : 0[0] -> 1[1] via",         // folded before the transport
		"Channel xx/0 : 0[0] -> 1[1] via P2P/IPC", // damaged
		"Ring 00 : a -> b via NET/IB/0",
	} {
		var c connInfo
		if parseConn([]byte(msg), &c) && c.tr.class != trOther {
			t.Errorf("%q parsed as a connection: %+v", msg, c)
		}
	}
}

// TestCommGrammar covers the communicator lines of every era (FORMATS.md E).
func TestCommGrammar(t *testing.T) {
	tests := []struct {
		msg                         string
		ptr                         uint64
		rank, nranks, nnodes, local int64
		cudaDev                     int64
		commID                      uint64
		state                       commState
		timings                     bool
	}{
		{"rank 0 nranks 8", 0, 0, 8, -1, -1, -1, 0, commNone, false},
		{"comm 0x7fd01805a260 rank 1 nranks 8", 0x7fd01805a260, 1, 8, -1, -1, -1, 0, commNone, false},
		{"comm 0x7f145c002250 rank 17 nranks 64 cudaDev 0 nvmlDev 0 - Init COMPLETE", 0x7f145c002250, 17, 64, -1, -1, 0, 0, commComplete, false},
		{"comm 0x7f4ce0006640 rank 5 nranks 16 cudaDev 5 busId 89000 - Init COMPLETE", 0x7f4ce0006640, 5, 16, -1, -1, 5, 0, commComplete, false},
		{"comm 0x55555d812aa0 rank 11 nranks 16 cudaDev 3 nvmlDev 3 busId 4e000 commId 0xf03f81dc1a49efab - Init START", 0x55555d812aa0, 11, 16, -1, -1, 3, 0xf03f81dc1a49efab, commStart, false},
		{"ncclCommInitRank comm 0x8d57d40 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 7000 commId 0x49bbd7790311d5eb - Init COMPLETE", 0x8d57d40, 0, 16, -1, -1, 0, 0x49bbd7790311d5eb, commComplete, false},
		{"comm 0x8ec0ac0 rank 6 nRanks 16 nNodes 2 localRanks 8 localRank 6 MNNVL 0", 0x8ec0ac0, 6, 16, 2, 8, -1, 0, commNone, false},
		{"bootstrapSplit: comm 0x7f5d10e6e7d0 parent 0x56224e876520 rank 0 nranks 4 color 116666945 key 0 prev 3 next 1 - DONE", 0x7f5d10e6e7d0, 0, 4, -1, -1, -1, 0, commNone, false},
		{"Init timings: rank 2 nranks 16 total 1.08 (kernels 0.51, bootstrap 0.22)", 0, 2, 16, -1, -1, -1, 0, commNone, true},
		{"ncc1CommInitRank comm 0x7bf8870 rank 13 nranlks 16 cudaDev 5 nvmlDev 5 busId 97000 commId 0xa1ffb74daef8a940 - Init COMPLETE", 0x7bf8870, 13, 16, -1, -1, 5, 0xa1ffb74daef8a940, commComplete, false},
		{"ncclCommSplit comm 0x55d3 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 48000 commId 0x7a00 parent 0x55d1 splitCount 1 color 1 key 3 - Init COMPLETE", 0x55d3, 3, 8, -1, -1, 3, 0x7a00, commComplete, false},
	}
	for _, tt := range tests {
		m := []byte(tt.msg)
		var c commInfo
		if !isCommLine(m) || !parseComm(m, &c) {
			t.Errorf("%q: not a communicator line", tt.msg)
			continue
		}
		if c.ptr != tt.ptr || c.rank != tt.rank || c.nranks != tt.nranks || c.nnodes != tt.nnodes || c.localRanks != tt.local ||
			c.cudaDev != tt.cudaDev || c.commID != tt.commID || c.state != tt.state || c.timings != tt.timings {
			t.Errorf("%q: got %+v", tt.msg, c)
		}
	}
	for _, msg := range []string{"NVLS comm 0x7f1928e6e060 headRank 3 nHeads 4", "cudaDriverVersion 12040", "ncclTopoGetCpuAffinity: Affinity for GPU 1 is 24-46"} {
		var ev event
		if classify([]byte(msg), &ev) == KindComm {
			t.Errorf("%q classified as a communicator line", msg)
		}
	}
}

// TestGDRGrammar covers the GPUDirect RDMA decision lines (FORMATS.md C).
func TestGDRGrammar(t *testing.T) {
	tests := []struct {
		msg               string
		net               string
		enabled           bool
		hca               int64
		name              string
		noModule, distant bool
	}{
		{"NET/IB : GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)", "IB", false, 0, "", false, true},
		{"NET/Socket : GPU Direct RDMA Disabled for GPU 0[0] / HCA 0 (distance 2 >= 2)", "Socket", false, 0, "", false, true},
		{"GPU Direct RDMA Disabled for GPU ca000 / HCA 0 (distance 7 > 4)", "", false, 0, "", false, true},
		{"GPU Direct RDMA Enabled for GPU 1b000 / HCA 3 (distance 4 <= 4), read 1", "", true, 3, "", false, true},
		{"NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)", "IB", false, 1, "mlx5_1", true, false},
		{"NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'", "IB", false, 0, "mlx5_0", false, false},
		{"NET/IB : GPU Direct RDMA Enabled for HCA 3 'mlx5_5'", "IB", true, 3, "mlx5_5", false, false},
		{"NET/Socket : GPU Direct RDMA Disabled for HCA 0 'lo'", "Socket", false, 0, "lo", false, false},
	}
	for _, tt := range tests {
		var ev event
		if k := classify([]byte(tt.msg), &ev); k != KindGDR {
			t.Errorf("%q: kind %v", tt.msg, k)
			continue
		}
		g := ev.gdr
		if string(g.net) != tt.net || g.enabled != tt.enabled || g.hca != tt.hca || string(g.hcaName) != tt.name || g.noModule != tt.noModule || g.distance != tt.distant {
			t.Errorf("%q: got %+v", tt.msg, g)
		}
	}
}

// TestNetworkLines covers network selection, devices, plugins and env
// echoes (FORMATS.md B).
func TestNetworkLines(t *testing.T) {
	tests := []struct {
		msg   string
		kind  Kind
		net   string // ev.net, where the kind has one
		class netClass
	}{
		{"NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>", KindNetDevices, "IB", netIB},
		{"NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB enp220s0np0:11.1.128.136<0>", KindNetDevices, "IB", netIB},
		{"NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [1]={[0] mlx5_4:1/RoCE} [RO]; OOB bond0.526:10.0.0.1<0>", KindNetDevices, "IB", netIB},
		{"NET/IB: [0] mlx5_1:1/IB", KindNetDevices, "IB", netIB},
		{"NET/IB : No device found.", KindNoDevice, "IB", netIB},
		{"NET/Socket : Using [0]ens3:172.31.12.210<0>", KindNetDevices, "Socket", netSocket},
		{"Using network IB", KindNetSelected, "IB", netIB},
		{"Using network IBext_v8", KindNetSelected, "IBext_v8", netIB},
		{"Using network Socket", KindNetSelected, "Socket", netSocket},
		{"Using network AWS Libfabric", KindNetSelected, "AWS Libfabric", netOFI},
		{"Using network Libfabric", KindNetSelected, "Libfabric", netOFI},
		{"Using internal Network IB", KindNetSelected, "IB", netIB},
		{"NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v5)", KindNetPlugin, "NCCL RDMA Plugin", netIB},
		{"NET/Plugin: Loaded net plugin FastSocket (v4)", KindNetPlugin, "FastSocket", netFastSocket},
		{"P2P plugin v8 IBext_v8", KindNetPlugin, "IBext_v8", netIB},
		{"NET/OFI Selected Provider is efa (found 16 nics)", KindNetMention, "OFI", netOFI},
		{"NET/FastSocket : Flow placement enabled.", KindNetMention, "FastSocket", netFastSocket},
		{"NET/IB : Using interface enp1s0f0 for sideband communication", KindNetMention, "IB", netIB},
		{"CUDA Dev 0[0], Socket NIC distance :  PHB", KindNetMention, "Socket", netSocket},
		{"CUDA Dev 1[1], AWS Libfabric NIC distance :  SYS", KindNetMention, "AWS Libfabric", netOFI},
		{"NET/Socket : 1 interfaces found", KindOther, "", netUnknown},
		{"NET/Plugin : No plugin found (libnccl-net.so), using internal implementation", KindOther, "", netUnknown},
		{"NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.", KindOther, "", netUnknown},
		{"Using non-device net plugin version 0", KindOther, "", netUnknown},
	}
	for _, tt := range tests {
		var ev event
		k := classify([]byte(tt.msg), &ev)
		if k != tt.kind {
			t.Errorf("%q: kind %v, want %v", tt.msg, k, tt.kind)
			continue
		}
		if k == KindOther {
			continue
		}
		if string(ev.net) != tt.net {
			t.Errorf("%q: net %q, want %q", tt.msg, ev.net, tt.net)
		}
		c := classifyNet(ev.net)
		if k == KindNetPlugin {
			c = classifyPlugin(ev.net)
		}
		if c != tt.class {
			t.Errorf("%q: class %v, want %v", tt.msg, c, tt.class)
		}
	}
}

func TestDeviceLists(t *testing.T) {
	tests := []struct {
		list     string
		n        int
		loopback bool
	}{
		{"[0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/RoCE ; OOB eth0:10.100.62.64<0>", 3, false},
		{"[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [1]={[0] mlx5_4:1/RoCE, [1] mlx5_5:1/RoCE} [RO]; OOB bond0:1.2.3.4<0>", 2, false},
		{"[0]lo:127.0.0.1<0>", 1, true},
		{"lo:127.0.0.1<0>", 1, true},
		{"eth0:10.200.5.135<0>", 1, false},
		{"[0]ibs85f0:192.168.1.14<0> [1]ib0:192.168.1.15<0>", 2, false},
		{"[0]enp41s0f1:<0>", 1, false},
		{"[0]enp7s0:10.10.112.56<0> [1]vethee19468:fe80::4463:98ff:fe1a:66c9%vethee19468<0>", 2, false},
	}
	for _, tt := range tests {
		d := parseDevList([]byte(tt.list))
		if d.n != tt.n || d.loopback != tt.loopback {
			t.Errorf("%q: got %+v, want n=%d loopback=%v", tt.list, d, tt.n, tt.loopback)
		}
	}
}

func TestEnvEchoes(t *testing.T) {
	tests := []struct{ msg, name, value string }{
		{"NCCL_IB_DISABLE set by environment to 1.", "NCCL_IB_DISABLE", "1"},
		{"NCCL_SOCKET_IFNAME set by environment to eth0", "NCCL_SOCKET_IFNAME", "eth0"},
		{"NCCL_SOCKET_IFNAME set to enp9s0np0", "NCCL_SOCKET_IFNAME", "enp9s0np0"},
		{"NCCL_IB_HCA set to mlx5_4", "NCCL_IB_HCA", "mlx5_4"},
		{"NCCL_NET_GDR_LEVEL set by environment to PHB", "NCCL_NET_GDR_LEVEL", "PHB"},
		{"NCCL_IB_HCA set by environment to =mlx5_0:1,mlx5_1:1", "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"},
	}
	for _, tt := range tests {
		var ev event
		if k := classify([]byte(tt.msg), &ev); k != KindEnv {
			t.Errorf("%q: kind %v", tt.msg, k)
			continue
		}
		if string(ev.env.name) != tt.name || string(ev.env.value) != tt.value {
			t.Errorf("%q: got %s=%q", tt.msg, ev.env.name, ev.env.value)
		}
	}
}

func TestTraces(t *testing.T) {
	tests := []struct {
		msg    string
		ok     bool
		loc    string
		rc     int64
		thread string
	}{
		{"proxy.cc:878 -> 6 [Progress Thread]", true, "proxy.cc:878", 6, "Progress Thread"},
		{"group.cc:72 -> 3 [Async thread]", true, "group.cc:72", 3, "Async thread"},
		{"transport/net.cc:1302 -> 6", true, "transport/net.cc:1302", 6, ""},
		{"include/net.h:24 -> 2", true, "include/net.h:24", 2, ""},
		{"init.cc:1798 Cuda Host Alloc Size 4 pointer 0x82fa00000", false, "", 0, ""},
		{"AllReduce: opCount 3 sendbuff 0x7f00", false, "", 0, ""},
		{"Trees [0] 26->25->-1/-1/-1", false, "", 0, ""},
	}
	for _, tt := range tests {
		var tr traceInfo
		ok := parseTrace([]byte(tt.msg), &tr)
		if ok != tt.ok || ok && (string(tr.loc) != tt.loc || tr.rc != tt.rc || string(tr.thread) != tt.thread) {
			t.Errorf("%q: got ok=%v %+v", tt.msg, ok, tr)
		}
	}
}

func TestClassifyMisc(t *testing.T) {
	tests := []struct {
		msg  string
		kind Kind
	}{
		{"Bootstrap: Using enp9s0np0:10.99.0.2<0>", KindBootstrap},
		{"Bootstrap : Using [0]lo:127.0.0.1<0>", KindBootstrap},
		{"Bootstrap timings total 0.000778 (create 0.000034)", KindOther},
		{"16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p channels per peer", KindChannels},
		{"Connected all rings, use ring PXN 0 GDR 1", KindRingsConnected},
		{"Failed to open libibverbs.so[.1]", KindIBVerbsMissing},
		{"DMA-BUF is available on GPU device 2", KindDMABuf},
		{"Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so", KindNetPlugin},
		{"NCCL version 2.21.5+cuda12.4", KindVersion},
		{"4 Bytes -> Algo 0 proto 0 time 25.200462", KindOther},
		{"", KindOther},
	}
	for _, tt := range tests {
		var ev event
		if k := classify([]byte(tt.msg), &ev); k != tt.kind {
			t.Errorf("%q: kind %v, want %v", tt.msg, k, tt.kind)
		}
	}
	var ev event
	classify([]byte("24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels"), &ev)
	if ev.collnet != 24 || ev.nvls != 0 {
		t.Errorf("channel counts: collnet %d nvls %d", ev.collnet, ev.nvls)
	}
}

// TestHasPrefix holds hasPrefix to bytes.HasPrefix, on prefixes of every
// length around the 16 bytes the compiler compares inline.
func TestHasPrefix(t *testing.T) {
	const text = "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"
	for n := 0; n <= len(text); n++ {
		for k := 0; k <= 24 && k <= len(text); k++ {
			for _, s := range []string{text[:k], text[:k] + "x", "x" + text[:k]} {
				b := []byte(text[:n])
				if got, want := hasPrefix(b, s), bytes.HasPrefix(b, []byte(s)); got != want {
					t.Fatalf("hasPrefix(%q, %q) = %v, want %v", b, s, got, want)
				}
			}
		}
	}
}
