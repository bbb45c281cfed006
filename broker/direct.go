package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolMode selects the tools the broker serves.
type ToolMode string

const (
	// ModeCode serves search_tools and execute_code: the agent writes
	// TypeScript and only its answer comes back.
	ModeCode ToolMode = "code"
	// ModeDirect serves each catalog operation as a tool of its own, as
	// classic MCP servers do: lists come back as tables, gets as compact
	// objects. Calls go through the same bridge, policy and ledger.
	ModeDirect ToolMode = "direct"
	// ModeHybrid serves code mode's two tools plus the operations in
	// Options.DirectTools as tools of their own, for one-shot questions.
	ModeHybrid ToolMode = "hybrid"
)

// ParseMode returns the ToolMode named s.
func ParseMode(s string) (ToolMode, error) {
	switch m := ToolMode(s); m {
	case ModeCode, ModeDirect, ModeHybrid:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: use code, direct or hybrid", s)
}

// defaultHybridTools are the operations hybrid mode serves directly when
// Options.DirectTools names none: the one-shot questions of an incident.
var defaultHybridTools = []string{"kubernetes.pods.list", "kubernetes.pods.logs", "kubernetes.events.list"}

// maxToolName is the longest tool name clients accept (some allow no more
// than 64 characters).
const maxToolName = 64

// toolName is the MCP tool name of an operation: its name with '_' for
// '.', which not every client allows.
func toolName(op string) string { return strings.ReplaceAll(op, ".", "_") }

// directOps returns the operations served as tools of their own.
func (b *Broker) directOps(ops []*catalog.Operation) []*catalog.Operation {
	switch b.opts.Mode {
	case ModeDirect:
		// Changes are served in code mode only, where a plan can be
		// approved: a direct tool call has no way to carry a token.
		var out []*catalog.Operation
		for _, op := range ops {
			if op.Annotations.ReadOnly {
				out = append(out, op)
			}
		}
		return out
	case ModeHybrid:
		names := b.opts.DirectTools
		if len(names) == 0 {
			names = defaultHybridTools
		}
		var out []*catalog.Operation
		for _, op := range ops {
			for _, n := range names {
				if op.Name == n {
					out = append(out, op)
				}
			}
		}
		return out
	}
	return nil
}

// syncDirectTools makes s serve exactly the direct tools of ops.
func (b *Broker) syncDirectTools(s *mcp.Server, ops []*catalog.Operation, served map[string]bool) {
	want := map[string]bool{}
	for _, op := range b.directOps(ops) {
		name := toolName(op.Name)
		if len(name) > maxToolName {
			b.opts.Logger.Warn("operation name too long for a tool; reach it in code mode", "operation", op.Name)
			continue
		}
		want[name] = true
		input := any(op.Input)
		if op.Input == nil || op.Input.Type != "object" {
			input = map[string]any{"type": "object"}
		}
		s.AddTool(&mcp.Tool{Name: name, Description: op.Description, InputSchema: input,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: op.Annotations.ReadOnly, IdempotentHint: op.Annotations.Idempotent,
				DestructiveHint: &op.Annotations.Destructive}}, b.directTool(op))
	}
	var gone []string
	for name := range served {
		if !want[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.RemoveTools(gone...)
	}
	clear(served)
	for name := range want {
		served[name] = true
	}
}

// directTool is the handler of an operation's own tool: one bridge call,
// its result rendered for reading.
func (b *Broker) directTool(op *catalog.Operation) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, err := b.state(ctx); err != nil { // keeps the tool list current
			return textResult("the catalog is unavailable: "+err.Error(), true), nil
		}
		args := req.Params.Arguments
		trace := fmt.Sprintf("call-%d-%d", time.Now().UnixMilli(), b.trace.Add(1))
		s := b.bridge.Session(trace)
		s.SetCaller(callerOf(req))
		out, err := bridgeHost(s)(ctx, op.Name, args)
		if err != nil {
			return textResult(err.Error(), true), nil
		}
		return textResult(render(op, out), false), nil
	}
}

// render writes an operation's JSON result for a model to read: a list of
// objects as a table, a string as its text, anything else as compact JSON.
func render(op *catalog.Operation, out json.RawMessage) string {
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return string(out)
	}
	switch t := v.(type) {
	case string:
		return t
	case []any:
		if len(t) == 0 {
			return "(none)"
		}
		if _, ok := t[0].(map[string]any); ok {
			var cols []catalog.Column
			if op.Hints != nil {
				cols = op.Hints.Columns
			}
			return table(t, cols)
		}
	}
	return string(out)
}
