package broker

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Instructions tell an agent how to work in code mode.
const Instructions = `kubecode runs your TypeScript against a Kubernetes cluster.
1. Call search_tools with what you want to do; it returns TypeScript declarations of matching operations (inputs and response shapes).
2. Call execute_code with one script that calls those operations as async functions on the global tools object, e.g. await tools.kubernetes.pods.list({ allNamespaces: true }), filters and joins the data in code, and returns only the answer.
Raw API responses stay in the sandbox; only the script's return value and console output come back to you, so return small, precise results. Secret values are never returned.`

const searchDescription = `Find Kubernetes and Helm operations for a task. Answers with TypeScript declarations (input and response types) of the best matches, to call from execute_code as tools.<name>(input). Query in plain words ("why is my pod crashing", "what changed since the helm release"), or with an operation or type name ("kubernetes.pods.list", "Pod") for its complete declaration.`

const executeDescription = `Run a TypeScript program in a sandbox where every operation from search_tools is an async function on the global tools object (e.g. await tools.kubernetes.pods.list({ namespace: "shop" })). Use Promise.all for parallel calls, filter and aggregate in code, and return only what answers the question: the script's return value (or last expression) and console output come back; raw API data does not. A failed call throws an Error with name, message, tool and code (HTTP status) that you can catch. No imports, fetch, or filesystem. timeout is in seconds (default 30, max 300). Changes (create, apply, patch, delete, scale, rollout, Helm install, upgrade, rollback, uninstall) pass safety gates: by default they run as server-side dry runs and the answer ends with a plan and a token; call again with the same code and approve: token to apply exactly that plan.`

type searchInput struct {
	Query string `json:"query" jsonschema:"what you want to do, in plain words or an operation name"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many operations to return (default 5)"`
}

type executeInput struct {
	Code    string  `json:"code" jsonschema:"TypeScript to run; top-level await and return work"`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"seconds before the script is stopped (default 30, max 300)"`
	Approve string  `json:"approve,omitempty" jsonschema:"a plan's token: re-run the same code and make exactly the planned changes"`
}

// DirectInstructions tell an agent how to work in direct mode.
const DirectInstructions = `kubecode serves each Kubernetes operation as a tool: lists answer with a table, gets with the object. Secret values are never returned.`

// Server returns a new MCP server with the tools of the broker's mode. In
// direct and hybrid modes its operation tools follow the catalog: a CRD
// installed later becomes a tool after the next call.
func (b *Broker) Server() *mcp.Server {
	instructions := Instructions
	if b.opts.Mode == ModeDirect {
		instructions = DirectInstructions
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "kubecode", Version: b.opts.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: b.opts.Logger})
	s.AddReceivingMiddleware(b.traceRequests)
	if b.opts.Mode != ModeDirect {
		mcp.AddTool(s, &mcp.Tool{Name: "search_tools", Description: searchDescription,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}}, b.searchTool)
		mcp.AddTool(s, &mcp.Tool{Name: "execute_code", Description: executeDescription}, b.executeTool)
	}
	if b.opts.Mode == ModeDirect || b.opts.Mode == ModeHybrid {
		ds := &directServer{s: s, served: map[string]bool{}}
		b.mu.Lock()
		b.direct = append(b.direct, ds)
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
		defer cancel()
		if st, err := b.state(ctx); err != nil {
			b.opts.Logger.Error("no operation tools yet: the catalog is unavailable", "error", err)
		} else {
			b.mu.Lock()
			b.syncDirectTools(ds.s, st.ops, ds.served)
			b.mu.Unlock()
		}
	}
	return s
}

// directServer is a server whose operation tools follow the catalog.
type directServer struct {
	s      *mcp.Server
	served map[string]bool // tool names
}

func textResult(text string, isErr bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}
}
