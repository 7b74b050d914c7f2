package benchout

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// The nccl-tests output, as src/common.cu prints it (nccl-tests 2.x):
//
//	# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
//	#  Rank  0 Group  0 Pid  1887 on   worker-1 device  0 [0x8d] NVIDIA H100 80GB HBM3
//	#       size   count   type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//	  1073741824  268435456  float  sum  -1  4711.2  227.9  427.3  0  4700.1  228.4  428.3  0
//	# Out of bounds values : 0 OK
//	# Avg bus bandwidth    : 92.3405
//
// Older versions print no Group and no root column and "error" (a
// relative error) where newer ones print "#wrong" (a count).
var (
	ncclHeaderRe = lazyRE(`^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)`)
	ncclItersRe  = lazyRE(`\biters:\s*(\d+)`)
	ncclRankRe   = lazyRE(`^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
	ncclStartRe  = lazyRE(`^#\s*Collective test (?:starting|concluded):\s*(\S+)`)
	ncclCmdRe    = lazyRE(`(?:^|[/\s=])((?:all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather|hypercube)_perf)(?:_mpi)?(?:\s|$)`)
	ncclOOBRe    = lazyRE(`^#\s*Out of bounds values\s*:\s*(\d+)\s+(\S+)`)
	ncclAvgRe    = lazyRE(`^#\s*Avg bus bandwidth\s*:\s*(\S+)`)
	ncclVerRe    = lazyRE(`NCCL version (\S+)`)
	ncclCommRe   = lazyRE(`NCCL INFO .*\bcomm 0x[0-9a-fA-F]+ .*\b[nN][rR]anks (\d+)\b`)
	ncclNodesRe  = lazyRE(`NCCL INFO .*\bcomm 0x[0-9a-fA-F]+ .*\bnNodes (\d+)\b`)
	ncclNetRe    = lazyRE(`NCCL INFO Using network (.+?)\s*$`)
	ncclNetUseRe = lazyRE(`NCCL INFO (NET/[A-Za-z0-9_]+)\s*:\s*Using\b`)
	// "Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0" (NCCL 2.5 on);
	// NCCL 2.4 and before printed "Ring 00 : 15 -> 0 [send] via
	// NET/Socket/0" (src/transport/net.cc, v2.4.8-1).
	ncclViaRe = lazyRE(`NCCL INFO (?:Channel|Ring) .* via (NET/[A-Za-z0-9_]+|P2P|SHM|CollNet|NVLS)\b`)
	// A tag a launcher printed inside a line ("-1[0]  366.5") when two
	// writes of one row were interleaved.
	ncclInlineTagRe = lazyRE(`\[\d+(?:,\d+)*\](?:<std(?:out|err)>:)?`)
	ncclTestFileRe  = lazyRE(`((?:all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather|hypercube)_perf)`)
)

var ncclRedops = []string{"sum", "prod", "max", "min", "avg", "none", "mulsum", "premulsum"}

// ncclTypes are the data types nccl-tests names in its rows (src/common.cu,
// test_typenames, old and new). A row without a redop column (the old
// format's all_gather and broadcast) is told from other text by its type.
var ncclTypes = []string{"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double",
	"bfloat16", "f8e4m3", "f8e5m2", "fp8_e4m3", "fp8_e5m2", "char", "int", "uint"}

func parseNcclTests(name string, lines []string) (*state.Verify, error) {
	c := &state.CollectiveRun{}
	v := &state.Verify{Source: SourceNcclTests, From: &state.FromRun{Collective: c}}
	iters := 0
	var cmdTest, startTest string
	seen := map[string]bool{}
	for i, raw := range lines {
		n := i + 1
		l := strings.TrimSpace(stripTag(raw))
		if l == "" {
			continue
		}
		if strings.Contains(l, "NCCL INFO") || strings.Contains(l, "NCCL WARN") {
			ncclInfo(c, l, n, seen)
			continue
		}
		if m := ncclVerRe().FindStringSubmatch(l); m != nil && strings.HasPrefix(l, "NCCL version") && c.NCCLVersion == "" {
			c.NCCLVersion = m[1]
			continue
		}
		if strings.HasPrefix(l, "#") {
			switch {
			case ncclHeaderRe().MatchString(l):
				m := ncclHeaderRe().FindStringSubmatch(l)
				c.Headers++
				if c.Headers == 1 {
					c.NThread, _ = strconv.Atoi(m[1])
					c.NGpus, _ = strconv.Atoi(m[2])
					if it := ncclItersRe().FindStringSubmatch(l); it != nil {
						iters, _ = strconv.Atoi(it[1])
					}
				}
			case ncclRankRe().MatchString(l):
				m := ncclRankRe().FindStringSubmatch(l)
				r := state.CollectiveRank{Header: max(c.Headers-1, 0), Host: m[2], BusID: m[4], Model: strings.TrimSpace(m[5])}
				r.Rank, _ = strconv.Atoi(m[1])
				r.Device, _ = strconv.Atoi(m[3])
				c.Ranks = append(c.Ranks, r)
			case ncclStartRe().MatchString(l):
				if startTest == "" {
					startTest = ncclStartRe().FindStringSubmatch(l)[1]
				}
			case ncclOOBRe().MatchString(l):
				m := ncclOOBRe().FindStringSubmatch(l)
				cnt, err := strconv.Atoi(m[1])
				if err != nil {
					return nil, &ParseError{File: name, Line: n, Msg: "out-of-bounds count " + strconv.Quote(m[1]) + " is not a number"}
				}
				c.OutOfBounds = append(c.OutOfBounds, state.OutOfBounds{Count: cnt, Status: m[2], Line: n})
			case ncclAvgRe().MatchString(l):
				m := ncclAvgRe().FindStringSubmatch(l)
				f, err := strconv.ParseFloat(m[1], 64)
				if err != nil {
					return nil, &ParseError{File: name, Line: n, Msg: "Avg bus bandwidth " + strconv.Quote(m[1]) + " is not a number"}
				}
				c.AvgBusBW = append(c.AvgBusBW, f)
			case strings.Contains(l, "size") && strings.Contains(l, "count") && strings.Contains(l, "busbw"):
				c.WrongCounted = strings.Contains(l, "#wrong")
			}
			continue
		}
		if cmdTest == "" {
			if m := ncclCmdRe().FindStringSubmatch(l); m != nil {
				cmdTest = m[1]
			}
		}
		row, ok, err := ncclRow(ncclInlineTagRe().ReplaceAllString(l, " "), c.WrongCounted)
		if err != nil {
			return nil, &ParseError{File: name, Line: n, Msg: err.Error()}
		}
		if ok {
			row.Iterations = iters
			v.Measurements = append(v.Measurements, row)
		}
	}
	if c.Headers == 0 && len(v.Measurements) == 0 {
		return nil, &ParseError{File: name, Msg: "no nccl-tests header ('# nThread ...') and no size-table row"}
	}
	switch {
	case startTest != "":
		c.Test = startTest
	case cmdTest != "":
		c.Test = cmdTest
	default:
		if m := ncclTestFileRe().FindStringSubmatch(path.Base(name)); m != nil {
			c.Test = m[1]
		}
	}
	pathName := c.Test
	if pathName == "" {
		pathName = SourceNcclTests
	}
	for i := range v.Measurements {
		v.Measurements[i].Path = pathName
	}
	slices.Sort(c.CommRanks)
	c.CommRanks = slices.Compact(c.CommRanks)
	return v, nil
}

// ncclInfo records what an NCCL INFO line says about the run.
func ncclInfo(c *state.CollectiveRun, l string, n int, seen map[string]bool) {
	if m := ncclVerRe().FindStringSubmatch(l); m != nil && c.NCCLVersion == "" {
		c.NCCLVersion = m[1]
	}
	if m := ncclCommRe().FindStringSubmatch(l); m != nil {
		if k, err := strconv.Atoi(m[1]); err == nil && !slices.Contains(c.CommRanks, k) && len(c.CommRanks) < 64 {
			c.CommRanks = append(c.CommRanks, k)
		}
	}
	if m := ncclNodesRe().FindStringSubmatch(l); m != nil {
		if k, err := strconv.Atoi(m[1]); err == nil && k > c.Nodes && k <= 1<<20 {
			c.Nodes = k
		}
	}
	add := func(kind, name string) {
		key := kind + "\x00" + name
		if seen[key] || len(c.Transports) >= 64 {
			return
		}
		seen[key] = true
		text := l
		if len(text) > 300 {
			text = text[:300]
		}
		c.Transports = append(c.Transports, state.TransportLine{Kind: kind, Name: name, Line: n, Text: text})
	}
	if m := ncclNetRe().FindStringSubmatch(l); m != nil {
		add("network", m[1])
	}
	if m := ncclNetUseRe().FindStringSubmatch(l); m != nil {
		add("network", m[1])
	}
	if m := ncclViaRe().FindStringSubmatch(l); m != nil {
		add("channel", m[1])
	}
}

// ncclRow reads one size-table row. A line that does not start as a row
// (size, count, type, then a redop or, in the old format, a root or the
// time) is not one (ok false, no error); one that does and then does not
// hold a row's columns is an error.
//
// The columns before the times differ by test and version: nccl-tests 2.x
// prints "size count type redop root" for every test ("none" and -1 where
// they do not apply); older versions printed only what the test has:
// "size count type redop" (all_reduce, reduce_scatter), "size count type
// root" (broadcast), "size count type redop root" (reduce), "size count
// type" (all_gather).
func ncclRow(l string, wrongCounted bool) (m state.Measurement, ok bool, err error) {
	f := strings.Fields(l)
	if len(f) < 4 {
		return m, false, nil
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	_, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || !isWord(f[2]) {
		return m, false, nil
	}
	rest := f[3:]
	switch {
	case slices.Contains(ncclRedops, rest[0]):
		rest = rest[1:]
		if len(rest) == 9 || len(rest) == 5 {
			if _, err := strconv.Atoi(rest[0]); err != nil {
				return m, false, fmt.Errorf("size-table row: root %q is not a number", rest[0])
			}
			rest = rest[1:]
		}
	case !slices.Contains(ncclTypes, f[2]):
		return m, false, nil
	case len(rest) == 9 || len(rest) == 5:
		// Old broadcast: a root, no redop.
		if _, err := strconv.Atoi(rest[0]); err != nil {
			return m, false, nil
		}
		rest = rest[1:]
	case len(rest) == 8 || len(rest) == 4:
		// Old all_gather: neither; the time comes next.
		if _, err := strconv.ParseFloat(rest[0], 64); err != nil {
			return m, false, nil
		}
	default:
		return m, false, nil
	}
	if len(rest) != 8 && len(rest) != 4 {
		return m, false, fmt.Errorf("size-table row with %d columns, want 11 to 13 (size count type [redop] [root] time algbw busbw #wrong time algbw busbw #wrong)", len(f))
	}
	if size < 0 {
		return m, false, fmt.Errorf("size-table row: negative size %d", size)
	}
	busbw, err := strconv.ParseFloat(rest[2], 64)
	if err != nil || busbw < 0 || busbw != busbw {
		return m, false, fmt.Errorf("size-table row: busbw %q is not a bandwidth", rest[2])
	}
	m = state.Measurement{Kind: state.MeasureBusBW, GPU: -1, Peer: -1, Bytes: size, Value: busbw, Unit: "GB/s"}
	if wrongCounted {
		for i := 3; i < len(rest); i += 4 {
			w := strings.TrimSuffix(rest[i], "*")
			if w == "N/A" {
				continue
			}
			k, err := strconv.ParseInt(w, 10, 64)
			if err != nil || k < 0 {
				return state.Measurement{}, false, fmt.Errorf("size-table row: #wrong %q is not a count", rest[i])
			}
			m.Mismatches += k
		}
	}
	return m, true, nil
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
