package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Execution is the outcome of execute_code: the runtime's result and the
// bridge's ledger of the calls the script made.
type Execution struct {
	*runtime.Result
	Trace  string         `json:"trace"`
	Ledger []bridge.Entry `json:"-"`
}

// Execute runs code as execute_code does. A zero timeout means the
// runtime's default.
func (b *Broker) Execute(ctx context.Context, code string, timeout time.Duration) (*Execution, error) {
	st, err := b.state(ctx)
	if err != nil {
		return nil, err
	}
	trace := fmt.Sprintf("exec-%d-%d", time.Now().UnixMilli(), b.trace.Add(1))
	s := b.bridge.Session(trace)
	eo := &runtime.ExecOptions{Timeout: timeout, Host: bridgeHost(s)}
	var res *runtime.Result
	if b.opts.Pool != nil {
		res = b.opts.Pool.Execute(ctx, st.hostOps, code, eo)
	} else {
		res = st.rt.Execute(ctx, code, eo)
	}
	b.opts.Logger.Debug("executed", "trace", trace, "calls", res.Calls, "duration", res.Duration, "error", res.Error)
	return &Execution{Result: res, Trace: trace, Ledger: s.Ledger()}, nil
}

// bridgeHost is the sandbox's way out for one execution: every operation
// call becomes a JSON-RPC request to the execution's bridge session (ids
// count from 1 within the execution), and an error response becomes a
// CallError the script can catch.
func bridgeHost(s *bridge.Session) runtime.HostFunc {
	var id atomic.Int64
	return func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		params, err := json.Marshal(bridge.CallParams{Name: name, Arguments: args})
		if err != nil {
			return nil, fmt.Errorf("encode call: %w", err)
		}
		req, err := json.Marshal(bridge.Request{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id.Add(1), 10)),
			Method: bridge.MethodCall, Params: params})
		if err != nil {
			return nil, fmt.Errorf("encode call: %w", err)
		}
		var resp bridge.Response
		if err := json.Unmarshal(s.Handle(ctx, req), &resp); err != nil {
			return nil, fmt.Errorf("bad bridge response: %w", err)
		}
		if resp.Error != nil {
			ce := &runtime.CallError{Name: "ToolError", Message: resp.Error.Message, Code: json.RawMessage(strconv.Itoa(resp.Error.Code))}
			if d := resp.Error.Data; d != nil {
				ce.Reason = d.Reason
				if d.Status != 0 {
					ce.Code = json.RawMessage(strconv.Itoa(d.Status))
				}
			}
			return nil, ce
		}
		return resp.Result, nil
	}
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
	// Every execution is answered: a result the transport could not encode
	// becomes an error the model can act on, never a missing reply.
	if _, err := json.Marshal(structured); err != nil {
		return textResult("the script's result cannot be sent back: "+err.Error()+"; return plain, flat data", true), nil, nil
	}
	res.StructuredContent = structured
	return res, nil, nil
}

// FormatResult renders an execution for the model: a string result as its
// text, any other result as compact JSON (or the positioned error), then
// console output.
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
	} else if s, ok := jsonString(r.Value); ok {
		b.WriteString(s) // a string result is the answer's text
	} else {
		b.Write(r.Value)
	}
	if r.Console != "" {
		b.WriteString("\n--- console ---\n")
		b.WriteString(strings.TrimRight(r.Console, "\n"))
	}
	return textResult(b.String(), isErr)
}

// jsonString returns the string v holds when v is a JSON string.
func jsonString(v json.RawMessage) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}
