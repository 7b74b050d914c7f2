package spec

// Model is one simulated system: everything the NVML, sysfs and kernel
// simulations need to agree on, in one table, so a GPU's bus ID, its NUMA
// node's CPUs and its NIC are the same whichever collector reads them.
type Model struct {
	// Product is the DMI product name (/sys/class/dmi/id/product_name) and
	// Board the board name (board_name; "" writes none). The DGX A100's
	// are a real one's (dmidecode -t 1 and ipmitool fru in a public
	// capture, docs/checks.md "Platform profile"); no public capture of
	// the others' was found, so theirs is the product's own name, which
	// check/platform.go matches with spaces and hyphens ignored.
	Product string
	Board   string
	// BusIDs are the GPUs' PCI addresses in NVML order.
	BusIDs [8]string
	// CPUs lists, per socket, two [first,last] ranges: the cores, then their
	// hyperthread siblings (the numbering Linux gives Intel and AMD servers).
	CPUs [2][2][2]int

	NVLinks       int
	NVLinkVersion uint32
	// Fabric is NVSwitch fabric registration through NVML (Hopper and later).
	Fabric bool

	// TotalMiB is the framebuffer NVML reports as total (0: the mock's own);
	// a real H100 80GB shows 81,559 MiB (../shared/realdata/nvsmi captures).
	TotalMiB     uint64
	PowerLimitMW uint32
	IdleMW       uint32
	ReservedMiB  uint64
	SlowdownC    uint32
	ShutdownC    uint32
	PCIeGen      int

	GPUDevice uint16 // PCI device ID of the GPU
	NICDevice uint16 // PCI device ID of the ConnectX HCA
	HCAType   string
	FW        string
	Rate      string // IB port rate as sysfs spells it
	Driver    string // NVIDIA driver version
	Kernel    string // kernel release
}

// Bus IDs: HGX H100 from a real nvidia-smi -q (realdata/nvsmi/gpud_h100x8_535.161.08);
// DGX A100 from NVIDIA's DGX A100 user guide; H200/B200 reuse the HGX layout.
var hgxBusIDs = [8]string{"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0", "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0"}

var sapphireRapids112 = [2][2][2]int{{{0, 55}, {112, 167}}, {{56, 111}, {168, 223}}}

var table = map[string]Model{
	"dgx-h100": {Product: "DGX H100", BusIDs: hgxBusIDs, CPUs: sapphireRapids112,
		NVLinks: 18, NVLinkVersion: 4, Fabric: true, TotalMiB: 81559,
		PowerLimitMW: 700000, IdleMW: 67740, ReservedMiB: 551, SlowdownC: 90, ShutdownC: 92, PCIeGen: 5,
		GPUDevice: 0x2330, NICDevice: 0x1021, HCAType: "MT4129", FW: "28.39.1002", Rate: "400 Gb/sec (4X NDR)",
		Driver: "550.54.15", Kernel: "5.15.0-1042-nvidia"},
	"dgx-h200": {Product: "DGX H200", BusIDs: hgxBusIDs, CPUs: sapphireRapids112,
		NVLinks: 18, NVLinkVersion: 4, Fabric: true,
		PowerLimitMW: 700000, IdleMW: 74000, ReservedMiB: 595, SlowdownC: 90, ShutdownC: 92, PCIeGen: 5,
		GPUDevice: 0x2335, NICDevice: 0x1021, HCAType: "MT4129", FW: "28.39.1002", Rate: "400 Gb/sec (4X NDR)",
		Driver: "550.54.15", Kernel: "5.15.0-1042-nvidia"},
	"dgx-b200": {Product: "DGX B200", BusIDs: hgxBusIDs, CPUs: sapphireRapids112,
		NVLinks: 18, NVLinkVersion: 5, Fabric: true,
		PowerLimitMW: 1000000, IdleMW: 140000, ReservedMiB: 1200, SlowdownC: 90, ShutdownC: 95, PCIeGen: 5,
		GPUDevice: 0x2901, NICDevice: 0x1021, HCAType: "MT4129", FW: "28.41.1000", Rate: "400 Gb/sec (4X NDR)",
		Driver: "560.28.03", Kernel: "6.8.0-1015-nvidia"},
	"dgx-a100": {Product: "DGXA100 920-23687-2531-001", Board: "DGXA100",
		BusIDs:  [8]string{"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0", "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"},
		CPUs:    [2][2][2]int{{{0, 63}, {128, 191}}, {{64, 127}, {192, 255}}},
		NVLinks: 12, NVLinkVersion: 3, Fabric: false,
		PowerLimitMW: 400000, IdleMW: 52000, ReservedMiB: 0, SlowdownC: 89, ShutdownC: 92, PCIeGen: 4,
		GPUDevice: 0x20b0, NICDevice: 0x101b, HCAType: "MT4123", FW: "20.39.1002", Rate: "200 Gb/sec (4X HDR)",
		Driver: "550.54.15", Kernel: "5.15.0-1042-nvidia"},
}

// Lookup returns the model of a name in Models.
func Lookup(name string) (Model, bool) {
	m, ok := table[name]
	return m, ok
}
