// Command noop is the yardstick of MCP's own cost for kubecode's
// benchmarks: a Go SDK MCP server with one tool, "noop", that answers "2",
// and nothing else in its binary. It serves stdio, or with -http streamable
// HTTP on a loopback port, whose URL it prints.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	useHTTP := flag.Bool("http", false, "serve streamable HTTP on a loopback port (its URL is printed) instead of stdio")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "noop", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "noop", Description: "answers 2"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "2"}}}, nil, nil
	})
	if !*useHTTP {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
}
