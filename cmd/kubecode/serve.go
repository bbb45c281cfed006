package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
)

func newServeCommand(g *globalFlags) *cobra.Command {
	var addr, authMode, publicURL, approvalsAddr string
	var authServers, audiences []string
	var stateless bool
	var hf httpFlags
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
				ctx, cancel := context.WithCancel(cmd.Context())
				defer cancel()
				if err := serveLocalApprovals(ctx, approvalsAddr, b, log); err != nil {
					return err
				}
				b.Warm()
				return b.Server().Run(ctx, &mcp.StdioTransport{})
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
				for _, name := range b.sharedIdentity {
					log.Warn("under --auth, this upstream acts with the operator's credentials for every user: give it tokenExchange for each user's own identity (docs/upstreams.md)", "upstream", name)
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
			return serveHTTP(cmd.Context(), ln, b, log, hopts, &hf)
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
	f.StringSliceVar(&hf.approverGroups, "approver-groups", nil, "with --auth, only members of these groups may approve or deny plans (default: any person the cluster authenticates; ServiceAccounts never); without --auth, members may also approve as themselves with their own token (kubecode approve --token), beside the local key: how two people approve a plan that needs two")
	f.StringVar(&approvalsAddr, "approvals-addr", "127.0.0.1:0", "with stdio, the loopback address of the approval page where people approve plans (the link is printed on stderr for each plan)")
	hf.register(cmd)
	return cmd
}

// httpFlags are the HTTP endpoint's guards, for serve and demo.
type httpFlags struct {
	allowedHosts, allowedOrigins []string
	metricsAddr                  string
	maxSessions, maxPerCaller    int
	approverGroups               []string // serve only
}

func (h *httpFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&h.allowedHosts, "allowed-hosts", nil, "more names clients reach the server by (Host headers; the listen address's and the --public-url's are allowed): a request under any other name is refused, so a web page cannot reach the server through DNS rebinding; * allows any")
	f.StringSliceVar(&h.allowedOrigins, "allowed-origins", nil, "origins (https://app.example.com) whose web pages may call the server; requests from other pages are refused (default: none, and pages on loopback hosts when the server listens on loopback)")
	f.StringVar(&h.metricsAddr, "metrics-addr", "", "serve /metrics on this address of its own (e.g. :9090) instead of beside /mcp, where it needs the same authentication as /mcp")
	f.IntVar(&h.maxSessions, "max-sessions", 1000, "most open MCP sessions; idle ones close after 30 minutes")
	f.IntVar(&h.maxPerCaller, "max-sessions-per-caller", 100, "most open MCP sessions of one caller (a token's user; without --auth, a client address)")
}

// options fills hopts' guards for a server listening on addr.
func (h *httpFlags) options(addr net.Addr, hopts *broker.HTTPOptions) error {
	hosts := append(broker.ServerHosts(addr), h.allowedHosts...)
	if hopts.ResourceURL != "" {
		u, err := url.Parse(hopts.ResourceURL)
		if err != nil || u.Host == "" {
			return fmt.Errorf("--public-url %q is not a URL", hopts.ResourceURL)
		}
		hosts = append(hosts, u.Hostname())
	}
	hopts.AllowedHosts = hosts
	hopts.AllowedOrigins = h.allowedOrigins
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		hopts.LoopbackOrigins = true
	}
	if h.maxSessions < 1 || h.maxPerCaller < 1 {
		return fmt.Errorf("--max-sessions and --max-sessions-per-caller must be at least 1")
	}
	hopts.MaxSessions, hopts.MaxSessionsPerCaller = h.maxSessions, h.maxPerCaller
	return nil
}

// isTerminal says whether f is a terminal.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// serveHTTP serves the broker's HTTP endpoint until ctx ends, and
// /metrics beside it or on an address of its own.
func serveHTTP(ctx context.Context, ln net.Listener, b *wired, log *slog.Logger, hopts *broker.HTTPOptions, hf *httpFlags) error {
	if hopts == nil {
		hopts = &broker.HTTPOptions{}
	}
	if hf == nil {
		hf = &httpFlags{maxSessions: 1000, maxPerCaller: 100}
	}
	if err := hf.options(ln.Addr(), hopts); err != nil {
		return err
	}
	if hopts.Approvals == nil {
		// People approve plans on a page beside /mcp: signed in with
		// their own token under --auth, else by one-time links on stderr.
		u := httpApprovalURL(hopts.ResourceURL, ln.Addr())
		if hopts.Authenticate != nil {
			hopts.Approvals = &broker.ApprovalOptions{URL: u, ApproverGroups: hf.approverGroups}
		} else {
			hopts.Approvals = localApprovalOptions(u, log)
			if len(hf.approverGroups) > 0 {
				// Members of these groups approve as themselves, each
				// with their own token: two of them make a two-person
				// approval. No one else's token is taken.
				hopts.Approvals.People, hopts.Approvals.ApproverGroups = b.people, hf.approverGroups
			}
			// One-time links go to a terminal only: a pod's log can be read
			// by a script (pods.logs), a terminal cannot.
			hopts.Approvals.NoLinks = !isTerminal(os.Stderr)
		}
		log.Info("approval page", "url", u+"/")
	}
	metrics := promhttp.HandlerFor(b.metrics, promhttp.HandlerOpts{})
	servers := []*http.Server{{}}
	listeners := []net.Listener{ln}
	if hf.metricsAddr != "" {
		mln, err := net.Listen("tcp", hf.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics)
		servers = append(servers, &http.Server{Handler: mux})
		listeners = append(listeners, mln)
		log.Info("serving metrics", "url", "http://"+mln.Addr().String()+"/metrics")
	} else {
		hopts.Metrics = metrics
	}
	servers[0].Handler = b.HTTPHandler(hopts)
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		// A client gets 10 s to send its headers and 30 s its body (the
		// handler's own deadline); an idle connection closes after 2 min.
		srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes = 10*time.Second, 2*time.Minute, 64<<10
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shutdown: %w", err)
		}
	}
	return nil
}
