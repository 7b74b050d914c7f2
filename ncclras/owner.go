package ncclras

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"path/filepath"
	"strconv"

	"github.com/gpuprobe/gpuprobe/internal/proctcp"
	"github.com/gpuprobe/gpuprobe/internal/readlimit"
)

// ListenerUID names the owner (uid, as /proc/net/tcp{,6} prints it) of the
// socket listening on addr (a loopback ip:port ValidateAddr returned), or
// "" when none is found: a port on loopback can be any user's, so the judge
// compares it with the job's user before it believes the report.
func ListenerUID(ctx context.Context, procRoot, addr string) string {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return ""
	}
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := readlimit.File(ctx, "/proc/net/"+name, filepath.Join(procRoot, "net", name), 64<<20)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return ""
			}
			continue
		}
		if uid := listenerUID(data, ap); uid != "" {
			return uid
		}
	}
	return ""
}

// listenerUID reads the LISTEN (state 0A) rows of /proc/net/tcp or tcp6
// (proc(5); each address is hex, each 32-bit word in host byte order):
//
//	sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
//	 0: 0100007F:6D7C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 39963
//
// and returns the uid of the one bound to ap's port on ap's address or on
// the unspecified address.
func listenerUID(data []byte, ap netip.AddrPort) string {
	for _, l := range proctcp.Listeners(data) {
		ip, ok := netip.AddrFromSlice(l.IP)
		if !ok || l.Port != int(ap.Port()) {
			continue
		}
		if ip = ip.Unmap(); ip == ap.Addr() || ip.IsUnspecified() {
			return strconv.FormatUint(uint64(l.UID), 10)
		}
	}
	return ""
}
