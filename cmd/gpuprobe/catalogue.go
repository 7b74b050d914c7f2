package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/check"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

func init() { registrars = append(registrars, registerCatalogue) }

func registerCatalogue(c *cli) {
	c.app.Command("checks", "List every check: ID, scope and what it verifies.").Action(func(*kingpin.ParseContext) error {
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		for _, ch := range check.All() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.ID, ch.Scope, ch.Title)
		}
		return tw.Flush()
	})
	c.app.Command("faults", "List the faults --simulate can inject.").Action(func(*kingpin.ParseContext) error {
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		for _, f := range simulate.Known() {
			name := f.Name
			if f.Arg != "" {
				name += "=" + f.Arg
			}
			fmt.Fprintf(tw, "%s\t%s\n", name, f.Effect)
		}
		return tw.Flush()
	})
}
