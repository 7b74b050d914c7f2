package check

import (
	"fmt"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// SXIDAction is NVIDIA's recommended action for an NVSwitch SXid, as the
// third column of NVSentinel's sxiderrorsmapping.csv names it.
type SXIDAction string

// Actions, as NVIDIA names them.
const (
	SXActionIgnore        SXIDAction = "IGNORE"
	SXActionResetFabric   SXIDAction = "RESET_FABRIC"
	SXActionResetGPU      SXIDAction = "RESET_GPU"
	SXActionCheckThermals SXIDAction = "CHECK_THERMALS"
	SXActionCheckFMConfig SXIDAction = "CHECK_FM_CONFIG"
	// SXActionNVLinkWorkflow keeps NVIDIA's spelling ("POTENTIALY").
	SXActionNVLinkWorkflow      SXIDAction = "WORKFLOW_NVLINK_POTENTIALY_FATAL_ERR"
	SXActionInvestigateLinkSI   SXIDAction = "INVESTIGATE_LINK_SI"
	SXActionReportIssue         SXIDAction = "UNEXPECTED_ERR_REPORT_ISSUE"
	SXActionRunFieldDiag        SXIDAction = "RUN_FIELDDIAG"
	SXActionCheckLinkMechanical SXIDAction = "CHECK_LINK_MECHANICAL_CONNECTIONS"
	// SXActionReportIssueShort is the one row (28006, no name) that says
	// REPORT_ISSUE rather than UNEXPECTED_ERR_REPORT_ISSUE.
	SXActionReportIssueShort SXIDAction = "REPORT_ISSUE"
)

// nvidiaSXID is one row of NVIDIA's table.
type nvidiaSXID struct {
	name   string
	action SXIDAction
	fatal  bool // the FATAL/NONFATAL column
}

// sxidActionRemedy says each FATAL action in gpuprobe's words; every one
// starts by draining the node, as the fabric (or a GPU behind it) is down.
var sxidActionRemedy = map[SXIDAction]string{
	SXActionResetFabric:         "drain the node; reset the NVSwitch fabric: stop nvidia-fabricmanager, reset the GPUs and NVSwitches (or reboot), start nvidia-fabricmanager",
	SXActionResetGPU:            "drain the node; reset the GPU behind the failing switch link (nvidia-smi -r, or reboot) and restart nvidia-fabricmanager",
	SXActionCheckThermals:       "drain the node; check the NVSwitch and transceiver cooling and temperatures (airflow, fans, BMC sensors), then reset the fabric",
	SXActionCheckFMConfig:       "drain the node; check the Fabric Manager configuration and partition setup (fabricmanager.cfg, the Fabric Manager log), then reset the fabric",
	SXActionNVLinkWorkflow:      "drain the node; find whether the port is an access or a trunk port (Fabric Manager log), reset the GPUs and NVSwitches (or reboot); RMA if it recurs",
	SXActionInvestigateLinkSI:   "drain the node; investigate the NVLink's signal integrity (nvlink.errors counters, the link's cables and connectors), then reset the fabric",
	SXActionReportIssue:         "drain the node; collect nvidia-bug-report.sh and report the SXid to NVIDIA",
	SXActionReportIssueShort:    "drain the node; collect nvidia-bug-report.sh and report the SXid to NVIDIA",
	SXActionRunFieldDiag:        "drain the node; run NVIDIA's field diagnostics (fieldiag) on the baseboard",
	SXActionCheckLinkMechanical: "drain the node; check the link's mechanical connections (cables, OSFP transceivers, connectors), then reset the fabric",
}

// sxidGenericRemedy is the fix for a fatal SXid NVIDIA's table does not
// make fatal (a code it lacks, or a NONFATAL code the driver printed Fatal).
const sxidGenericRemedy = "drain the node; reset the GPUs and NVSwitches (or reboot) and restart nvidia-fabricmanager; contact NVIDIA support if it recurs"

// sxidCall is one SXid event judged.
type sxidCall struct {
	fatal  bool
	warn   bool   // the table says FATAL, the driver printed Non-fatal
	remedy string // set when fatal
	note   string // NVIDIA's name and action, and any disagreement with the line
}

// judgeSXID is fabric.sxid's rule for one event. The driver's word on the
// line decides when it printed one: "Fatal" fails; "Non-fatal" never fails,
// whatever NVIDIA's SXid table says, because the nvswitch driver prints
// the severity the hardware reported for that interrupt (open-gpu-kernel-
// modules, src/common/nvswitch/kernel/ls10/intr_ls10.c, reports e.g. the RX
// short error rate interrupt, SXid 20009, only as non-fatal) and the Fabric
// Manager user guide calls non-fatal SXids corrected by the hardware; a
// code the table calls FATAL printed Non-fatal warns (gpud warns on it).
// A line without a severity word takes the table's FATAL/NONFATAL column
// (NVSentinel's nvswitch monitor reads only that column). A code not in
// the table keeps the line's word (no word: counted non-fatal).
func judgeSXID(ev state.SXIDEvent) sxidCall {
	row, known := nvidiaSXIDs[ev.Code]
	lineFatal := ev.Severity == "fatal"
	lineNonFatal := ev.Severity == "non-fatal"
	c := sxidCall{fatal: lineFatal || known && row.fatal && !lineNonFatal}
	c.warn = !c.fatal && known && row.fatal && lineNonFatal
	if !known {
		if c.fatal {
			c.remedy = sxidGenericRemedy
		}
		return c
	}
	name := row.name
	if name == "" {
		name = "unnamed"
	}
	fat := "NONFATAL"
	if row.fatal {
		fat = "FATAL"
	}
	c.note = fmt.Sprintf("%s; NVIDIA: %s, %s", name, row.action, fat)
	switch {
	case ev.Severity == "" && row.fatal:
		c.note += "; the line has no severity word"
	case ev.Severity == "non-fatal" && row.fatal:
		c.note += "; the driver printed Non-fatal on this line, which decides"
	case lineFatal && !row.fatal:
		c.note += "; the driver printed Fatal on this line"
	}
	switch {
	case c.warn:
		c.remedy = "watch the link (nvlink.errors counters); if the SXid repeats, " + strings.TrimPrefix(sxidActionRemedy[row.action], "drain the node; ")
	case row.fatal:
		c.remedy = sxidActionRemedy[row.action]
	case c.fatal:
		c.remedy = sxidGenericRemedy
	}
	return c
}
