package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/scenario"
	"github.com/kubecode/kubecode/internal/tokenbench"
	"github.com/spf13/cobra"
)

func newBenchCommand() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Benchmarks against a local cluster"}
	var pods, svg, peer string
	tokens := &cobra.Command{
		Use:   "tokens",
		Short: "Tokens an agent pays for the same questions: the real peer, direct mode, code mode",
		Long: `tokens starts a living local cluster per scale, seeds the demo scenario with the given
number of healthy pods, and answers each question through containers/kubernetes-mcp-server
(over stdio, installed by scripts/test from npm), kubecode's direct mode and its code
mode. Every answer is checked; tokens are o200k_base. It prints Markdown tables, per question:
(a) the first question of a conversation, tool definitions sent (cumulative input), (b) a later
question, definitions cached by the client (calls and results); and (c) a session of 10
questions. With --svg it writes a chart of cumulative input against cluster size.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			var results []tokenbench.Result
			var failed []string
			for _, s := range strings.Split(pods, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n < 0 {
					return fmt.Errorf("--pods: %q is not a number of pods", s)
				}
				fmt.Fprintf(stderr, "kubecode bench: starting a cluster with %d healthy pods...\n", n)
				cp, err := controlplane.Start(ctx, &controlplane.Options{Progress: stderr, HoldControllers: true})
				if err != nil {
					return err
				}
				rs, errs := benchScale(cmd, cp, n, peer)
				_ = cp.Stop()
				results = append(results, rs...)
				failed = append(failed, errs...)
			}
			fmt.Fprint(cmd.OutOrStdout(), tokenbench.Markdown(results))
			fmt.Fprintf(cmd.OutOrStdout(), "\n(c) the first 10 questions asked in one session:\n\n%s", tokenbench.SessionMarkdown(tokenbench.Sessions(results, 10)))
			if svg != "" {
				if err := os.WriteFile(svg, []byte(tokenbench.SVG(results, tokenbench.RestartSummary().Name)), 0o644); err != nil {
					return err
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d answers were wrong or missing:\n%s", len(failed), strings.Join(failed, "\n"))
			}
			return nil
		},
	}
	tokens.Flags().StringVar(&pods, "pods", "200,500,5000", "healthy pods to seed, one cluster per number")
	tokens.Flags().StringVar(&svg, "svg", "", "write a chart of cumulative input tokens against cluster size to this file")
	tokens.Flags().StringVar(&peer, "peer", tokenbench.PeerBinary(), "the kubernetes-mcp-server binary ("+tokenbench.PeerVersion+")")
	bench.AddCommand(tokens)
	return bench
}

// benchScale seeds cp and runs every scenario on every side.
func benchScale(cmd *cobra.Command, cp *controlplane.ControlPlane, healthy int, peer string) ([]tokenbench.Result, []string) {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	truth, err := scenario.Seed(ctx, cp.Admin, cp.Kubelet, &scenario.SeedOptions{HealthyPods: healthy, StartControllers: cp.StartControllers})
	if err != nil {
		return nil, []string{err.Error()}
	}
	pods := truth.Pods
	if truth.Live != nil {
		pods += truth.Live.Pods
	}
	scale := fmt.Sprintf("%d pods", pods)
	cases, err := tokenbench.Suite(ctx, cp.Admin, truth)
	if err != nil {
		return nil, []string{err.Error()}
	}
	sides := []struct {
		kind string
		open func() (*tokenbench.Side, error)
	}{
		{tokenbench.KindPeer, func() (*tokenbench.Side, error) {
			return tokenbench.PeerSide(ctx, peer, cp.AdminKubeconfig, filepath.Join(cp.Dir, "peer.log"))
		}},
		{tokenbench.KindDirect, func() (*tokenbench.Side, error) {
			return tokenbench.KubecodeSide(ctx, "kubecode direct", cp.Admin, broker.ModeDirect)
		}},
		{tokenbench.KindCode, func() (*tokenbench.Side, error) {
			return tokenbench.KubecodeSide(ctx, "kubecode code", cp.Admin, broker.ModeCode)
		}},
		{tokenbench.KindUpstream, func() (*tokenbench.Side, error) {
			return tokenbench.UpstreamSide(ctx, peer, cp.AdminKubeconfig, filepath.Join(cp.Dir, "peer-upstream.log"), cp.Dir)
		}},
	}
	var results []tokenbench.Result
	var failed []string
	for _, s := range sides {
		side, err := s.open()
		if err != nil {
			fmt.Fprintf(stderr, "kubecode bench: %s side: %v\n", s.kind, err)
			continue
		}
		for _, c := range cases {
			if !c.Scenario.Serves(s.kind) {
				continue
			}
			run, took, err := c.Check(ctx, side, s.kind)
			if err != nil {
				failed = append(failed, err.Error())
				continue
			}
			results = append(results, tokenbench.Result{Scale: scale, Pods: pods, Kind: s.kind, Run: run, Took: took})
		}
		side.Close()
	}
	return results, failed
}
