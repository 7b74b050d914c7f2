package kernel

// This file reads the kernel's PCIe AER lines that say recovery from an
// uncorrectable error failed (drivers/pci/pcie/err.c), as facts: which
// function, which port, which driver printed it. Whether it is a GPU's is
// check's to say.

import (
	"bytes"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/busid"
)

// aerLine splits "... <driver> <dddd:bb:dd.f>: AER: <msg>" (dev_printk's
// prefix) into the driver, the canonical function address and the message
// after "AER: ".
func aerLine(rec []byte) (driver, dev, msg string, ok bool) {
	if len(rec) > maxLine {
		rec = rec[:maxLine]
	}
	i := bytes.Index(rec, []byte(": AER: "))
	if i < 0 {
		return "", "", "", false
	}
	head := strings.Fields(string(rec[:i]))
	if len(head) < 2 {
		return "", "", "", false
	}
	if semi := kmsgHeaderEnd(rec); semi >= 0 && i > semi {
		// A /dev/kmsg record of the AER driver starts "<driver> <device>:
		// AER:"; more words before it quote one (driverText).
		if h := strings.Fields(string(rec[semi+1 : i])); len(h) != 2 || taskRecord(rec[semi+1:]) {
			return "", "", "", false
		}
	}
	id, err := busid.Parse(head[len(head)-1])
	if err != nil {
		return "", "", "", false
	}
	driver = head[len(head)-2]
	if j := strings.LastIndexAny(driver, ";]"); j >= 0 {
		driver = driver[j+1:]
	}
	m, _, _ := strings.Cut(string(rec[i+len(": AER: "):]), "\n")
	return driver, id.String(), strings.TrimSpace(m), true
}

// aerRecoveryFailed: the kernel gave up on the error ("can't recover (no
// error_detected callback)", "... device recovery failed").
func aerRecoveryFailed(msg string) bool {
	return strings.HasPrefix(msg, "can't recover") || strings.Contains(msg, "device recovery failed")
}

// aerFatalReceived is the function a port says sent it a fatal error
// ("Uncorrected (Fatal) error received: 0000:01:00.0"; Linux 6.x:
// "Uncorrectable (Fatal) error message received from 0000:01:00.0").
func aerFatalReceived(msg string) string {
	if !strings.HasPrefix(msg, "Uncorrected (Fatal) error") && !strings.HasPrefix(msg, "Uncorrectable (Fatal) error") {
		return ""
	}
	f := strings.Fields(msg)
	if len(f) == 0 {
		return ""
	}
	id, err := busid.Parse(strings.TrimSuffix(f[len(f)-1], "."))
	if err != nil {
		return ""
	}
	return id.String()
}
