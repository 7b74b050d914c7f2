// Package topo reads a node's PCIe, NUMA, InfiniBand and GPUDirect set-up
// from sysfs and procfs alone (no cgo, no NVML), so that it runs on any
// machine and on any captured tree (--path.sysfs, --path.procfs).
//
// Collect takes the GPUs' PCI bus IDs (and NVLink counts) from NVML when the
// caller has them and discovers GPUs by PCI vendor and class when it has
// not. It classifies every GPU↔GPU, GPU↔NIC and NIC↔NIC path in the
// vocabulary of `nvidia-smi topo -m` (NV#, PIX, PXB, PHB, NODE, SYS), decodes
// the PCIe ACS capability of every bridge on those paths, and records
// virtualisation, IOMMU mode and the GPUDirect RDMA peer-memory paths. The
// result is plain data: the checks judge it, topostate.Matrix renders it.
package topo
