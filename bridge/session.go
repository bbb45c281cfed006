package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
)

// Session handles the JSON-RPC requests of one execution: its calls share
// a trace id and are kept in its ledger.
type Session struct {
	b     *Bridge
	trace string

	mu     sync.Mutex
	seq    int
	ledger []Entry
}

// Session returns a call context for one execution.
func (b *Bridge) Session(trace string) *Session {
	return &Session{b: b, trace: trace}
}

// Handle serves one JSON-RPC 2.0 request and returns the response bytes,
// or nil for a notification (a request without an id). It is safe for
// concurrent use: scripts make calls in parallel.
func (s *Session) Handle(ctx context.Context, req []byte) (out []byte) {
	if !json.Valid(req) {
		return errorResponse(nil, CodeParseError, "parse error: not valid JSON", nil)
	}
	var r Request
	if err := json.Unmarshal(req, &r); err != nil {
		return errorResponse(nil, CodeInvalidRequest, "invalid request: need one JSON-RPC 2.0 request object (batches are not supported)", nil)
	}
	if len(r.ID) == 0 {
		// A notification: do the work, send no response.
		defer func() { out = nil }()
	}
	if r.JSONRPC != "2.0" || r.Method == "" {
		return errorResponse(r.ID, CodeInvalidRequest, `invalid request: need "jsonrpc":"2.0" and a method`, nil)
	}
	switch r.Method {
	case MethodList:
		list, _, err := s.b.Operations(ctx)
		if err != nil {
			return errorResponse(r.ID, CodeInternal, err.Error(), nil)
		}
		names := make([]string, len(list))
		for i, op := range list {
			names[i] = op.Name
		}
		out, _ := json.Marshal(names)
		return resultResponse(r.ID, out)
	case MethodCall:
		var p CallParams
		if err := json.Unmarshal(r.Params, &p); err != nil || p.Name == "" {
			return errorResponse(r.ID, CodeInvalidParams, `invalid params: need {"name": string, "arguments": object}`, nil)
		}
		result, rpcErr := s.call(ctx, p.Name, p.Arguments)
		if rpcErr != nil {
			return errorResponse(r.ID, rpcErr.Code, rpcErr.Message, rpcErr.Data)
		}
		return resultResponse(r.ID, result)
	}
	return errorResponse(r.ID, CodeMethodNotFound, "method not found: "+r.Method, nil)
}

// call runs one operation call and records it in the ledger.
func (s *Session) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, *RPCError) {
	start := s.b.opts.Now()
	c := &callInfo{name: name, args: args}
	out, rpcErr := s.dispatch(ctx, c)
	s.record(start, c, rpcErr, len(out))
	return out, rpcErr
}

// callInfo is what the ledger says of a call: the operation's canonical
// name once known, and the arguments as the provider saw them.
type callInfo struct {
	name string
	args json.RawMessage
}

// dispatch validates, dispatches and shapes one operation call.
func (s *Session) dispatch(ctx context.Context, c *callInfo) (json.RawMessage, *RPCError) {
	e := s.b.lookup(c.name)
	if e == nil && s.b.refreshOnMiss(ctx) {
		// The table may predate a CRD installed since: look once more.
		e = s.b.lookup(c.name)
	}
	if e == nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "unknown operation " + c.name,
			Data: &ErrorData{Tool: c.name, Reason: ReasonUnknownOperation, Suggestions: s.b.suggest(c.name)}}
	}
	c.name = e.op.Name
	if len(c.args) == 0 || string(c.args) == "null" {
		c.args = json.RawMessage("{}")
	}
	if err := validateArgs(e.op, c.args); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: err.Error(), Data: &ErrorData{Tool: c.name, Reason: "Invalid", Field: err.field}}
	}
	out, err := e.provider.Call(ctx, c.name, c.args)
	if err != nil {
		rpcErr := &RPCError{Code: CodeOperationFailed, Message: err.Error(), Data: &ErrorData{Tool: c.name}}
		var se StatusError
		if errors.As(err, &se) {
			rpcErr.Data.Status, rpcErr.Data.Reason = se.HTTPStatus(), se.Reason()
		}
		if ctx.Err() != nil {
			rpcErr.Data.Reason = "Canceled"
		}
		return nil, rpcErr
	}
	out, err = shape(out, s.b.opts.KeepManagedFields)
	if err != nil {
		return nil, &RPCError{Code: CodeInternal, Message: err.Error(), Data: &ErrorData{Tool: c.name, Reason: "Redaction"}}
	}
	return out, nil
}
