package ncclras

import (
	"net/netip"
	"testing"
)

const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:6D7C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 39963 1 0000000000000000 100 0 0 10 0
   1: 0100007F:6D7D 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  2000        0 39964 1 0000000000000000 100 0 0 10 0
   2: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39965 1 0000000000000000 100 0 0 10 0
`

func TestListenerUID(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:28028": "1000", // 0x6D7C
		"127.0.0.1:28029": "",     // only an established connection there
		"127.0.0.1:8080":  "0",    // 0x1F90 on 0.0.0.0
		"127.0.0.2:28028": "",
	} {
		if got := listenerUID([]byte(procNetTCP), netip.MustParseAddrPort(addr)); got != want {
			t.Errorf("%s: uid %q, want %q", addr, got, want)
		}
	}
	six := "   0: 00000000000000000000000001000000:6D7C 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 1 1\n"
	if got := listenerUID([]byte(six), netip.MustParseAddrPort("[::1]:28028")); got != "1001" {
		t.Errorf("tcp6: %q", got)
	}
}

func FuzzListenerUID(f *testing.F) {
	f.Add([]byte(procNetTCP))
	f.Fuzz(func(t *testing.T, data []byte) {
		uid := listenerUID(data, netip.MustParseAddrPort("127.0.0.1:28028"))
		if len(uid) > 10 {
			t.Fatalf("uid %q", uid)
		}
	})
}
