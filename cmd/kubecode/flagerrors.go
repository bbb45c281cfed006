package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/internal/editdistance"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError adds to an unknown flag's error the flags of the command
// nearest to it, as cobra does for unknown commands: "unknown flag:
// --namespce; did you mean --namespace?", and where to look for the rest.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		if sh, ok := strings.CutPrefix(msg, "unknown shorthand flag: "); ok {
			return fmt.Errorf("unknown shorthand flag: %s (run %s --help for its flags)", sh, c.CommandPath())
		}
		return fmt.Errorf("%w (run %s --help for its flags)", err, c.CommandPath())
	}
	name, _, _ = strings.Cut(name, "=")
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editdistance.Levenshtein(name, f.Name)
		if d <= max(2, len(name)/3) || strings.HasPrefix(f.Name, name) || strings.Contains(f.Name, name) && len(name) >= 3 {
			cs = append(cs, cand{f.Name, d})
		}
	})
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d || cs[i].d == cs[j].d && cs[i].name < cs[j].name })
	if len(cs) > 3 {
		cs = cs[:3]
	}
	var names []string
	for _, x := range cs {
		names = append(names, "--"+x.name)
	}
	if len(names) > 0 {
		return fmt.Errorf("unknown flag: --%s; did you mean %s? (run %s --help for its flags)", name, strings.Join(names, " or "), c.CommandPath())
	}
	return fmt.Errorf("unknown flag: --%s (run %s --help for its flags)", name, c.CommandPath())
}
