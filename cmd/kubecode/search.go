package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newSearchCommand(g *globalFlags) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Print what search_tools answers for a query",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, closer, err := g.broker(g.logger())
			if err != nil {
				return err
			}
			defer closer.Close()
			decls, ops, err := b.Search(cmd.Context(), strings.Join(args, " "), limit)
			if err != nil {
				return err
			}
			if decls == "" && len(ops) == 0 {
				return fmt.Errorf("no operation matches %q", strings.Join(args, " "))
			}
			fmt.Fprintln(cmd.OutOrStdout(), decls)
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "how many operations (default 8)")
	return cmd
}
