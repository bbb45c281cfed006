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
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func newServeCommand(g *globalFlags) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the MCP server over stdio (default) or streamable HTTP (--http)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			b, closer, err := g.broker(log)
			if err != nil {
				return err
			}
			defer closer.Close()
			if addr == "" {
				return b.Server().Run(cmd.Context(), &mcp.StdioTransport{})
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			log.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp")
			return serveHTTP(cmd.Context(), ln, b, log)
		},
	}
	cmd.Flags().StringVar(&addr, "http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8080) at path /mcp instead of stdio")
	cmd.Flags().StringVar(&g.mode, "mode", "code", "tools to serve: code (search_tools + execute_code), direct (one tool per operation) or hybrid (code mode plus a few direct tools)")
	return cmd
}

// serveHTTP serves the broker at /mcp until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener, b *broker.Broker, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", b.HTTPHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
