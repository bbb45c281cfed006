package broker

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Instructions tell an agent how to work in code mode.
const Instructions = `kubecode runs your TypeScript against Kubernetes and Helm: find operations with search_tools, then call them in one execute_code script that returns only the answer. Raw API data stays in the sandbox; Secret values are never returned.`

const searchDescription = `Find Kubernetes and Helm operations for a task; answers with their TypeScript signatures, to call in execute_code as tools.<name>(input). Ask in plain words ("why is my pod crashing"), or by name for every field ("kubernetes.pods.list", "Pod", "PodStatus").`

const executeDescription = `Run TypeScript; each operation is an async function on tools, named tools.<provider>.<resource>.<verb>: tools.kubernetes.<plural>.list({ namespace?, allNamespaces?, labelSelector?, fieldSelector? }) returns a plain array of API objects as kubectl get -o json shows them (metadata, spec, status; Secret values hidden); get({ name, namespace? }); create, apply, patch, delete, scale; pods.logs({ name, namespace?, container?, previous?, tailLines? }) returns text; deployments.rollout.status/restart/undo/history; CRDs alike; tools.helm.list/status/history/drift/install/upgrade/rollback. A wrong name or field is refused before anything runs, with the declaration to fix it; search_tools finds the rest. Use Promise.all for parallel calls; filter in code and return only the answer: the return value and console come back, raw API data does not. A failed call throws an Error (message, tool, code: HTTP status). No imports, fetch or filesystem. Changes are dry runs by default: the answer ends with a plan and its id; once a person approves it, re-run the same code with approve: id to apply exactly that plan.`

type searchInput struct {
	Query string `json:"query" jsonschema:"the task in plain words, or an operation name"`
	Limit int    `json:"limit,omitempty" jsonschema:"default 5"`
}

type executeInput struct {
	Code    string  `json:"code" jsonschema:"TypeScript; top-level await and return work"`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"seconds (default 30, max 300)"`
	Approve string  `json:"approve,omitempty" jsonschema:"a plan's id: make exactly the planned changes"`
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
	b.addPrompts(s)
	if b.opts.Mode != ModeDirect {
		addTool(s, &mcp.Tool{Name: "search_tools", Description: searchDescription,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}}, b.searchTool)
		addTool(s, &mcp.Tool{Name: "execute_code", Description: executeDescription}, b.executeTool)
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
