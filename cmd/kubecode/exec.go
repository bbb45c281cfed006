package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/kubecode/kubecode/broker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func newExecCommand(g *globalFlags) *cobra.Command {
	var approve string
	cmd := &cobra.Command{
		Use:   "exec FILE.ts|-",
		Short: "Run a TypeScript file (or stdin) as execute_code does and print its result",
		Args:  cobra.ExactArgs(1),
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
			return g.runScript(cmd, string(code), approve)
		},
	}
	cmd.Flags().StringVar(&approve, "approve", "", "a plan's token: apply exactly the changes the same script planned (you, at the terminal, approve them; the ledger says so)")
	return cmd
}

func newRevertCommand(g *globalFlags) *cobra.Command {
	var approve string
	cmd := &cobra.Command{
		Use:   "revert EXECUTION",
		Short: "Undo an applied execution as a new plan (what kubecode.revert does): run it to see the plan, again with --approve TOKEN to apply it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.runScript(cmd, "return await tools.kubecode.revert({ execution: "+strconv.Quote(args[0])+" })", approve)
		},
	}
	cmd.Flags().StringVar(&approve, "approve", "", "the revert plan's token: apply exactly it")
	return cmd
}

// runScript runs code as execute_code does, for the person at the
// terminal (who approves plans with their token), and prints the answer.
func (g *globalFlags) runScript(cmd *cobra.Command, code, approve string) error {
	b, closer, err := g.broker(g.logger())
	if err != nil {
		return err
	}
	defer closer.Close()
	ex, err := b.Execute(cmd.Context(), code, &broker.ExecuteOptions{Timeout: g.timeout, Approve: approve, Terminal: true})
	if err != nil {
		return err
	}
	res := broker.FormatExecution(ex)
	fmt.Fprintln(cmd.OutOrStdout(), res.Content[0].(*mcp.TextContent).Text)
	if res.IsError {
		return errors.New("script failed")
	}
	return nil
}
