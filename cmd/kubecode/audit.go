package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/kubecode/kubecode/bridge"
	"github.com/spf13/cobra"
)

func newAuditCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit LEDGER.jsonl",
		Short: "Judge each execution of a ledger (--ledger): safe pass, unsafe pass or fail, with the flags that decided it, who approved its plan, and every person's decision on a plan",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			entries, err := bridge.ReadLedger(f)
			if err != nil {
				return err
			}
			verdicts := bridge.Autopsy(entries)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				for _, v := range verdicts {
					if err := enc.Encode(v); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EXECUTION\tVERDICT\tCALLS\tAPPLIED\tPLANNED\tFAILED\tFLAGS\tAPPROVED BY")
			for _, v := range verdicts {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", v.Trace, v.Verdict, v.Calls, v.Applied, v.Planned, v.Failed, strings.Join(v.Flags, ","), v.ApprovedBy)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, v := range verdicts {
				for _, why := range v.Why {
					fmt.Fprintf(out, "%s: %s\n", v.Trace, why)
				}
			}
			// People's decisions on plans, denials included.
			for _, d := range bridge.Decisions(entries) {
				fmt.Fprintf(out, "%s %s by %s\n", d.Plan, d.Decision, d.ApprovedBy)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON verdict per line")
	return cmd
}
