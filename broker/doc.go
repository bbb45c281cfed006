// Package broker is kubecode's MCP server. It exposes exactly two tools:
// search_tools, which answers a query with TypeScript declarations of the
// matching operations, and execute_code, which runs the agent's TypeScript
// in the sandbox, where every operation call goes through the bridge.
//
//	b := broker.New(bridge.New(providers, nil), nil)
//	err := b.Server().Run(ctx, &mcp.StdioTransport{})
//	// or, at /mcp with /healthz, /readyz (and /metrics, authentication: HTTPOptions):
//	err = http.ListenAndServe(addr, b.HTTPHandler(nil))
package broker
