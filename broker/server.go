package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubecode/kubecode/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Instructions tell an agent how to work in code mode.
const Instructions = `kubecode runs your TypeScript against a Kubernetes cluster.
1. Call search_tools with what you want to do; it returns TypeScript declarations of matching operations (inputs and response shapes).
2. Call execute_code with one script that calls those operations as async functions on the global tools object, e.g. await tools.kubernetes.pods.list({ allNamespaces: true }), filters and joins the data in code, and returns only the answer.
Raw API responses stay in the sandbox; only the script's return value and console output come back to you, so return small, precise results. Secret values are never returned.`

const searchDescription = `Find Kubernetes operations for a task. Answers with TypeScript declarations (input and response types) of the best matches, to call from execute_code as tools.<name>(input). Query in plain words: "why is my pod crashing", "scale a deployment", "services without endpoints".`

const executeDescription = `Run a TypeScript program in a sandbox where every operation from search_tools is an async function on the global tools object (e.g. await tools.kubernetes.pods.list({ namespace: "shop" })). Use Promise.all for parallel calls, filter and aggregate in code, and return only what answers the question: the script's return value (or last expression) and console output come back; raw API data does not. A failed call throws an Error with name, message, tool and code (HTTP status) that you can catch. No imports, fetch, or filesystem. timeout is in seconds (default 30, max 300).`

type searchInput struct {
	Query string `json:"query" jsonschema:"what you want to do, in plain words or an operation name"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many operations to return (default 8)"`
}

type executeInput struct {
	Code    string  `json:"code" jsonschema:"TypeScript to run; top-level await and return work"`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"seconds before the script is stopped (default 30, max 300)"`
}

// Server returns a new MCP server with the two tools.
func (b *Broker) Server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "kubecode", Version: b.opts.Version},
		&mcp.ServerOptions{Instructions: Instructions, Logger: b.opts.Logger})
	mcp.AddTool(s, &mcp.Tool{Name: "search_tools", Description: searchDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}}, b.searchTool)
	mcp.AddTool(s, &mcp.Tool{Name: "execute_code", Description: executeDescription}, b.executeTool)
	return s
}

func textResult(text string, isErr bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}
}

func (b *Broker) searchTool(ctx context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, any, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return textResult("query is empty: describe what you want to do, e.g. \"list pods that restarted\"", true), nil, nil
	}
	if in.Limit < 0 || in.Limit > 50 {
		return textResult("limit must be between 1 and 50", true), nil, nil
	}
	decls, ops, err := b.Search(ctx, q, in.Limit)
	if err != nil {
		return textResult("search failed: "+err.Error(), true), nil, nil
	}
	if len(ops) == 0 {
		return textResult(fmt.Sprintf("No operation matches %q. Try other words (a resource such as \"pods\", a verb such as \"logs\"), or run tools.kubernetes.api_resources() in execute_code to see every resource.", q), false), nil, nil
	}
	return textResult(decls, false), nil, nil
}

func (b *Broker) executeTool(ctx context.Context, _ *mcp.CallToolRequest, in executeInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Code) == "" {
		return textResult("code is empty: send a TypeScript program that returns its answer", true), nil, nil
	}
	if in.Timeout < 0 {
		return textResult("timeout must be a positive number of seconds", true), nil, nil
	}
	ex, err := b.Execute(ctx, in.Code, time.Duration(in.Timeout*float64(time.Second)))
	if err != nil {
		return textResult("execution failed before the script ran: "+err.Error(), true), nil, nil
	}
	res := FormatResult(ex.Result)
	structured := map[string]any{"calls": ex.Calls, "durationMs": ex.Duration.Milliseconds()}
	if ex.Error != nil {
		structured["error"] = ex.Error
	} else if ex.Value != nil {
		structured["result"] = ex.Value
	}
	if ex.Console != "" {
		structured["console"] = ex.Console
	}
	if ex.Truncated {
		structured["truncated"] = true
	}
	res.StructuredContent = structured
	return res, nil, nil
}

// FormatResult renders an execution for the model: the result as JSON (or
// the positioned error), then console output.
func FormatResult(r *runtime.Result) *mcp.CallToolResult {
	var b strings.Builder
	isErr := false
	if r.Error != nil {
		isErr = true
		b.WriteString(r.Error.Error())
		for _, f := range r.Error.Stack[min(1, len(r.Error.Stack)):] {
			b.WriteString("\n    at " + f)
		}
		if r.Error.Hint != "" {
			b.WriteString("\nhint: " + r.Error.Hint)
		}
	} else if r.Value == nil {
		b.WriteString("(no result: the script produced undefined; end it with `return <value>`)")
	} else {
		b.Write(r.Value)
	}
	if r.Console != "" {
		b.WriteString("\n--- console ---\n")
		b.WriteString(strings.TrimRight(r.Console, "\n"))
	}
	return textResult(b.String(), isErr)
}

// ErrorJSON is a helper for tests and the CLI: the error as JSON.
func ErrorJSON(e *runtime.Error) string {
	if e == nil {
		return ""
	}
	b, err := json.Marshal(e)
	if err != nil {
		return errors.New("unprintable error").Error()
	}
	return string(b)
}
