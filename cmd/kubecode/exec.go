package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/kubecode/kubecode/broker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newExecCommand(g *globalFlags) *cobra.Command {
	var approve string
	var af approvalFlags
	cmd := &cobra.Command{
		Use:   "exec FILE.ts|-",
		Short: "Run a TypeScript file (or stdin) as execute_code does and print its result (on the running kubecode server when there is one)",
		Long: `Run a TypeScript file (or stdin) as execute_code does and print its result.

With a kubecode server running on this machine (kubecode demo or serve: the
CLI finds it through the key file it writes), or one named with --server, the
script runs there: its changes become a plan that waits on that server, and
running the same file again with --approve PLAN-ID approves it as you and
applies exactly it. Without one, the script runs in this process and a plan
is confirmed at the prompt.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var code []byte
			var err error
			if args[0] == "-" {
				code, err = io.ReadAll(cmd.InOrStdin())
			} else {
				code, err = os.ReadFile(args[0])
			}
			if err != nil {
				return err
			}
			again := "kubecode exec " + args[0]
			if args[0] == "-" {
				again = "kubecode exec - < FILE"
			}
			return g.runScript(cmd, &af, string(code), approve, again)
		},
	}
	cmd.Flags().StringVar(&approve, "approve", "", "the plan's id (plan-…) from the run before: you approve it, and exactly its changes are applied")
	af.registerAs(cmd, "kubecode-server", "kubecode-token")
	return cmd
}

func newRevertCommand(g *globalFlags) *cobra.Command {
	var approve string
	var af approvalFlags
	cmd := &cobra.Command{
		Use:   "revert EXECUTION",
		Short: "Undo an applied execution as a new plan (what kubecode.revert does): run it to see the plan, again with --approve PLAN-ID to apply it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.runScript(cmd, &af, "return await tools.kubecode.revert({ execution: "+strconv.Quote(args[0])+" })", approve, "kubecode revert "+args[0])
		},
	}
	cmd.Flags().StringVar(&approve, "approve", "", "the revert plan's id (plan-…): you approve it, and exactly it is applied")
	af.registerAs(cmd, "kubecode-server", "kubecode-token")
	return cmd
}

// runScript runs code as execute_code does, for the person at the
// terminal, and prints the answer: on the kubecode server that runs here
// (or af names), where the script's plan waits like the agent's and the
// same command with --approve approves and applies it; else in this
// process, confirming a plan at the prompt. again is the command that
// ran it, for what to type next.
func (g *globalFlags) runScript(cmd *cobra.Command, af *approvalFlags, code, approve, again string) error {
	out := cmd.OutOrStdout()
	// The local server runs on its own cluster and settings: a command
	// that names its own (--kubeconfig, --context, --policy, ...) runs
	// here, unless it names the server too.
	own := false
	cmd.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) {
		// --timeout goes to the server with the script; --verbose is
		// this process's.
		own = own || f.Changed && f.Name != "timeout" && f.Name != "verbose"
	})
	c, err := af.client()
	if own && af.server == "" {
		c, err = nil, errors.New("flags of its own")
	}
	if err == nil {
		var res broker.APIExecResult
		err = c.send(cmd.Context(), http.MethodPost, "exec", broker.APIExec{Code: code, Approve: approve, TimeoutSeconds: int(g.timeout.Seconds())}, &res)
		var unreachable *serverUnreachable
		switch {
		case errors.As(err, &unreachable) && af.server == "":
			fmt.Fprintf(cmd.ErrOrStderr(), "kubecode: %v; running here instead\n", err)
		case err != nil:
			return err
		default:
			fmt.Fprintln(out, res.Text)
			if res.Plan != "" {
				fmt.Fprintf(out, "\nThe plan waits on the server at %s. To approve it as yourself and apply exactly it:\n  %s --approve %s\n", c.server, again, res.Plan)
				if res.Approvers > 1 {
					fmt.Fprintf(out, "(it needs %d approvers: each runs kubecode approve %s --kubecode-token THEIR-TOKEN first)\n", res.Approvers, res.Plan)
				}
				fmt.Fprintf(out, "To deny it: kubecode deny %s --reason \"…\". To review it in a browser: kubecode plans %s --link\n", res.Plan, res.Plan)
			}
			if res.IsError {
				return errors.New("script failed")
			}
			return nil
		}
	} else if af.server != "" {
		return err
	}
	if strings.HasPrefix(approve, "plan-") {
		return fmt.Errorf("--approve %s names a plan waiting on a kubecode server, and none answers here: start it again (kubecode demo or serve) and run the same command, or name it with --kubecode-server URL", approve)
	}
	return g.runHere(cmd, code, approve)
}

// runHere runs code in this process: a plan it makes is applied once the
// person at the prompt confirms it (the same process re-runs the script
// with the plan's token).
func (g *globalFlags) runHere(cmd *cobra.Command, code, approve string) error {
	b, closer, err := g.broker(g.logger())
	if err != nil {
		return err
	}
	defer closer.Close()
	ex, err := b.Execute(cmd.Context(), code, &broker.ExecuteOptions{Timeout: g.timeout, Approve: approve, Terminal: true})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	_, key, _ := g.loadPolicy()
	if ex.Plan != nil && ex.Approved == nil && ex.Token != "" && len(key) == 0 {
		// This process's key signed the plan: no other process can
		// approve it, so the person here confirms it or not.
		fmt.Fprintf(out, "%s\n--- plan %s: %d change(s), dry run only: nothing was applied ---\n%s\n", broker.FormatResult(ex.Result).Content[0].(*mcp.TextContent).Text,
			ex.Plan.ID, len(ex.Plan.Changes), broker.PlanText(ex.Plan))
		if !isTerminal(os.Stdin) {
			fmt.Fprintln(out, "Nothing was applied. To apply it, run this again in a terminal (it asks), or on a kubecode server: start one (kubecode demo or serve) and run the same command, which leaves the plan waiting there for approval.")
			return nil
		}
		fmt.Fprintf(out, "Apply exactly these %d change(s)? Type yes to apply: ", len(ex.Plan.Changes))
		line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if strings.TrimSpace(line) != "yes" {
			fmt.Fprintln(out, "not applied")
			return nil
		}
		if ex, err = b.Execute(cmd.Context(), code, &broker.ExecuteOptions{Timeout: g.timeout, Approve: ex.Token, Terminal: true}); err != nil {
			return err
		}
	}
	res := broker.FormatExecution(ex)
	fmt.Fprintln(out, res.Content[0].(*mcp.TextContent).Text)
	if res.IsError {
		return errors.New("script failed")
	}
	return nil
}
