package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures a Broker. A nil *Options means defaults.
type Options struct {
	// Runtime configures the sandbox (timeouts, limits). Nil means the
	// runtime's defaults.
	Runtime *runtime.Options
	// SearchLimit is how many operations search_tools returns by default.
	// Zero means 8.
	SearchLimit int
	// Version is reported to MCP clients. Zero means "dev".
	Version string
	// Logger receives diagnostics. Nil means slog.Default().
	Logger *slog.Logger
}

// Broker serves the two tools over the operations of one bridge.
type Broker struct {
	bridge *bridge.Bridge
	opts   Options
	trace  atomic.Int64

	mu      sync.Mutex
	version string
	st      *state
}

// state is everything derived from one version of the operation table. It
// is immutable and replaced whole when the operations change.
type state struct {
	ops   []*catalog.Operation
	index *catalog.Index
	rt    *runtime.Runtime
}

// New returns a Broker over b.
func New(b *bridge.Bridge, opts *Options) *Broker {
	br := &Broker{bridge: b}
	if opts != nil {
		br.opts = *opts
	}
	if br.opts.SearchLimit == 0 {
		br.opts.SearchLimit = 8
	}
	if br.opts.Version == "" {
		br.opts.Version = "dev"
	}
	if br.opts.Logger == nil {
		br.opts.Logger = slog.Default()
	}
	return br
}

// state returns the current operations, index and runtime, rebuilding them
// when the bridge reports a new version (a CRD appeared, say).
func (b *Broker) state(ctx context.Context) (*state, error) {
	// The first discovery runs in the request: bound it, since the script's
	// own timeout has not started yet.
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	ops, version, err := b.bridge.Operations(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.st != nil && version == b.version {
		return b.st, nil
	}
	start := time.Now()
	idx, err := catalog.NewIndex(ops, nil)
	if err != nil {
		return nil, fmt.Errorf("build search index: %w", err)
	}
	hostOps := make([]runtime.Operation, 0, len(ops))
	for _, op := range ops {
		hostOps = append(hostOps, runtime.Operation{Name: op.Name, Aliases: op.Aliases, Call: hostCall(op.Name)})
	}
	rt, err := runtime.New(hostOps, b.opts.Runtime)
	if err != nil {
		return nil, fmt.Errorf("build runtime: %w", err)
	}
	b.st, b.version = &state{ops: ops, index: idx, rt: rt}, version
	b.opts.Logger.Info("catalog ready", "operations", len(ops), "version", version, "took", time.Since(start))
	return b.st, nil
}

// stateTimeout bounds discovery of the operations before a request.
const stateTimeout = 30 * time.Second

type sessionKey struct{}

var rpcID atomic.Int64

// hostCall is the sandbox's view of an operation: it sends a JSON-RPC
// request to the execution's bridge session and turns an error response
// into a CallError the script can catch.
func hostCall(name string) runtime.HostFunc {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		s, _ := ctx.Value(sessionKey{}).(*bridge.Session)
		if s == nil {
			return nil, &runtime.CallError{Message: "internal: no bridge session"}
		}
		req, err := json.Marshal(bridge.Request{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(rpcID.Add(1), 10)),
			Method: bridge.MethodCall, Params: mustJSON(bridge.CallParams{Name: name, Arguments: args})})
		if err != nil {
			return nil, err
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

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with marshalable values
	}
	return b
}

// Search returns what search_tools answers for query: a first line naming
// the best matches, then their TypeScript declarations.
func (b *Broker) Search(ctx context.Context, query string, limit int) (string, []*catalog.Operation, error) {
	st, err := b.state(ctx)
	if err != nil {
		return "", nil, err
	}
	if limit <= 0 {
		limit = b.opts.SearchLimit
	}
	hits, err := st.index.Search(query, limit)
	if err != nil {
		return "", nil, err
	}
	if len(hits) == 0 {
		return "", nil, nil
	}
	ops := make([]*catalog.Operation, len(hits))
	names := make([]string, len(hits))
	for i, h := range hits {
		ops[i] = h.Op
		names[i] = "tools." + h.Op.Name
	}
	// The first line names the matches, best first; the declarations follow.
	return "// Best matches: " + strings.Join(names, ", ") + "\n" + catalog.Declarations(ops), ops, nil
}

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
	res := st.rt.Execute(context.WithValue(ctx, sessionKey{}, s), code, &runtime.ExecOptions{Timeout: timeout})
	b.opts.Logger.Debug("executed", "trace", trace, "calls", res.Calls, "duration", res.Duration, "error", res.Error)
	return &Execution{Result: res, Trace: trace, Ledger: s.Ledger()}, nil
}

// HTTPHandler serves the MCP streamable HTTP transport.
func (b *Broker) HTTPHandler() http.Handler {
	srv := b.Server()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}
