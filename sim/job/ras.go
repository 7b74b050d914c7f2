package job

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"

	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// RASReport is the simulated job's NCCL RAS status (job-hang-peer): a
// 64-rank job on 16 nodes in which rank 37, on another node, stopped
// answering. It is written in the formats of NCCL 2.27's
// src/ras/client_support.cc; the node address is from TEST-NET-1 (RFC 5737),
// never a real machine's.
const RASReport = `NCCL version 2.27.3 compiled with CUDA 12.9
CUDA runtime version 12090, driver version 12090

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
     16          4            1         64       64

Communicators... (5.004s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1        16       3-4        64        63   RUNNING  INCOMPLETE

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 31337 on node 192.0.2.64 managing GPU 1

#0-0 (5a1d3c0ffee0b0a7) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 37 -- GPU 1 managed by process 31337 on node 192.0.2.64

Warnings
========

TIMEOUT
  Encountered 1 communication timeout while gathering communicator data
`

// RASDial is the simulated job's RAS port: for a scenario with
// RASRemoteRank, an in-memory connection that speaks NCCL's client protocol
// and answers STATUS with RASReport; for the other job scenarios a refused
// connection (no NCCL 2.24+ job listens); nothing touches the network. A
// spec with no job scenario simulates only the GPUs: the job is this
// machine's, and so is its RAS port (nil: dial it).
func RASDial(spec *simulate.Spec) func(ctx context.Context, addr string) (net.Conn, error) {
	sc, _ := spec.Job()
	if sc == nil {
		return nil
	}
	return func(_ context.Context, addr string) (net.Conn, error) {
		if !sc.RASRemoteRank {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("simulated: %w", syscall.ECONNREFUSED)}
		}
		client, server := net.Pipe()
		go serveRAS(server)
		return client, nil
	}
}

func serveRAS(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "CLIENT PROTOCOL "):
			_, err = c.Write([]byte("SERVER PROTOCOL 2\n"))
		case strings.HasPrefix(cmd, "TIMEOUT "):
			_, err = c.Write([]byte("OK\n"))
		case cmd == "STATUS" || cmd == "VERBOSE STATUS":
			_, _ = c.Write([]byte(RASReport))
			return
		default:
			_, err = c.Write([]byte("ERROR: Unknown command " + cmd + "\n"))
		}
		if err != nil {
			return
		}
	}
}
