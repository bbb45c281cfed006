package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/helmdemo"
	"github.com/kubecode/kubecode/internal/scenario"
	"github.com/spf13/cobra"
)

func newDemoCommand(g *globalFlags) *cobra.Command {
	var addr string
	var hf httpFlags
	var pods int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a local kube-apiserver with a seeded, partly broken cluster and serve the broker on it",
		Long: `demo needs no cluster: it starts a living local cluster on 127.0.0.1 (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and KWOK's simulated nodes,
built from Go modules into ~/.cache/kubecode the first time: about 20 minutes on 2 cores),
seeds namespaces, hundreds of pods (some crash-looping), deployments, services,
events, secrets and a CRD, plus workloads the cluster really runs in namespace
live, and serves the MCP broker over streamable HTTP. Ctrl-C stops everything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := g.logger()
			stderr := cmd.ErrOrStderr()
			start := time.Now()
			fmt.Fprintln(stderr, "kubecode demo: starting a local cluster (the first run builds its binaries: about 20 min on 2 cores)...")
			cp, err := controlplane.Start(ctx, &controlplane.Options{Progress: stderr, HoldControllers: true})
			if err != nil {
				return err
			}
			defer func() {
				fmt.Fprintln(stderr, "kubecode demo: stopping the control plane")
				_ = cp.Stop()
			}()
			fmt.Fprintf(stderr, "kubecode demo: control plane ready in %s; seeding the demo scenario...\n", time.Since(start).Round(100*time.Millisecond))
			truth, err := scenario.Seed(ctx, cp.Admin, cp.Kubelet, &scenario.SeedOptions{HealthyPods: pods, Progress: stderr, StartControllers: cp.StartControllers})
			if err != nil {
				return err
			}
			helmNote := "(no Helm release: run the demo from the repository, where examples/charts is)"
			if fi, err := os.Stat(filepath.Join("examples", "charts", "web-app")); err == nil && fi.IsDir() {
				charts, _ := filepath.Abs(filepath.Join("examples", "charts"))
				if err := helmdemo.Seed(ctx, cp.Admin, charts); err != nil {
					return err
				}
				helmNote = fmt.Sprintf("holds Helm release %s (chart web-app), edited by hand since:\nask what drifted", helmdemo.Release)
			}
			if bin, _ := workerBinary(g.workerBin); bin == "" && g.isolation != "none" {
				// go run leaves no worker beside kubecode: build it.
				if bin, err := buildWorker(ctx); err != nil {
					log.Info("could not build the script worker; scripts run in re-executed kubecode processes", "err", err)
				} else {
					g.workerBin = bin
				}
			}
			b, closer, err := g.newBroker(cp.Admin, "default", log)
			if err != nil {
				return err
			}
			defer closer.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				fmt.Fprintf(stderr, "kubecode demo: %v; using a free port instead\n", err)
				if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
					return err
				}
			}
			if len(hf.approverGroups) == 0 {
				// The demo's two people approve as themselves.
				hf.approverGroups = []string{controlplane.ReviewerGroup}
			}
			people, err := writePeople(cp.ReviewerTokens)
			if err != nil {
				log.Warn("the demo's two people have no token files: two-person plans cannot be approved", "error", err)
			}
			url := "http://" + ln.Addr().String() + "/mcp"
			fmt.Fprintf(cmd.OutOrStdout(), `
kubecode demo is ready (%s): %d pods seeded, %d crash-looping; namespace live
runs workloads the cluster reconciles (scale them, roll them out, delete them);
namespace %s %s.

  MCP endpoint (streamable HTTP):  %s

  Claude Code:   claude mcp add --transport http kubecode %s
  VS Code (.vscode/mcp.json):
                 {"servers": {"kubecode": {"type": "http", "url": "%s"}}}
  Inspector:     npx @modelcontextprotocol/inspector --cli %s --transport http --method tools/list

  kubectl:       export KUBECONFIG=%s

  Approve a plan:  kubecode approve PLAN-ID   (or the one-time link printed below)
  A plan that needs two people (one granting access, say): two people approve,
  each as themselves with their own token:
%s
Press Ctrl-C to stop.
`, time.Since(start).Round(100*time.Millisecond), truth.Pods, len(truth.CrashLooping), helmdemo.Namespace, helmNote, url, url, url, url, cp.AdminKubeconfig, people)
			if f, ok := cmd.OutOrStdout().(*os.File); ok {
				_ = f.Sync()
			}
			return serveHTTP(ctx, ln, b, log, nil, &hf)
		},
	}
	cmd.Flags().StringVar(&addr, "http", "127.0.0.1:8080", "address to serve streamable HTTP on (path /mcp)")
	hf.register(cmd)
	cmd.Flags().IntVar(&pods, "pods", 0, "healthy pods to generate (default: the demo's ~200; try 5000 for scale)")
	cmd.Flags().StringVar(&g.mode, "mode", "code", "tools to serve: code, direct or hybrid (see kubecode serve --help)")
	return cmd
}

// writePeople writes the demo's people's tokens to files of their own
// (0600, in the user's cache directory) and returns the commands with
// which each approves a plan as themselves.
func writePeople(tokens map[string]string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "kubecode", "demo-people")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var b strings.Builder
	names := make([]string, 0, len(tokens))
	for name := range tokens {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := filepath.Join(dir, name+".token")
		if err := os.WriteFile(f, []byte(tokens[name]), 0o600); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "                 kubecode approve PLAN-ID --token \"$(cat %s)\"   (%s)\n", f, name)
	}
	return b.String(), nil
}
