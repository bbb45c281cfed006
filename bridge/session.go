package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubecode/kubecode/catalog"
)

// Session handles the JSON-RPC requests of one execution: its calls share
// a trace id and are kept in its ledger.
type Session struct {
	b     *Bridge
	trace string

	mu     sync.Mutex
	seq    int
	ledger []Entry
	active int           // calls under way
	idle   chan struct{} // closed when active drops to zero, for Wait

	changeMu   sync.Mutex // changes run one at a time, in the script's order
	changes    int        // changes attempted
	planned    []PlanChange
	approved   *Plan             // the plan this session applies, if any
	applied    int               // changes of approved applied so far
	used       []bool            // which of approved's changes were made
	diverged   string            // why the session stopped applying approved
	consumed   bool              // approved's use is recorded (Bridge.Use)
	approvedBy string            // who approved it, for the ledger
	refused    string            // the first change the policy refused, if any
	state      catalog.PlanState // what the planned changes so far would leave
	touched    []*touched        // objects changed for real, for a revert
	touchIndex map[string]bool   // cluster and object of touched
	// irreversible say why changes made for real cannot be undone
	irreversible []string

	caller *catalog.Caller // whom the calls are for; nil: the server
	run    string          // the run (MCP session) the execution belongs to

	runbook     *RunbookRun     // the runbook run the calls belong to, if any
	standard    *StandardChange // whose bounds planned changes are judged by
	outOfBounds string          // the first planned change outside standard
}

// SetRunbook says the session's calls are a run of a runbook: the ledger
// names it on each. Set it before the first call.
func (s *Session) SetRunbook(r *RunbookRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runbook = r
}

func (s *Session) runbookRun() *RunbookRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runbook
}

// JudgeStandard makes the session judge each change it plans against
// standard change sc's bounds: OutOfBounds then says whether the plan
// may apply as that standard change. Set it before the first call.
func (s *Session) JudgeStandard(sc *StandardChange) {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	s.standard = sc
}

// OutOfBounds says why a change the session planned is no standard
// change of JudgeStandard's (the first such), or "".
func (s *Session) OutOfBounds() string {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	return s.b.hide(s.outOfBounds)
}

// Trace is the session's trace id (the execution's).
func (s *Session) Trace() string { return s.trace }

// Caller is whom the session's calls are for (nil: the server).
func (s *Session) Caller() *catalog.Caller { return s.callerOf() }

// Run is the run the session's execution belongs to.
func (s *Session) Run() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

// Bridge is the bridge the session calls through.
func (s *Session) Bridge() *Bridge { return s.b }

// SetRun names the run the session's execution belongs to (an MCP
// session): the ledger keeps it, and the autopsy judges runs as well as
// executions. Set it before the first call.
func (s *Session) SetRun(run string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run = run
}

// SetCaller makes the session's calls act for c (nil: the server itself):
// providers receive c in each call's context (catalog.WithCaller), the
// ledger names c.User, and plans made in the session can be approved only
// by c.User. Set it before the first call.
func (s *Session) SetCaller(c *catalog.Caller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caller = c
}

func (s *Session) callerOf() *catalog.Caller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caller
}

func (s *Session) user() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.caller == nil {
		return ""
	}
	return s.caller.User
}

// Approve makes the session apply p, approved by by (who and how, for the
// ledger): each change must match the next of p's, or the session stops
// changing anything. A plan made for one caller cannot be applied for
// another (an error wrapping ErrPlan).
func (s *Session) Approve(p *Plan, by string) error {
	if u := s.user(); p.User != u {
		return fmt.Errorf("%w: plan %s was made by %s, not %s: run the script again without approve for a plan of your own", ErrPlan, p.ID, orServer(p.User), orServer(u))
	}
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	s.approved, s.approvedBy = p, by
	return nil
}

func orServer(user string) string {
	if user == "" {
		return "the server's own identity"
	}
	return user
}

// Wait waits up to d for the session's calls under way to end (a script
// may return without awaiting a call), so that its ledger, plan and
// applied count hold them. It says whether all ended.
func (s *Session) Wait(d time.Duration) bool {
	s.mu.Lock()
	if s.active == 0 {
		s.mu.Unlock()
		return true
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	done := s.idle
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Planned returns the changes the session ran as dry runs, in order.
func (s *Session) Planned() []PlanChange {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	return append([]PlanChange(nil), s.planned...)
}

// Refused says which change the policy refused first, if any: a plan of
// a script some of whose changes were refused is never approvable.
func (s *Session) Refused() string {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	return s.b.hide(s.refused)
}

// Applied says how many changes of the approved plan the session applied
// and, if it stopped, why.
func (s *Session) Applied() (int, string) {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	return s.applied, s.diverged
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
		if err := json.Unmarshal(r.Params, &p); err != nil {
			return errorResponse(r.ID, CodeInvalidParams, errNeedCall, nil)
		}
		result, rpcErr := s.Call(ctx, p.Name, p.Arguments)
		if rpcErr != nil {
			return errorResponse(r.ID, rpcErr.Code, rpcErr.Message, rpcErr.Data)
		}
		return resultResponse(r.ID, result)
	}
	return errorResponse(r.ID, CodeMethodNotFound, "method not found: "+r.Method, nil)
}

// Call serves one tools/call as Handle does, without the JSON-RPC
// envelope: for the broker, in the same process, which would otherwise
// encode a request and decode the answer (25 MB for 5,000 pods) only to
// unwrap it. The call passes the same validation, policy, gates, shaping
// and ledger.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, *RPCError) {
	if name == "" {
		return nil, &RPCError{Code: CodeInvalidParams, Message: errNeedCall}
	}
	return s.call(ctx, name, args)
}

// CallParts is Call for a caller that takes an answer in parts: a read
// whose provider makes its answer in parts (PartsProvider) sends each to
// part, shaped and with secrets hidden, and returns a nil answer; any other
// call answers as Call does.
func (s *Session) CallParts(ctx context.Context, name string, args json.RawMessage, part func(json.RawMessage) error) (json.RawMessage, *RPCError) {
	if name == "" {
		return nil, &RPCError{Code: CodeInvalidParams, Message: errNeedCall}
	}
	return s.callWith(ctx, name, args, part)
}

// errNeedCall is the message of a tools/call without an operation.
const errNeedCall = `invalid params: need {"name": string, "arguments": object}`

// call runs one operation call and records it in the ledger.
func (s *Session) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, *RPCError) {
	return s.callWith(ctx, name, args, nil)
}

// callWith is call, sending a read's answer in parts to part where its
// provider can.
func (s *Session) callWith(ctx context.Context, name string, args json.RawMessage, part func(json.RawMessage) error) (json.RawMessage, *RPCError) {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.active--; s.active == 0 && s.idle != nil {
			close(s.idle)
			s.idle = nil
		}
		s.mu.Unlock()
	}()
	start := s.b.opts.Now()
	s.mu.Lock()
	s.seq++
	c := &callInfo{name: name, args: args, seq: s.seq, secretArgs: s.b.secretArgs(), part: part}
	s.mu.Unlock()
	c.id = s.trace + "-" + strconv.Itoa(c.seq)
	ctx = catalog.WithCallID(ctx, c.id)
	if caller := s.callerOf(); caller != nil {
		ctx = catalog.WithCaller(ctx, caller)
	}
	out, rpcErr := s.dispatch(ctx, c)
	out, rpcErr = s.b.boundary(c, out, rpcErr)
	s.record(ctx, start, c, rpcErr, len(out)+c.partBytes)
	return out, rpcErr
}

// boundary is the one place every result and error passes before it
// leaves the bridge for a script: every value the secrets registry holds,
// in every form it knows, is hidden there, whichever provider returned it
// and whether or not that provider guards its own output. c.hidden names
// what it hid, for the ledger (never the values).
func (b *Bridge) boundary(c *callInfo, out json.RawMessage, rpcErr *RPCError) (json.RawMessage, *RPCError) {
	if out != nil {
		var hid []string
		// What the script sent it knows: a dry run echoing its guesses
		// must not hide just the right one.
		out, hid = b.secrets.ScrubJSONKnown(out, c.args)
		c.hidden = append(c.hidden, hid...)
	}
	if rpcErr != nil {
		msg, hid := b.secrets.Scrub(rpcErr.Message, false)
		rpcErr.Message = msg
		c.hidden = append(c.hidden, hid...)
	}
	return out, rpcErr
}

// hide is the boundary for a text a script or its answer receives (a plan
// line, a refusal).
func (b *Bridge) hide(text string) string {
	out, _ := b.secrets.Scrub(text, false)
	return out
}

// callInfo is what the ledger says of a call: the operation's canonical
// name once known, the arguments as the provider saw them and, for a
// change, what it did and why.
type callInfo struct {
	seq       int  // the call's number in its session, from 1
	sensitive bool // the operation's arguments may hold secrets
	// secretArgs are the keys of secret data in the operation's arguments
	// (Annotations.SecretArgs); before the operation is known, every
	// operation's.
	secretArgs []string
	// targetArgs are the argument paths naming its target (the
	// operation's TargetArgs), kept when every value is elided.
	targetArgs []catalog.Path
	id         string // trace-seq: the Audit-ID of the API requests it makes
	name       string
	args       json.RawMessage
	// Changes only.
	change     *catalog.Change
	decision   string // planned, applied, refused, diverged, failed
	rule       string // the refusing rule
	passed     []string
	dryRun     bool
	plan       string
	approvedBy string
	// hidden names what the boundary hid from the result or error.
	hidden []string
	// exitCode is a command's (Annotations.Command), once it ran.
	exitCode *int
	// part takes a read's answer in parts, where its provider can send
	// them (nil: whole); partBytes is how much it took.
	part      func(json.RawMessage) error
	partBytes int
	// Where the call goes, once known.
	cluster  *cluster
	provider Provider
}

// dispatch validates, dispatches and shapes one operation call.
func (s *Session) dispatch(ctx context.Context, c *callInfo) (json.RawMessage, *RPCError) {
	e := s.b.lookup(c.name)
	if e == nil && s.b.refreshOnMiss(ctx) {
		// The registry may predate a CRD installed since: look once more.
		e = s.b.lookup(c.name)
	}
	if e == nil {
		c.secretArgs = s.b.secretArgs() // now that the registry is loaded
		return nil, &RPCError{Code: CodeInvalidParams, Message: "unknown operation " + c.name,
			Data: &ErrorData{Tool: c.name, Reason: ReasonUnknownOperation, Suggestions: s.b.suggest(c.name)}}
	}
	c.name = e.op.Name
	ctx = catalog.WithOperation(ctx, e.op) // what the call is judged by
	c.sensitive, c.secretArgs, c.targetArgs = e.op.Annotations.Sensitive, e.op.Annotations.SecretArgs, e.op.Annotations.TargetArgs
	if len(c.args) == 0 || string(c.args) == "null" {
		c.args = json.RawMessage("{}")
	}
	name, args, err := "", c.args, error(nil)
	if s.b.multi() {
		if name, args, err = takeContext(c.args); err != nil {
			return nil, &RPCError{Code: CodeInvalidParams, Message: err.Error(), Data: &ErrorData{Tool: c.name, Reason: "Invalid", Field: contextArg}}
		}
	}
	cl := s.b.clusterNamed(name)
	if e.shared {
		if name != "" {
			return nil, &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("%s belongs to no cluster: call it without context", c.name),
				Data: &ErrorData{Tool: c.name, Reason: "Invalid", Field: contextArg}}
		}
		cl = s.b.sharedCluster()
	}
	if cl == nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("no cluster %q: the clusters are %s", name, strings.Join(s.b.allClusters(), ", ")),
			Data: &ErrorData{Tool: c.name, Reason: "Invalid", Field: contextArg}}
	}
	c.cluster, c.provider = cl, e.on[cl.name]
	if c.provider == nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("%s does not exist on cluster %s; it does on %s", c.name, cl.name, strings.Join(s.b.clusterNames(e), ", ")),
			Data: &ErrorData{Tool: c.name, Reason: ReasonUnknownOperation}}
	}
	if err := validateArgs(e.op, c.args); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: err.Error(), Data: &ErrorData{Tool: c.name, Reason: "Invalid", Field: err.field}}
	}
	c.args = args
	if c.name == RevertOp {
		return s.revert(ctx, c)
	}
	var out json.RawMessage
	read := e.op.Annotations.ReadOnly
	if an := e.op.Annotations; an.Command != "" && !read && !hasArg(c.args, an.CommandInput) && c.cluster.policy.ExecRead(argvArg(c.args, an.Command)) {
		// A command the operator lists as a read (and given no input):
		// judged like any change, run without a plan.
		if rpcErr := s.judgeRead(ctx, c); rpcErr != nil {
			return nil, rpcErr
		}
		if c.change.SecretAccess == "" {
			read, c.decision, c.rule = true, DecisionRead, "execReads"
		} else {
			// A command that can compute on a Secret's value (grep -c of a
			// guess, one character a line) answers from it in forms no
			// scrubber knows: a person sees it first.
			c.change = nil
		}
	}
	if e.op.Annotations.Script {
		// A runbook: its own calls pass here one by one.
		sp, ok := c.provider.(SessionProvider)
		if !ok {
			return nil, &RPCError{Code: CodeInternal, Message: c.name + " runs a script and its provider cannot run one", Data: &ErrorData{Tool: c.name}}
		}
		c.decision = DecisionRan
		if out, err = sp.CallIn(ctx, s, c.name, c.args); err != nil {
			rpcErr := s.failed(ctx, c, err)
			if errors.Is(err, ErrNotStandard) || errors.Is(err, ErrPlan) {
				rpcErr.Code, rpcErr.Data.Reason = CodeRefused, ReasonRefused
			}
			return nil, rpcErr
		}
	} else if !read {
		var rpcErr *RPCError
		if out, rpcErr = s.change(ctx, e, c); rpcErr != nil {
			return nil, rpcErr
		}
	} else if pp, ok := c.provider.(PartsProvider); ok && c.part != nil && e.op.Annotations.Command == "" {
		if sent, rpcErr := s.parts(ctx, pp, c); rpcErr != nil || sent {
			return nil, rpcErr
		}
		if out, err = c.provider.Call(ctx, c.name, c.args); err != nil {
			return nil, s.failed(ctx, c, err)
		}
	} else if out, err = c.provider.Call(ctx, c.name, c.args); err != nil {
		return nil, s.failed(ctx, c, err)
	}
	if cmd := e.op.Annotations.Command; cmd != "" {
		var res struct {
			ExitCode *int `json:"exitCode"`
		}
		if json.Unmarshal(out, &res) == nil {
			c.exitCode = res.ExitCode
		}
	}
	out, err = s.b.shaper.shape(out, s.b.opts.KeepNoise)
	if err != nil {
		return nil, &RPCError{Code: CodeInternal, Message: err.Error(), Data: &ErrorData{Tool: c.name, Reason: "Redaction"}}
	}
	return out, nil
}

// parts asks pp for a read's answer in parts, each shaped and passed
// through the boundary on its way to c.part; false means pp answers it
// only whole, and sent nothing.
func (s *Session) parts(ctx context.Context, pp PartsProvider, c *callInfo) (bool, *RPCError) {
	var refused *RPCError
	sent, err := pp.CallParts(ctx, c.name, c.args, func(part json.RawMessage) error {
		part, err := s.b.shaper.shape(part, s.b.opts.KeepNoise)
		if err != nil {
			refused = &RPCError{Code: CodeInternal, Message: err.Error(), Data: &ErrorData{Tool: c.name, Reason: "Redaction"}}
			return err
		}
		part, _ = s.b.boundary(c, part, nil)
		c.partBytes += len(part)
		return c.part(part)
	})
	switch {
	case refused != nil:
		return true, refused
	case err != nil:
		return true, s.failed(ctx, c, err)
	}
	return sent, nil
}

// failed converts a provider's error into the call's error response.
func (s *Session) failed(ctx context.Context, c *callInfo, err error) *RPCError {
	rpcErr := &RPCError{Code: CodeOperationFailed, Message: err.Error(), Data: &ErrorData{Tool: c.name}}
	var ce *catalog.CallError
	if errors.As(err, &ce) {
		rpcErr.Data.Status, rpcErr.Data.Reason = ce.Status, ce.Reason
	}
	if ctx.Err() != nil {
		rpcErr.Data.Reason = "Canceled"
	}
	return rpcErr
}

// changeObject names what the call changes, after a space, once known.
func (c *callInfo) changeObject() string {
	if c.change == nil {
		return ""
	}
	return " " + c.change.Object()
}

// argvArg is the argv a call's arguments hold under key (nil if none).
func argvArg(args json.RawMessage, key string) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var argv []string
	if json.Unmarshal(m[key], &argv) != nil {
		return nil
	}
	return argv
}

// hasArg reports whether args carry key with a value other than null.
func hasArg(args json.RawMessage, key string) bool {
	if key == "" {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return false
	}
	v, ok := m[key]
	return ok && string(v) != "null"
}

// judgeRead judges a command the policy counts as a read by every rule a
// change passes but the plan: its preview says what it touches (a
// namespace the policy leaves out, a denied kind, what runs the cluster).
func (s *Session) judgeRead(ctx context.Context, c *callInfo) *RPCError {
	pv, ok := c.provider.(Previewer)
	if !ok {
		return &RPCError{Code: CodeRefused, Message: "refused: " + c.name + " cannot be checked", Data: &ErrorData{Tool: c.name, Reason: ReasonRefused}}
	}
	change, _, err := pv.Preview(ctx, c.name, c.args)
	if err != nil || change == nil {
		if err == nil {
			err = fmt.Errorf("%s: its check described nothing", c.name)
		}
		c.decision = "failed"
		return scrub(s.failed(ctx, c, err), c.args, c.secretArgs)
	}
	c.change = change
	r, passed := c.cluster.policy.Judge(change)
	c.passed = passed
	if r != nil {
		c.decision, c.rule = "refused", r.Rule
		return &RPCError{Code: CodeRefused, Message: "refused: " + r.Message, Data: &ErrorData{Tool: c.name, Reason: ReasonRefused}}
	}
	return nil
}
