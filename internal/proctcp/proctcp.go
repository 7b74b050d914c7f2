// Package proctcp reads the listening sockets of /proc/net/tcp and tcp6:
// who owns the socket on a port, for a client that must not believe a
// server an unprivileged user could have started (a local daemon, a job's
// NCCL RAS port).
package proctcp

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"net"
	"strconv"
	"strings"
)

// Listener is one LISTEN row: its local address and port, and its owner.
type Listener struct {
	IP   net.IP
	Port int
	UID  uint32
}

// Listeners reads the LISTEN (state 0A) rows of /proc/net/tcp or tcp6:
//
//	sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
//	 0: 0100007F:28FF 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39963 ...
//
// Addresses are hex, each 32-bit word in host (little-endian) byte order.
// Rows it cannot read are skipped; lines are read up to 4 KiB.
func Listeners(data []byte) []Listener {
	var out []Listener
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), 4096)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[3] != "0A" {
			continue
		}
		addr, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		raw, err := hex.DecodeString(addr)
		if err != nil || (len(raw) != 4 && len(raw) != 16) {
			continue
		}
		for i := 0; i+4 <= len(raw); i += 4 {
			raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
		}
		port, err1 := strconv.ParseUint(portHex, 16, 16)
		uid, err2 := strconv.ParseUint(f[7], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, Listener{IP: net.IP(raw), Port: int(port), UID: uint32(uid)})
	}
	return out
}
