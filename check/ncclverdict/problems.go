package ncclverdict

import (
	"strconv"
	"strings"
)

// ProblemOptions are the expectations a verdict is judged against.
type ProblemOptions struct {
	// ExpectGDR makes inter-node traffic without GPUDirect RDMA a problem,
	// and so is a log that cannot confirm it.
	ExpectGDR bool
}

// Problem is something in a verdict that should fail a run: the exit code
// of `gpuprobe nccl analyze|run` and the nccl.transport check come from it.
type Problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Remedy  string `json:"remedy,omitempty"`
}

// Problems lists what is wrong with the verdict, most important first. An
// empty list means healthy.
func (v *Verdict) Problems(opts ProblemOptions) []Problem {
	var out []Problem
	add := func(code, msg, remedy string) { out = append(out, Problem{Code: code, Message: msg, Remedy: remedy}) }
	switch v.InterNode {
	case InterSocket:
		if v.TCPFallback {
			add("tcp_fallback", v.Summary, remedySocket(v))
		} else if opts.ExpectGDR {
			add("no_gdr", v.Summary, "this network plugin moves data over TCP; GPUDirect RDMA needs an RDMA NIC (InfiniBand, RoCE or EFA) and its NCCL network module")
		}
	case InterIB:
		if opts.ExpectGDR {
			add("no_gdr", v.Summary, remedyGDR)
		}
	case InterOFI:
		if opts.ExpectGDR && (v.GDR == nil || !*v.GDR) {
			add("no_gdr", v.Summary, "EFA without GPUDirect RDMA: use an instance type with GPUDirect RDMA support (p4d, p5), a recent aws-ofi-nccl and FI_EFA_USE_DEVICE_RDMA=1")
		}
	case InterUnknown:
		if opts.ExpectGDR {
			add("gdr_unconfirmed", "GPUDirect RDMA could not be confirmed: "+v.Missing,
				"rerun through `gpuprobe nccl run --expect-gdr -- CMD`, which sets NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET")
		}
	}
	for _, w := range v.Warnings {
		switch w.Code {
		case "version_mismatch", "net_mismatch":
			add(w.Code, w.Message, w.Hint)
		}
	}
	if n := len(v.Errors); n > 0 {
		e := v.Errors[0]
		msg := e.Message
		if n > 1 {
			msg += " (and " + strconv.Itoa(n-1) + " more kinds of error)"
		}
		add("nccl_errors", msg, e.Hint)
	}
	return out
}

// Healthy reports whether the verdict shows no problem.
func (v *Verdict) Healthy(expectGDR bool) bool {
	return len(v.Problems(ProblemOptions{ExpectGDR: expectGDR})) == 0
}

const remedyGDR = "GPUDirect RDMA needs: nvidia-peermem loaded (or DMA-BUF: driver >= 515, kernel >= 5.12, NCCL >= 2.13, NCCL_DMABUF_ENABLE=1); " +
	"PCIe ACS off on the switches between GPU and NIC (gpuprobe check pcie.acs); the IOMMU off or in passthrough; " +
	"the GPU and NIC under the same PCIe switch, or NCCL_NET_GDR_LEVEL raised (PHB, SYS) where the platform allows it"

func remedySocket(v *Verdict) string {
	if v.TCPFallbackReason != nil {
		switch {
		case containsAny(v.TCPFallbackReason.Text, "NCCL_IB_DISABLE"):
			return "unset NCCL_IB_DISABLE (it is set to 1) so that NCCL uses InfiniBand/RoCE"
		case containsAny(v.TCPFallbackReason.Text, "No device found", "libibverbs"):
			return "NCCL saw no usable HCA: make /dev/infiniband and rdma-core (libibverbs) available in the job or container, check `ibv_devinfo` shows ports ACTIVE, and that NCCL_IB_HCA (if set) names existing HCAs"
		}
	}
	return "make NCCL use InfiniBand/RoCE: check NCCL_IB_DISABLE, NCCL_NET and NCCL_IB_HCA, that the HCAs are visible in the job (ibv_devinfo), and set NCCL_SOCKET_IFNAME only for the bootstrap network"
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
