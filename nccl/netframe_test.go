package nccl

import "testing"

// TestNetSocketFrame: only NCCL core's Socket module names the network in
// a return-code trace (089.log); plugins and the generic NET transport do
// not.
func TestNetSocketFrame(t *testing.T) {
	for loc, want := range map[string]bool{
		"transport/net_socket.cc:336":                           true,
		"external/nccl_archive/src/transport/net_socket.cc:336": true,
		"transport/net.cc:592":                                  false,
		"misc/socket.cc:564":                                    false,
		"ib_plugin.c:196":                                       false,
		"net_fastsocket.cc:674":                                 false,
		"transport/mynet_socket.cc:12":                          false,
		"transport/net_socket.cc":                               false,
	} {
		if got := isNetSocketFrame([]byte(loc)); got != want {
			t.Errorf("isNetSocketFrame(%q) = %v, want %v", loc, got, want)
		}
	}
}
