package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/internal/editdistance"
)

// Provider is an adapter: it describes its operations and executes them.
type Provider interface {
	// Discover returns the provider's operations and a version string that
	// changes whenever the set of operations does.
	Discover(ctx context.Context) ([]*catalog.Operation, string, error)
	// Call executes one operation with JSON arguments already validated
	// against its Input schema.
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// StatusError is implemented by provider errors that carry an HTTP status
// and a machine-readable reason (Kubernetes API errors do).
type StatusError interface {
	error
	HTTPStatus() int
	Reason() string
}

// Options configures a Bridge. A nil *Options means defaults.
type Options struct {
	// RefreshInterval is how old the operation table may get before
	// Operations asks the providers again. Zero means 2s.
	RefreshInterval time.Duration
	// Ledger receives every call as one JSON line. Nil means calls are
	// kept only in each Session.
	Ledger io.Writer
	// KeepManagedFields keeps metadata.managedFields and the
	// last-applied-configuration annotation in results. Zero drops them.
	KeepManagedFields bool
	// Now is the clock for ledger entries. Nil means time.Now.
	Now func() time.Time
}

// Bridge dispatches operation calls to providers.
type Bridge struct {
	providers []Provider
	opts      Options

	mu        sync.RWMutex
	ops       map[string]*entry // canonical name → entry
	aliases   map[string]string
	list      []*catalog.Operation
	version   string
	refreshed time.Time

	ledgerMu   sync.Mutex
	refreshing atomic.Bool
	missMu     sync.Mutex
}

type entry struct {
	op       *catalog.Operation
	provider Provider
}

// New returns a Bridge over providers.
func New(providers []Provider, opts *Options) *Bridge {
	b := &Bridge{providers: providers}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.RefreshInterval == 0 {
		b.opts.RefreshInterval = 2 * time.Second
	}
	if b.opts.Now == nil {
		b.opts.Now = time.Now
	}
	return b
}

// Operations returns every operation and a version that changes when they
// do. The first call asks the providers; later calls return the current
// table at once and, when it is older than RefreshInterval, refresh it in
// the background (so a CRD installed at run time appears within about one
// interval without slowing any request).
func (b *Bridge) Operations(ctx context.Context) ([]*catalog.Operation, string, error) {
	b.mu.RLock()
	stale := b.opts.Now().Sub(b.refreshed) >= b.opts.RefreshInterval
	list, version := b.list, b.version
	b.mu.RUnlock()
	if list == nil {
		return b.Refresh(ctx)
	}
	if stale && b.refreshing.CompareAndSwap(false, true) {
		go func() {
			defer b.refreshing.Store(false)
			rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _, _ = b.Refresh(rctx) // on failure the current table stays
		}()
	}
	return list, version, nil
}

// Refresh asks every provider for its operations now.
func (b *Bridge) Refresh(ctx context.Context) ([]*catalog.Operation, string, error) {
	ops := map[string]*entry{}
	aliases := map[string]string{}
	var list []*catalog.Operation
	var versions []string
	for _, p := range b.providers {
		pops, v, err := p.Discover(ctx)
		if err != nil {
			return nil, "", err
		}
		versions = append(versions, v)
		for _, op := range pops {
			if _, dup := ops[op.Name]; dup {
				return nil, "", fmt.Errorf("bridge: two providers define operation %q", op.Name)
			}
			ops[op.Name] = &entry{op: op, provider: p}
			list = append(list, op)
		}
	}
	for _, e := range ops {
		for _, a := range e.op.Aliases {
			if _, real := ops[a]; !real {
				aliases[a] = e.op.Name
			}
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	version := strings.Join(versions, "+")
	b.mu.Lock()
	b.ops, b.aliases, b.list, b.version, b.refreshed = ops, aliases, list, version, b.opts.Now()
	b.mu.Unlock()
	return list, version, nil
}

func (b *Bridge) lookup(name string) *entry {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if e, ok := b.ops[name]; ok {
		return e
	}
	if c, ok := b.aliases[name]; ok {
		return b.ops[c]
	}
	return nil
}

// Session returns a call context for one execution: its calls share the
// trace id and are kept in its ledger.
func (b *Bridge) Session(trace string) *Session {
	return &Session{b: b, trace: trace}
}

// Session handles the JSON-RPC requests of one execution.
type Session struct {
	b     *Bridge
	trace string

	mu     sync.Mutex
	seq    int
	ledger []Entry
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

// call validates, dispatches, shapes and records one operation call.
func (s *Session) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, *RPCError) {
	start := s.b.opts.Now()
	e := s.b.lookup(name)
	if e == nil && s.b.refreshOnMiss(ctx) {
		// The table may predate a CRD installed since: look once more.
		e = s.b.lookup(name)
	}
	if e == nil {
		rpcErr := &RPCError{Code: CodeInvalidParams, Message: "unknown operation " + name,
			Data: &ErrorData{Tool: name, Reason: "UnknownOperation", Suggestions: s.b.suggest(name)}}
		s.record(start, name, args, rpcErr, 0)
		return nil, rpcErr
	}
	name = e.op.Name
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if err := validateArgs(e.op, args); err != nil {
		rpcErr := &RPCError{Code: CodeInvalidParams, Message: err.Error(), Data: &ErrorData{Tool: name, Reason: "Invalid", Field: err.field}}
		s.record(start, name, args, rpcErr, 0)
		return nil, rpcErr
	}
	out, err := e.provider.Call(ctx, name, args)
	if err != nil {
		rpcErr := &RPCError{Code: CodeOperationFailed, Message: err.Error(), Data: &ErrorData{Tool: name}}
		var se StatusError
		if errors.As(err, &se) {
			rpcErr.Data.Status, rpcErr.Data.Reason = se.HTTPStatus(), se.Reason()
		}
		if ctx.Err() != nil {
			rpcErr.Data.Reason = "Canceled"
		}
		s.record(start, name, args, rpcErr, 0)
		return nil, rpcErr
	}
	if out, err = shape(out, s.b.opts.KeepManagedFields); err != nil {
		rpcErr := &RPCError{Code: CodeInternal, Message: err.Error(), Data: &ErrorData{Tool: name, Reason: "Redaction"}}
		s.record(start, name, args, rpcErr, 0)
		return nil, rpcErr
	}
	s.record(start, name, args, nil, len(out))
	return out, nil
}

// refreshOnMiss refreshes the table for a call to an unknown operation, at
// most once a second however many calls miss at once.
func (b *Bridge) refreshOnMiss(ctx context.Context) bool {
	b.missMu.Lock()
	defer b.missMu.Unlock()
	b.mu.RLock()
	recent := b.opts.Now().Sub(b.refreshed) < time.Second
	b.mu.RUnlock()
	if recent {
		return true
	}
	_, _, err := b.Refresh(ctx)
	return err == nil
}

func (b *Bridge) suggest(name string) []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []string
	want := strings.ToLower(name)
	for n := range b.ops {
		if d := editdistance.Levenshtein(want, strings.ToLower(n)); d <= max(3, len(want)/4) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}
