package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
	toposim "github.com/gpuprobe/gpuprobe/sim/topo"
)

func TestTopoSimulated(t *testing.T) {
	code, out, errs := runCLI(t, "topo", "--simulate", "dgx-h100")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"*** SIMULATED: dgx-h100",
		"GPU0     X      NV18    NV18    NV18    NV18    NV18    NV18    NV18    PIX     PIX     NODE    NODE    SYS",
		"NIC7    SYS     SYS     SYS     SYS     NODE    NODE    PIX     PIX",
		"  NIC7: mlx5_7",
		"Virtualization: bare metal",
		"none redirects P2P",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTopoJSON(t *testing.T) {
	code, out, errs := runCLI(t, "topo", "--simulate", "dgx-h100:acs-redirect", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var doc topoDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Simulated != "dgx-h100:acs-redirect" || len(doc.Matrix.Rows) != 16 || doc.Matrix.Rows[0].Cells[8] != "PIX" ||
		doc.Topology == nil || !doc.Topology.Bridge("0000:17:00.0").ACS.Redirect || doc.Topology.SysfsRoot != "simulated:/sys" {
		t.Errorf("document: %s", out[:min(len(out), 2000)])
	}
}

// This machine's own /sys (on CI: a VM with virtio devices, no GPU, no IB):
// topo and the topology checks report cleanly.
func TestTopoRealMachine(t *testing.T) {
	if os.Getenv("GPUPROBE_SKIP_REAL_SYSFS") == "1" {
		t.Skip("GPUPROBE_SKIP_REAL_SYSFS=1")
	}
	code, out, errs := runCLI(t, "topo")
	if code != 0 || !strings.Contains(out, "Virtualization:") {
		t.Fatalf("topo: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "check", "--checks", "pcie,iommu,gdr,ib,topo", "--format", "json")
	if code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, out, errs)
	}
	for _, r := range decode(t, out).Checks {
		if r.Status == "error" || r.Status == "fail" {
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Summary)
		}
	}
}

// A captured tree is judged as the machine it came from: this CI host is
// a VM, the tree is a bare-metal DGX with ACS redirect on a switch port, so
// pcie.acs fails there, naming the bridge.
func TestCheckCapturedTree(t *testing.T) {
	spec, _ := simulate.Parse("dgx-h100:acs-redirect=0000:c9:01.0,ib-down=mlx5_6")
	tr, err := toposim.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tr.Write(dir); err != nil {
		t.Fatal(err)
	}
	args := []string{"check", "--path.sysfs", filepath.Join(dir, "sys"), "--path.procfs", filepath.Join(dir, "proc"),
		"--checks", "pcie,gdr,ib,topo", "--format", "json"}
	code, out, errs := runCLI(t, args...)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	status := map[string]string{}
	for _, r := range decode(t, out).Checks {
		status[r.ID] = string(r.Status)
		if r.ID == "pcie.acs" && !strings.Contains(r.Remedy, "setpci -s 0000:c9:01.0") {
			t.Errorf("pcie.acs remedy %q", r.Remedy)
		}
	}
	if status["pcie.acs"] != "fail" || status["ib.ports"] != "fail" || status["gdr.peermem"] != "pass" || status["topo.numa"] != "pass" {
		t.Errorf("statuses %v", status)
	}
	// --virt=vm overrides the tree: redirect is then expected.
	code, out, _ = runCLI(t, append(args, "--virt", "vm", "--skip", "ib")...)
	if code != 0 || !strings.Contains(out, "expected in a virtual machine") {
		t.Errorf("--virt=vm: exit %d\n%s", code, out)
	}
}

func TestTopoCapture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	code, out, errs := runCLI(t, "topo", "--simulate", "dgx-h100:acs-redirect=0000:49:00.0", "--capture", dir)
	if code == 0 {
		t.Fatalf("an upstream port (no ACS) was accepted as the fault's bridge\n%s%s", out, errs)
	}
	code, out, errs = runCLI(t, "topo", "--simulate", "dgx-h100:acs-redirect=0000:4a:02.0", "--capture", dir)
	if code != 0 || !strings.Contains(out, "--path.sysfs "+filepath.Join(dir, "sys")) {
		t.Fatalf("capture: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "topo", "--path.sysfs", filepath.Join(dir, "sys"), "--path.procfs", filepath.Join(dir, "proc"), "-v")
	if code != 0 || !strings.Contains(out, "redirecting P2P: 0000:4a:02.0") || !strings.Contains(out, "0000:4a:02.0 [ACS redirect]") || strings.Contains(out, "SIMULATED") {
		t.Errorf("topo of the capture: exit %d\n%s%s", code, out, errs)
	}
}

// The bug: `topo --simulate ... --capture DIR` wrote through links planted
// in DIR as root. A DIR that holds anything is refused, naming it and why.
func TestTopoCaptureRefusesPlantedLinks(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o644)
	dir := filepath.Join(base, "node")
	os.MkdirAll(filepath.Join(dir, "proc"), 0o755)
	os.Symlink(victim, filepath.Join(dir, "proc", "cpuinfo"))
	code, out, errs := runCLI(t, "topo", "--simulate", "dgx-h100", "--capture", dir)
	if code == 0 || !strings.Contains(errs, dir+" is not empty") {
		t.Errorf("capture into a directory with a planted link: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("the link's target was overwritten: %q", b)
	}
}
