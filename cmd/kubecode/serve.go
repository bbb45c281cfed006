package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
)

func newServeCommand(g *globalFlags) *cobra.Command {
	var addr, authMode, publicURL string
	var authServers, audiences []string
	var stateless bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the MCP server over stdio (default) or streamable HTTP (--http)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if addr == "" && (authMode != "none" || stateless) {
				return fmt.Errorf("--auth and --stateless are for --http")
			}
			log := g.logger()
			if addr != "" {
				log = g.jsonLogger()
			}
			b, closer, err := g.broker(log)
			if err != nil {
				return err
			}
			defer closer.Close()
			if addr == "" {
				return b.Server().Run(cmd.Context(), &mcp.StdioTransport{})
			}
			hopts := &broker.HTTPOptions{Stateless: stateless, ResourceURL: publicURL, AuthorizationServers: authServers}
			switch authMode {
			case "none":
			case "passthrough", "impersonate":
				pass := authMode == "passthrough"
				if b.clusters > 1 {
					// A token is checked by one cluster: acting with its
					// identity on the others would trust that cluster's
					// word for theirs.
					return fmt.Errorf("--auth %s serves one cluster (a token is checked by one cluster only); run one server per cluster for users' own identities, or --auth none with --contexts", authMode)
				}
				if pass && len(audiences) > 0 {
					return fmt.Errorf("--token-audience is for --auth impersonate: passed-through tokens must be the API server's")
				}
				hopts.Authenticate = func(ctx context.Context, token string) (*catalog.Caller, error) {
					return b.k8s.Authenticate(ctx, token, pass, audiences...)
				}
			default:
				return fmt.Errorf("unknown --auth %q: use none, passthrough or impersonate", authMode)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			log.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "auth", authMode, "stateless", stateless)
			return serveHTTP(cmd.Context(), ln, b, log, hopts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8080) at path /mcp instead of stdio, with /healthz, /readyz and /metrics")
	f.StringVar(&g.mode, "mode", "code", "tools to serve: code (search_tools + execute_code), direct (one tool per operation) or hybrid (code mode plus a few direct tools)")
	f.StringVar(&authMode, "auth", "none", "who HTTP calls act for: none (the server's identity), passthrough (each request's bearer token is its Kubernetes identity) or impersonate (the server impersonates the token's user and groups)")
	f.StringVar(&publicURL, "public-url", "", "the endpoint's URL as clients reach it, for OAuth protected resource metadata (default: each request's scheme and host)")
	f.StringArrayVar(&authServers, "authorization-server", nil, "an OAuth authorization server (issuer URL) clients get tokens from, for the protected resource metadata; repeatable")
	f.StringArrayVar(&audiences, "token-audience", nil, "with --auth impersonate, accept only tokens meant for this audience (e.g. kubecode: kubectl create token NAME --audience kubecode), so they open nothing else; repeatable")
	f.BoolVar(&stateless, "stateless", false, "serve each HTTP request on its own (no sessions), so replicas behind one address can serve any request; replicas need the same plan key")
	return cmd
}

// serveHTTP serves the broker's HTTP endpoint until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener, b *wired, log *slog.Logger, hopts *broker.HTTPOptions) error {
	if hopts == nil {
		hopts = &broker.HTTPOptions{}
	}
	hopts.Metrics = promhttp.HandlerFor(b.metrics, promhttp.HandlerOpts{})
	srv := &http.Server{Handler: b.HTTPHandler(hopts), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
