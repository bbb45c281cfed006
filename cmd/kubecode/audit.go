package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/adapters/upstream"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/autopsy"
	"github.com/spf13/cobra"
)

func newAuditCommand(g *globalFlags) *cobra.Command {
	var asJSON, runs bool
	var outcomes map[string]string
	cmd := &cobra.Command{
		Use:   "audit LEDGER.jsonl",
		Short: "Judge each execution and each run (MCP session, or the run a client names in _meta \"kubecode.io/run\") of a ledger (--ledger): safe pass, unsafe pass, blocked or fail by what it applied, with the flags that decided it, the mutation scope, what it changed, who approved its plan, and every person's decision on a plan",
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
			for run, o := range outcomes {
				if o != "pass" && o != "fail" {
					return fmt.Errorf("--outcome %s=%s: an outcome is pass or fail", run, o)
				}
			}
			// The policy the server ran under (--policy) sets what counts
			// as a broad change.
			pol, _, err := g.loadPolicy()
			if err != nil {
				return err
			}
			verdicts := autopsy.Judge(entries, &autopsy.Options{Policy: pol})
			rv := autopsy.Runs(verdicts, outcomes)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				if runs {
					for _, r := range rv {
						if err := enc.Encode(r); err != nil {
							return err
						}
					}
					return nil
				}
				for _, v := range verdicts {
					if err := enc.Encode(v); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EXECUTION\tRUN\tVERDICT\tCALLS\tAPPLIED\tPLANNED\tREFUSED\tFAILED\tSCOPE\tFLAGS\tAPPROVED BY")
			for _, v := range verdicts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", v.Trace, orDash(v.Run), v.Verdict, v.Calls, v.Applied, v.Planned, v.Refused, v.Failed,
					orDash(strings.Join(v.Scope, ",")), orDash(strings.Join(v.Flags, ",")), orDash(v.ApprovedBy))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(out)
			tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tEXECUTIONS\tOUTCOME\tVERDICT\tOBJECTS\tSCOPE\tFLAGS")
			count := map[string]int{}
			pass, objects, scope := 0, 0, map[string]bool{}
			for _, r := range rv {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\n", r.Run, r.Executions, orDash(r.Outcome), r.Verdict, r.Objects, orDash(strings.Join(r.Scope, ",")), orDash(strings.Join(r.Flags, ",")))
				count[r.Verdict]++
				if r.Outcome == "pass" {
					pass++
				}
				objects += r.Objects
				for _, s := range r.Scope {
					scope[s] = true
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			final := fmt.Sprint(pass)
			if len(outcomes) == 0 {
				final = "- (give --outcome RUN=pass|fail)"
			}
			fmt.Fprintf(out, "runs %d · final pass %s · safe pass %d · unsafe pass %d · blocked %d · fail %d · mutation scope %d objects in %d scopes\n\n",
				len(rv), final, count[autopsy.SafePass], count[autopsy.UnsafePass], count[autopsy.Blocked], count[autopsy.Fail], objects, len(scope))
			for _, v := range verdicts {
				for _, why := range v.Why {
					fmt.Fprintf(out, "%s: %s\n", v.Trace, why)
				}
			}
			// What the providers' signals among the flags mean.
			legend := map[string]string{}
			for _, k := range append(slices.Clone(kubeapi.Signals), upstream.Signals()...) {
				legend[k.Name] = k.Meaning
			}
			shown := map[string]bool{}
			for _, v := range verdicts {
				for _, f := range append(slices.Clone(v.Flags), v.PlanFlags...) {
					if m, ok := legend[f]; ok && !shown[f] {
						shown[f] = true
						fmt.Fprintf(out, "flag %s: %s\n", f, m)
					}
				}
			}
			// What each execution changed: applied changes only (a plan
			// changes nothing until its approved re-run applies it).
			for _, v := range verdicts {
				for _, c := range v.Changes {
					fmt.Fprintf(out, "%s changed: %s\n", v.Trace, c)
				}
			}
			// Runbook runs: which runbook, version and parameters, under
			// which standard change, called by which execution.
			for _, v := range verdicts {
				if r := v.Runbook; r != nil {
					fmt.Fprintf(out, "%s runbook %s version %s params %s", v.Trace, r.Name, r.Version, orDash(string(r.Params)))
					if r.Standard != "" {
						fmt.Fprintf(out, " standard change %s", r.Standard)
					}
					if strings.HasSuffix(v.Trace, "-dry") {
						fmt.Fprint(out, " (its dry run, judged by the bounds)")
					}
					fmt.Fprintf(out, " called by %s\n", orDash(r.CalledBy))
				}
			}
			// People's decisions on plans and standard changes, denials and
			// revocations included.
			for _, d := range bridge.Decisions(entries) {
				what := d.Plan
				if d.Runbook != nil {
					what = "standard change " + d.Plan + " of runbook " + d.Runbook.Name + " version " + d.Runbook.Version
				}
				fmt.Fprintf(out, "%s %s by %s\n", what, d.Decision, d.ApprovedBy)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON verdict per line")
	cmd.Flags().BoolVar(&runs, "runs", false, "with --json: one JSON verdict per run instead of per execution")
	cmd.Flags().StringToStringVar(&outcomes, "outcome", nil, "a run's final outcome as the task's own check judged it: RUN=pass or RUN=fail (repeatable)")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
