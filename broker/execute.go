package broker

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Execution is the outcome of execute_code: the runtime's result, the
// bridge's ledger of the calls the script made and what became of its
// changes.
type Execution struct {
	*runtime.Result
	Trace  string         `json:"trace"`
	Ledger []bridge.Entry `json:"-"`
	// Plan holds the changes the script made as dry runs (plan mode), and
	// Token approves them; nil when it planned none.
	Plan  *bridge.Plan `json:"-"`
	Token string       `json:"-"`
	// Pending is the plan as people decide on it, when a person must
	// approve it (the agent then gets no token).
	Pending *bridge.Pending `json:"-"`
	// ApprovalURL is where people approve Pending, when a page serves.
	ApprovalURL string `json:"-"`
	where       string // where people approve Pending, for the model
	// Approved is the plan the execution applied, Applied how many of its
	// changes it made and Diverged why it stopped short, if it did.
	Approved *bridge.Plan `json:"-"`
	Applied  int          `json:"-"`
	Diverged string       `json:"-"`
	// ApprovedBy is who approved Approved, and how.
	ApprovedBy string `json:"-"`
	// Refused, when the script planned changes but the policy refused one
	// of them, says which: no plan comes of it.
	Refused string `json:"-"`
	// Revertable says what the execution changed is kept for
	// kubecode.revert({execution: Trace}).
	Revertable bool `json:"-"`
	// Runbooks are what became of the runbooks the script called.
	Runbooks []RunbookOutcome `json:"-"`
	// Held says, for each change the plan foresaw something would act
	// on, whether it held a while later (Options.HoldCheck).
	Held []bridge.Held `json:"-"`
	// NoUndo says why changes it made cannot be undone.
	NoUndo []string `json:"-"`
}

// ExecuteOptions are the options of one execution. A nil *ExecuteOptions
// means defaults.
type ExecuteOptions struct {
	// Timeout bounds the script. Zero means the runtime's default.
	Timeout time.Duration
	// Approve names the plan to apply: the script re-runs and only the
	// planned changes are made, in order, stopping at the first that
	// differs. When people approve plans (the default) it is the plan's id,
	// and the execution first waits for their decision (ApprovalWait);
	// under policy approval "agent", or with Terminal, it is the plan's
	// token.
	Approve string
	// Terminal says the execution comes from a person at a terminal
	// (kubecode exec), who approves plans by running them again with the
	// token: the ledger records them as approved from the terminal.
	Terminal bool
	// Caller is whom the execution acts for (an HTTP request's
	// authenticated user); nil means the server's own identity.
	Caller *catalog.Caller
	// Run names the run the execution belongs to, for the autopsy's
	// verdict per run: the MCP session's id. Empty means none.
	Run string
	// Progress, when set, is called after each operation call and console
	// line with the execution's progress to change; calls may come from
	// several goroutines at once.
	Progress func(update func(p *Progress))
}

// Execute runs code as execute_code does. An approval that cannot be used
// (another script, expired, not signed here) is an error wrapping
// bridge.ErrPlan.
func (b *Broker) Execute(ctx context.Context, code string, opts *ExecuteOptions) (*Execution, error) {
	var span oteltrace.Span
	if t := b.tracer(); t != nil {
		ctx, span = t.Start(ctx, "execute_code")
		defer span.End()
	}
	ex, err := b.execute(ctx, code, opts)
	if err == nil {
		b.opts.Metrics.observe(ex)
		level := slog.LevelInfo
		if ex.Error != nil {
			level = slog.LevelWarn
		}
		user := ""
		if opts != nil && opts.Caller != nil {
			user = opts.Caller.User
		}
		b.opts.Logger.Log(ctx, level, "executed", "trace", ex.Trace, "outcome", outcome(ex), "calls", ex.Calls,
			"duration", ex.Duration, "user", user)
	}
	if span != nil {
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		default:
			span.SetAttributes(attribute.String("kubecode.outcome", outcome(ex)), attribute.Int("kubecode.calls", ex.Calls))
			if ex.Error != nil {
				span.SetStatus(codes.Error, ex.Error.Message)
			}
		}
	}
	return ex, err
}

func (b *Broker) execute(ctx context.Context, code string, opts *ExecuteOptions) (*Execution, error) {
	if opts == nil {
		opts = &ExecuteOptions{}
	}
	human := b.bridge.HumanApproval() && !opts.Terminal
	var approved *bridge.Plan
	approvedBy := ""
	if opts.Approve != "" {
		var err error
		if human {
			approved, approvedBy, err = b.awaitApproval(ctx, opts.Approve, code, opts)
		} else if approved, err = b.bridge.Open(opts.Approve, code); err == nil {
			approvedBy = "the agent (policy approval: agent)"
			if opts.Terminal {
				approvedBy = "the person at the terminal (kubecode exec)"
				// One person with the plan's token: not enough for a plan
				// that needs two, nor where the policy turned it off.
				switch pol := b.bridge.Policy(); {
				case approved.TwoPerson != "":
					err = fmt.Errorf("%w: plan %s needs two approvers (%s): approve it with kubecode approve or on the approval page, then run it there", bridge.ErrPlan, approved.ID, approved.TwoPerson)
				case b.bridge.HumanApproval() && !pol.ChannelAllowed(bridge.ChannelTerminal):
					err = fmt.Errorf("%w: plan %s cannot be approved through the terminal: the policy's approvalChannels allow only %s", bridge.ErrPlan, approved.ID, strings.Join(pol.ApprovalChannels, ", "))
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	st, err := b.state(ctx)
	if err != nil {
		return nil, err
	}
	// Unique across replicas: reverts find an execution by it.
	trace := b.newTrace()
	if sc := oteltrace.SpanContextFromContext(ctx); sc.IsValid() {
		trace = sc.TraceID().String() // the ledger's trace is the trace's
	}
	// The type check runs beside the script: reads go on meanwhile, but no
	// change (nor any call the catalog does not mark read-only) leaves the
	// script before the check has passed; a script the check stops ends
	// with its diagnostics, whatever it read meanwhile.
	check := b.startCheck(ctx, st, code, opts.Timeout)
	runbooks := &runbookLog{}
	ctx = context.WithValue(ctx, runbookLogKey{}, runbooks)
	s := b.bridge.Session(trace)
	s.SetCaller(opts.Caller)
	s.SetRun(opts.Run)
	if approved != nil {
		if err := s.Approve(approved, approvedBy); err != nil {
			return nil, err
		}
	}
	eo := &runtime.ExecOptions{Timeout: opts.Timeout, Host: bridgeHost(s)}
	if progress := opts.Progress; progress != nil {
		host := eo.Host
		eo.Host = func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
			out, err := host(ctx, name, args)
			progress(func(p *Progress) { p.Calls++; p.Last = lastLine(name) })
			return out, err
		}
		eo.Console = func(_, text string) {
			progress(func(p *Progress) { p.Console++; p.Last = lastLine(text) })
		}
	}
	rctx := ctx
	if check != nil {
		host := eo.Host
		eo.Host = func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
			if op := st.index.Lookup(name); op == nil || !op.Annotations.ReadOnly {
				if err := check.passed(ctx); err != nil {
					return nil, err
				}
			}
			return host(ctx, name, args)
		}
		var stop context.CancelFunc
		rctx, stop = context.WithCancel(ctx)
		defer stop()
		go func() { // a script the check stops ends at once
			select {
			case <-check.done:
				if check.refusal != nil {
					stop()
				}
			case <-rctx.Done():
			}
		}()
	}
	var res *runtime.Result
	if b.opts.Pool != nil {
		res = b.opts.Pool.Execute(rctx, st.hostOps, code, eo)
	} else {
		res = st.rt.Execute(rctx, code, eo)
	}
	var hints []diagnostic
	if check != nil {
		select {
		case <-check.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if check.err != nil { // the caller went away
			return nil, check.err
		}
		if check.refusal != nil {
			return &Execution{Result: &runtime.Result{Error: check.refusal}, Trace: trace}, nil
		}
		hints = check.rest
	}
	if res.Error != nil && check == nil && b.checker != nil {
		hints = b.failureHints(ctx, st, code) // the check was skipped: nothing it says could stop the script
	}
	if res.Error != nil && res.Error.Name == "TypeError" {
		res.Error.Message = b.rewriteUnserved(st, res.Error.Message)
	}
	if res.Error != nil && len(hints) > 0 { // the type check may say why
		var h strings.Builder
		h.WriteString(res.Error.Hint)
		for i, d := range hints[:min(3, len(hints))] {
			if i > 0 || h.Len() > 0 {
				h.WriteString("; ")
			}
			h.WriteString("type check: " + d.String())
		}
		res.Error.Hint = h.String()
	}
	// Calls the script did not await end with it (their context does):
	// wait for them so the ledger, plan and count hold them.
	if !s.Wait(2 * time.Second) {
		b.opts.Logger.Warn("calls still under way after the script ended", "trace", trace)
	}
	// What the execution changed for real is kept for a revert.
	kept, err := s.KeepReverts(context.WithoutCancel(ctx))
	if err != nil {
		b.opts.Logger.Warn("the execution cannot be reverted", "trace", trace, "error", err)
	}
	ex := &Execution{Result: res, Trace: trace, Ledger: s.Ledger(), Approved: approved, ApprovedBy: approvedBy, Revertable: kept, Runbooks: runbooks.all()}
	if kept {
		ex.Held = s.Held(ctx, b.opts.HoldCheck)
	}
	ex.NoUndo = s.Irreversible()
	// A worker stopped for its memory or killed at its deadline tells no
	// count: the calls that reached the bridge are the count (the 42 MB
	// list that ran a scan out of memory is one).
	ex.Calls = max(ex.Calls, len(ex.Ledger))
	if approved == nil && len(s.Planned()) > 0 {
		ex.Refused = s.Refused()
	}
	if approved != nil {
		ex.Applied, ex.Diverged = s.Applied()
		// The plan's record says what became of it: the page and the CLI
		// show it applied (or not), and by which execution.
		o := bridge.Outcome{Execution: trace, Applied: ex.Applied, Planned: len(approved.Changes), Error: ex.Diverged, NoRevert: !kept, NoUndo: ex.NoUndo}
		if o.Error == "" && res.Error != nil {
			o.Error = res.Error.Error()
		}
		if err := b.bridge.Settle(context.WithoutCancel(ctx), approved.ID, o); err != nil {
			b.opts.Logger.Warn("the plan's record does not say it was applied", "plan", approved.ID, "error", err)
		}
	} else if ex.Plan = b.bridge.NewPlan(s, code); ex.Plan != nil {
		ex.Token = b.bridge.Sign(ex.Plan)
		if human {
			if err := b.propose(ctx, ex); err != nil {
				return nil, err
			}
		}
	}
	return ex, nil
}

// newTrace names an execution, uniquely across replicas: reverts find an
// execution by it.
func (b *Broker) newTrace() string {
	return fmt.Sprintf("exec-%d-%d-%s", time.Now().UnixMilli(), b.trace.Add(1), strings.ToLower(rand.Text()[:6]))
}

// bridgeHost is the sandbox's way out for one execution: every operation
// call becomes a tools/call of the execution's bridge session, and an
// error response becomes a CallError the script can catch.
func bridgeHost(s *bridge.Session) runtime.HostFunc {
	return func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		var out json.RawMessage
		var rpcErr *bridge.RPCError
		if send := runtime.PartsOf(ctx); send != nil {
			// A worker takes a large list page by page: the server never
			// holds it whole.
			out, rpcErr = s.CallParts(ctx, name, args, send)
		} else {
			out, rpcErr = s.Call(ctx, name, args)
		}
		if rpcErr != nil {
			ce := &runtime.CallError{Name: "ToolError", Message: rpcErr.Message, Code: json.RawMessage(strconv.Itoa(rpcErr.Code))}
			if d := rpcErr.Data; d != nil {
				ce.Reason = d.Reason
				if d.Status != 0 {
					ce.Code = json.RawMessage(strconv.Itoa(d.Status))
				}
			}
			return nil, ce
		}
		return out, nil
	}
}

func (b *Broker) executeTool(ctx context.Context, req *mcp.CallToolRequest, in executeInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Code) == "" {
		return textResult("code is empty: send a TypeScript program that returns its answer", true), nil, nil
	}
	if in.Timeout < 0 {
		return textResult("timeout must be a positive number of seconds", true), nil, nil
	}
	opts := &ExecuteOptions{Timeout: time.Duration(in.Timeout * float64(time.Second)), Approve: in.Approve, Caller: callerOf(req), Run: runOf(req)}
	if req != nil && req.Params != nil && req.Params.InputResponses != nil {
		return b.confirmed(ctx, req, in, opts), nil, nil
	}
	if r := report(ctx, req); r != nil {
		opts.Progress = r.update
		defer r.close()
	}
	ex, err := b.Execute(ctx, in.Code, opts)
	if err != nil {
		if errors.Is(err, bridge.ErrPlan) {
			return textResult(err.Error(), true), nil, nil
		}
		return textResult("execution failed before the script ran: "+err.Error(), true), nil, nil
	}
	if ex.Pending != nil && req != nil && req.Session != nil {
		// Ask the user through the client (MCP multi round-trip: the client
		// asks and calls again with the answer and the request state).
		ss := req.Session
		if pg := b.approvalPage(); pg != nil && canElicitURL(ss) {
			// The page, opened by the client for its user: the link (with
			// its one-time key) never reaches the model.
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{confirmID: &mcp.ElicitParams{Mode: "url",
				Message: "The agent's script wants to change the cluster. Review and approve or deny the plan on kubecode's approval page:\n" + ex.Pending.Text,
				URL:     pg.link(ex.Pending.ID), ElicitationID: ex.Pending.ID}},
				RequestState: ex.Pending.ID}, nil, nil
		}
		if canElicitForm(ss) && b.bridge.CannotApprove(ex.Pending, b.elicitationDecision(opts, true)) == "" {
			// A form only where its accept could approve: a plan that
			// needs two people, or not its own user, is not offered there.
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{confirmID: &mcp.ElicitParams{Message: confirmMessage(ex.Pending),
				RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}}},
				RequestState: ex.Token}, nil, nil
		}
	}
	return executionResult(ex, ""), nil, nil
}

// elicitationDecision is the decision an MCP client's user makes by
// answering a form: as the page's local user, or as the caller its token
// names (verified).
func (b *Broker) elicitationDecision(opts *ExecuteOptions, approve bool) bridge.Decision {
	d := bridge.Decision{By: "the MCP client's user", Channel: bridge.ChannelElicitation, Approve: approve}
	if pg := b.approvalPage(); pg != nil {
		d.By = pg.opts.LocalUser // the same person as the page's links
	}
	if opts.Caller != nil {
		d.By, d.Verified = opts.Caller.User, true
	}
	return d
}

// confirmID names the input request that asks the user to decide on a plan.
const confirmID = "confirm-plan"

// confirmed answers the call that comes back with the user's answer to a
// plan. After a form, accept is the user's approval (the request state is
// the plan's token, which only this server signs); after the approval
// page's URL, the call waits for the decision made there.
func (b *Broker) confirmed(ctx context.Context, req *mcp.CallToolRequest, in executeInput, opts *ExecuteOptions) *mcp.CallToolResult {
	state := req.Params.RequestState
	action := "no answer"
	if r, ok := req.Params.InputResponses[confirmID].(*mcp.ElicitResult); ok && r != nil {
		action = r.Action
	}
	if r := report(ctx, req); r != nil {
		opts.Progress = r.update
		defer r.close()
	}
	if !strings.Contains(state, ".") { // the approval page's plan id
		if action != "accept" {
			return textResult(fmt.Sprintf("not applied: the user did not open the approval page for plan %s (%s); it can still be approved there or with `kubecode approve %s`", state, action, state), true)
		}
		opts.Approve = state
		ex, err := b.Execute(ctx, in.Code, opts)
		if err != nil {
			return textResult("not applied: "+err.Error(), true)
		}
		return executionResult(ex, "applied after the user approved the plan on the approval page")
	}
	plan, err := b.bridge.Open(state, in.Code)
	if err != nil {
		return textResult("not applied: "+err.Error(), true)
	}
	d := b.elicitationDecision(opts, action == "accept")
	if opts.Caller != nil {
		// The client's user is the caller its token names: the same rules
		// as the page's sign-in (no workload identity, the approver
		// groups), then the bridge's (two people, channels).
		if why := b.approvalPage().notAnApprover(opts.Caller); why != "" && action == "accept" {
			return textResult(fmt.Sprintf("not applied: the elicitation refused this approval of plan %s: %s. The plan still waits: %s", plan.ID, why, b.approveWhere(plan.ID)), true)
		}
	}
	_, err = b.bridge.Decide(ctx, plan.ID, d)
	if action != "accept" {
		var sb strings.Builder
		fmt.Fprintf(&sb, "not applied: the user did not confirm plan %s (%s). Its changes were:\n", plan.ID, action)
		writeChanges(&sb, plan.Changes)
		return textResult(strings.TrimRight(sb.String(), "\n"), true)
	}
	if err != nil {
		return textResult(fmt.Sprintf("not applied: the elicitation's approval was refused: %s. %s", err.Error(), b.approveWhere(plan.ID)), true)
	}
	opts.Approve = plan.ID
	ex, err := b.Execute(ctx, in.Code, opts)
	if err != nil {
		return textResult("not applied: "+err.Error(), true)
	}
	return executionResult(ex, "applied after the user confirmed the plan")
}

// canElicitForm says whether the client can ask its user a form's
// question (a client declaring elicitation without modes can).
func canElicitForm(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// canElicitURL says whether the client can open a URL for its user.
func canElicitURL(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
}

// confirmMessage asks the user to confirm a plan.
func confirmMessage(p *bridge.Pending) string {
	return "The agent's script wants to change the cluster:\n" + p.Text + "\nApply exactly these changes?"
}

// writeChanges writes one line per change, each escaped for people
// (visible) and flagged when it held what a person cannot see.
// visibleChanges are changes as the structured answer carries them: op,
// object and every diff line escaped as the plan's text escapes them
// (a U+202E in a diff reads \u202e in both).
func visibleChanges(changes []bridge.PlanChange) []bridge.PlanChange {
	out := make([]bridge.PlanChange, len(changes))
	for i, c := range changes {
		c.Op, c.Object = Visible(c.Op), Visible(c.Object)
		c.Diff = make([]string, len(changes[i].Diff))
		for j, l := range changes[i].Diff {
			c.Diff[j] = Visible(l)
		}
		out[i] = c
	}
	return out
}

func writeChanges(b *strings.Builder, changes []bridge.PlanChange) {
	for i, c := range changes {
		fmt.Fprintf(b, "%d. ", i+1)
		// A change of many objects (a manifest, a release) is a line
		// per object; any other, one line.
		if len(c.Review.Tables) > 1 {
			head, escaped := visible(c.Op + " " + c.Object + ":")
			if escaped {
				b.WriteString(invisibleWarning)
			}
			b.WriteString(head + "\n")
			for _, l := range c.Diff {
				shown, escaped := visible(l)
				b.WriteString("   ")
				if escaped {
					b.WriteString(invisibleWarning)
				}
				b.WriteString(shown + "\n")
			}
			continue
		}
		line := c.Op + " " + c.Object
		if len(c.Diff) > 0 {
			line += ": " + strings.Join(c.Diff, "; ")
		}
		shown, escaped := visible(line)
		if escaped {
			b.WriteString(invisibleWarning)
		}
		b.WriteString(shown + "\n")
	}
}

// FormatExecution renders an execution for the model: FormatResult, then
// what became of its changes (a plan to approve, or what an approval
// applied), with the structured content.
func FormatExecution(ex *Execution) *mcp.CallToolResult { return executionResult(ex, "") }

func executionResult(ex *Execution, note string) *mcp.CallToolResult {
	res := FormatResult(ex.Result)
	text := res.Content[0].(*mcp.TextContent)
	var b strings.Builder
	structured := map[string]any{"calls": ex.Calls, "durationMs": ex.Duration.Milliseconds()}
	switch {
	case ex.Approved != nil:
		fmt.Fprintf(&b, "\n--- plan %s: %d of %d changes applied ---", ex.Approved.ID, ex.Applied, len(ex.Approved.Changes))
		if ex.ApprovedBy != "" {
			b.WriteString("\napproved by " + ex.ApprovedBy)
		}
		if ex.Diverged != "" {
			b.WriteString("\nstopped: " + ex.Diverged)
		} else if ex.Applied < len(ex.Approved.Changes) {
			fmt.Fprintf(&b, "\nthe re-run made only %d of the planned changes", ex.Applied)
		}
		structured["applied"] = map[string]any{"plan": ex.Approved.ID, "changes": ex.Applied, "planned": len(ex.Approved.Changes), "diverged": ex.Diverged, "approvedBy": ex.ApprovedBy}
	case ex.Refused != "":
		fmt.Fprintf(&b, "\n--- no plan: a change was refused or its dry run failed (%s); the other %d planned change(s) cannot be approved alone. Change the script so that every change passes, then run it again ---",
			ex.Refused, countPlanned(ex.Ledger))
		structured["refused"] = ex.Refused
	case ex.Pending != nil:
		// A person decides: the model gets the plan and its id, no token.
		fmt.Fprintf(&b, "\n--- dry run only: nothing was applied ---\n%s\n", ex.Pending.Text)
		if ex.Pending.Approvers > 1 {
			fmt.Fprintf(&b, "It needs %d people to approve it, neither of them the user it acts for. ", ex.Pending.Approvers)
		}
		if note == "" {
			fmt.Fprintf(&b, "A person must approve this plan. Show the user what it does. %s. Then call execute_code again with the same code and approve: %q: it waits for their decision and applies exactly these changes (the plan can be approved until %s).",
				ex.where, ex.Pending.ID, ex.Pending.Expires.Format(time.RFC3339))
		}
		plan := map[string]any{"id": ex.Pending.ID, "expires": ex.Pending.Expires, "changes": visibleChanges(ex.Plan.Changes), "approvers": ex.Pending.Approvers}
		if ex.ApprovalURL != "" {
			plan["approvalPage"] = ex.ApprovalURL
		}
		structured["plan"] = plan
	case ex.Plan != nil:
		fmt.Fprintf(&b, "\n--- plan %s: %d change(s), dry run only: nothing was applied ---\n", ex.Plan.ID, len(ex.Plan.Changes))
		writeChanges(&b, ex.Plan.Changes)
		if note == "" {
			fmt.Fprintf(&b, "To apply exactly these, call execute_code again with the same code and approve: %q (valid until %s).", ex.Token, ex.Plan.Expires.Format(time.RFC3339))
		}
		structured["plan"] = map[string]any{"id": ex.Plan.ID, "token": ex.Token, "expires": ex.Plan.Expires, "changes": visibleChanges(ex.Plan.Changes)}
	}
	if len(ex.Runbooks) > 0 {
		writeRunbooks(&b, ex.Runbooks)
		structured["runbooks"] = ex.Runbooks
	}
	if n := unchangedCalls(ex.Ledger); len(n) > 0 && ex.Approved == nil {
		fmt.Fprintf(&b, "\n--- not planned, no one asked: the dry run shows %s change nothing ---", strings.Join(n, ", "))
		structured["unchanged"] = n
	}
	if note != "" {
		b.WriteString("\n" + note)
	}
	if len(ex.Held) > 0 {
		var held []map[string]any
		for _, h := range ex.Held {
			b.WriteString("\n" + h.Line())
			held = append(held, map[string]any{"object": h.Object, "held": h.Held, "checked": h.Checked, "moved": h.Moved, "secondsLater": h.After.Seconds()})
		}
		structured["held"] = held
	}
	if ex.Approved != nil {
		// The answer's text stays the script's when no plan was involved.
		o := bridge.Outcome{NoRevert: !ex.Revertable, NoUndo: ex.NoUndo}
		if l := o.UndoLine(fmt.Sprintf("tools.kubecode.revert({ execution: %q }) (a new plan)", ex.Trace)); l != "" {
			b.WriteString("\n" + l)
		}
	}
	if len(ex.NoUndo) > 0 {
		structured["noUndo"] = ex.NoUndo
	}
	if ex.Revertable {
		structured["execution"] = ex.Trace
	}
	text.Text += b.String()
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
		return textResult("the script's result cannot be sent back: "+err.Error()+"; return plain, flat data", true)
	}
	res.StructuredContent = structured
	return res
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

// unchangedCalls names an execution's changes that change nothing
// ("kubernetes.deployments.scale Deployment shop/web").
func unchangedCalls(ledger []bridge.Entry) []string {
	var out []string
	for _, e := range ledger {
		if e.Decision == bridge.DecisionUnchanged && e.Change != nil {
			out = append(out, e.Operation+" "+e.Change.Object())
		}
	}
	return out
}

// countPlanned counts an execution's changes run as dry runs.
func countPlanned(ledger []bridge.Entry) int {
	n := 0
	for _, e := range ledger {
		if e.Decision == "planned" {
			n++
		}
	}
	return n
}

// runOf names the MCP session a request came in, for the ledger's runs.
// RunMeta is the _meta key of a tools/call by which a client names the
// run (the task) an execution belongs to, for kubecode audit: a client
// that connects once per call is otherwise one run per call.
const RunMeta = "kubecode.io/run"

// runOf names the run of a call: the run the client named (RunMeta), else
// its MCP session.
func runOf(req *mcp.CallToolRequest) string {
	if req == nil {
		return ""
	}
	if req.Params != nil {
		if run, ok := req.Params.GetMeta()[RunMeta].(string); ok && strings.TrimSpace(run) != "" {
			v, _ := visible(strings.TrimSpace(run))
			if len(v) > 200 {
				v = v[:200]
			}
			return v
		}
	}
	if req.Session == nil {
		return ""
	}
	if id := req.Session.ID(); id != "" {
		return id
	}
	return fmt.Sprintf("session-%p", req.Session) // stdio: one session per process
}

// writeRunbooks says what became of each runbook call: applied as its
// standard change (and how to undo it), or planned, and why.
func writeRunbooks(b *strings.Builder, runs []RunbookOutcome) {
	for _, r := range runs {
		switch {
		case r.Planned != "":
			fmt.Fprintf(b, "\n--- runbook %s (version %s) is outside its standard change: %s; its changes are planned like the script's own ---", r.Runbook, r.Version, r.Planned)
		case r.Execution == "":
			fmt.Fprintf(b, "\n--- runbook %s ran as standard change %s and changed nothing ---", r.Runbook, r.Standard)
		default:
			fmt.Fprintf(b, "\n--- runbook %s (version %s) ran as standard change %s, no plan needed: %d change(s) applied, execution %s", r.Runbook, r.Version, r.Standard, r.Applied, r.Execution)
			if r.Diverged != "" {
				fmt.Fprintf(b, "; stopped: %s", r.Diverged)
			}
			b.WriteString(" ---")
			if r.Revertable {
				fmt.Fprintf(b, "\nto undo it: tools.kubecode.revert({ execution: %q }) (a new plan)", r.Execution)
			}
		}
	}
}
