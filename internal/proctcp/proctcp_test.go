package proctcp

import (
	"net"
	"testing"
)

func TestListeners(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:4AA7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39963 2 00000000b5ed7527 100 0 0 10 0
   2: 0100007F:9E65 0100007F:CE38 06 00000000:00000000 03:00000CCF 00000000     0        0 0 3 00000000234b802e
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:28FF 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:28FF 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12346 1 0000000000000000 100 0 0 10 0
`
	got := Listeners([]byte(tcp))
	if len(got) != 1 || !got[0].IP.Equal(net.IPv4(127, 0, 0, 1)) || got[0].Port != 0x4AA7 || got[0].UID != 0 {
		t.Errorf("tcp: %+v", got)
	}
	got = Listeners([]byte(tcp6))
	if len(got) != 2 || !got[0].IP.IsUnspecified() || got[0].Port != 10495 || got[0].UID != 1000 || !got[1].IP.Equal(net.IPv6loopback) {
		t.Errorf("tcp6: %+v", got)
	}
}

func FuzzParseListeners(f *testing.F) {
	f.Add("   0: 0100007F:4AA7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39963 2\n")
	f.Add("   0: 00000000000000000000000001000000:28FF 00000000000000000000000000000000:0000 0A 0:0 0:0 0  1000 0 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range Listeners([]byte(s)) {
			if len(l.IP) != net.IPv4len && len(l.IP) != net.IPv6len || l.Port < 0 || l.Port > 65535 {
				t.Fatalf("bad listener %+v", l)
			}
		}
	})
}
