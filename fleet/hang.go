package fleet

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuprobe/gpuprobe/check"
)

// PrintHang prints, after the table, what `gpuprobe job --hang` across an
// allocation says (each node's perf.hang): the nodes that hold the rank the
// job waits on, what NCCL's RAS named where a node asked it, and the node
// whose verdict differs from all the others'. Nothing when no report ran
// --hang. The summaries were escaped when read (reader.row).
func PrintHang(w io.Writer, rows []Row) {
	type verdict struct {
		node string
		res  check.Result
	}
	var all []verdict
	for _, r := range rows {
		if r.hang != nil {
			all = append(all, verdict{r.Name, *r.hang})
		}
	}
	if len(all) == 0 {
		return
	}
	fmt.Fprintf(w, "hang: perf.hang on %d node(s)\n", len(all))
	culprits := 0
	for _, v := range all {
		if v.res.Status == check.Fail || v.res.Status == check.Error {
			culprits++
			fmt.Fprintf(w, "  the job waits on %s: %s\n", v.node, v.res.Summary)
		}
	}
	for _, v := range all {
		if _, ras, ok := strings.Cut(v.res.Summary, "RAS says: "); ok {
			fmt.Fprintf(w, "  NCCL RAS, asked on %s: %s\n", v.node, strings.TrimSuffix(ras, ")"))
		}
	}
	// The odd one out: with three or more nodes, the one whose status
	// differs from all the others' (the idle node among spinning ones).
	if len(all) >= 3 {
		count := map[check.Status]int{}
		for _, v := range all {
			count[v.res.Status]++
		}
		for _, v := range all {
			if count[v.res.Status] == 1 && len(count) == 2 && v.res.Status != check.Fail {
				fmt.Fprintf(w, "  %s is the odd one out (%s while the %d others are not): %s\n", v.node, v.res.Status, len(all)-1, v.res.Summary)
			}
		}
	}
	if culprits == 0 {
		fmt.Fprintln(w, "  no node holds a stopped, stuck or gone rank: where every local rank waits in NCCL, the rank waited on is on a node not in this input, or RAS names it above")
	}
}
