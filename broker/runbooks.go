package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/runtime"
)

// RunbooksOptions configure Runbooks. A nil *RunbooksOptions means
// defaults.
type RunbooksOptions struct {
	// Dir is the operator's folder of runbooks (NAME.ts each), read again
	// at each discovery: a runbook edited there is a new draft. Empty
	// means none: agents' saved runbooks only.
	Dir string
	// Logger receives what is wrong with a runbook in Dir. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Runbooks is the provider of runbooks (tools.runbooks.<name>) and of
// tools.kubecode.runbooks.save. Give it to the bridge as a provider and
// to the broker (Options.Runbooks), which runs them.
type Runbooks struct {
	opts RunbooksOptions

	mu      sync.Mutex
	b       *Broker
	checked map[string]string // code's hash → why its type check failed ("": passed)
	logged  map[string]bool   // folder problems already logged
}

// NewRunbooks returns the runbooks of opts.Dir and of agents. A folder
// that cannot be read, or a runbook in it that cannot be parsed, is an
// error.
func NewRunbooks(opts *RunbooksOptions) (*Runbooks, error) {
	r := &Runbooks{checked: map[string]string{}, logged: map[string]bool{}}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.Default()
	}
	if r.opts.Dir != "" {
		if _, err := r.folder(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// attach makes b the broker that runs the runbooks.
func (r *Runbooks) attach(b *Broker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b = b
}

func (r *Runbooks) broker() *Broker {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b
}

// folder reads the operator's runbooks.
func (r *Runbooks) folder() ([]*Runbook, error) {
	if r.opts.Dir == "" {
		return nil, nil
	}
	files, err := filepath.Glob(filepath.Join(r.opts.Dir, "*.ts"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(r.opts.Dir); err != nil {
		return nil, fmt.Errorf("--runbooks: %w", err)
	}
	var out []*Runbook
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--runbooks: %w", err)
		}
		rb, err := ParseRunbook(strings.TrimSuffix(filepath.Base(f), ".ts"), string(raw))
		if err != nil {
			return nil, fmt.Errorf("--runbooks %s: %w", f, err)
		}
		rb.Source = "folder"
		out = append(out, rb)
	}
	return out, nil
}

// All returns every runbook: the folder's, then agents' saved ones (a
// saved runbook never shadows a folder's).
func (r *Runbooks) All(ctx context.Context) ([]*Runbook, error) {
	all, _, err := r.records(ctx)
	return all, err
}

// records returns every runbook and the standard changes, from one read
// of the folder and one of the store.
func (r *Runbooks) records(ctx context.Context) ([]*Runbook, []*bridge.StandardChange, error) {
	out, err := r.folder()
	if err != nil {
		return nil, nil, err
	}
	b := r.broker()
	if b == nil {
		return out, nil, nil
	}
	saved, scs, err := b.bridge.RunbookRecords(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range saved {
		rb, err := ParseRunbook(s.Name, s.Code)
		if err != nil || r.find(out, s.Name) != nil {
			continue
		}
		rb.Source = "saved by " + s.SavedBy
		out = append(out, rb)
	}
	return out, scs, nil
}

func (r *Runbooks) find(list []*Runbook, name string) *Runbook {
	for _, rb := range list {
		if rb.Name == name || rb.OpName() == name {
			return rb
		}
	}
	return nil
}

// Runbook returns the runbook named name (or its operation's name).
func (r *Runbooks) Runbook(ctx context.Context, name string) (*Runbook, error) {
	all, err := r.All(ctx)
	if err != nil {
		return nil, err
	}
	if rb := r.find(all, name); rb != nil {
		return rb, nil
	}
	var names []string
	for _, rb := range all {
		names = append(names, rb.Name)
	}
	return nil, fmt.Errorf("no runbook %s (there are: %s)", name, orNothing(strings.Join(names, ", ")))
}

func orNothing(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Discover declares the runbooks and kubecode.runbooks.save.
func (r *Runbooks) Discover(ctx context.Context) ([]*catalog.Operation, string, error) {
	all, scs, err := r.records(ctx)
	if err != nil {
		r.mu.Lock()
		first := !r.logged[err.Error()]
		r.logged[err.Error()] = true
		r.mu.Unlock()
		if first {
			r.opts.Logger.Warn("runbooks", "error", err)
		}
		all = nil
	}
	ops := []*catalog.Operation{saveOperation()}
	h := sha256.New()
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	approved := map[string]bool{} // texts some standard change approved
	for _, sc := range scs {
		approved[codeKey(sc.Code)] = true
	}
	for _, rb := range all {
		op := rb.operation()
		if rb.Source != "folder" && !approved[codeKey(rb.Code)] {
			// An agent's words reach other agents' searches only once a
			// person read and approved them.
			op.Description = "Runbook " + rb.Name + " (" + rb.Source + ", version " + rb.Version + "): a draft no person has approved; it does not run until one does."
			op.Keywords = []string{"runbook", rb.Name}
		}
		ops = append(ops, op)
		h.Write([]byte(rb.Name + "@" + rb.Version + "\x00" + rb.Source + "\x00" + op.Description + "\x00"))
	}
	return ops, "runbooks-" + hex.EncodeToString(h.Sum(nil)[:6]), nil
}

// Call is refused: a runbook runs only within a bridge session (CallIn).
func (r *Runbooks) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("a runbook runs only from a script")
}

// CallIn saves a runbook or runs one for session s.
func (r *Runbooks) CallIn(ctx context.Context, s *bridge.Session, name string, args json.RawMessage) (json.RawMessage, error) {
	b := r.broker()
	if b == nil {
		return nil, errors.New("runbooks are not served here")
	}
	if name == saveOp {
		return r.save(ctx, b, s, args)
	}
	rb, err := r.Runbook(ctx, name)
	if err != nil {
		return nil, err
	}
	return b.runRunbook(ctx, s, rb, args)
}

// save keeps an agent's runbook as a draft.
func (r *Runbooks) save(ctx context.Context, b *Broker, s *bridge.Session, args json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Name string `json:"name"`
		Code string `json:"code"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	rb, err := ParseRunbook(in.Name, in.Code)
	if err != nil {
		return nil, err
	}
	folder, err := r.folder()
	if err != nil {
		return nil, err
	}
	if r.find(folder, rb.Name) != nil {
		return nil, fmt.Errorf("runbook %s is the operator's (from the runbooks folder): save yours under another name", rb.Name)
	}
	if b.bridge.Policy().Mode == policy.ModeReadOnly {
		return nil, fmt.Errorf("%w: this server is read-only (changes: read-only): it keeps no runbooks", bridge.ErrPlan)
	}
	by := "the agent"
	if c := s.Caller(); c != nil && c.User != "" {
		by = "the agent of " + c.User
	}
	saved, err := b.bridge.SavedRunbooks(ctx)
	if err != nil {
		return nil, err
	}
	replaces := false
	for _, o := range saved {
		if o.Name == rb.Name {
			if o.SavedBy != by {
				return nil, fmt.Errorf("%w: runbook %s was saved by %s: save yours under another name", bridge.ErrPlan, rb.Name, o.SavedBy)
			}
			replaces = true
		}
	}
	if !replaces && len(saved) >= maxSaved {
		return nil, fmt.Errorf("%w: this server keeps at most %d saved runbooks and has them: ask an operator to add yours to the runbooks folder", bridge.ErrPlan, maxSaved)
	}
	if why := b.checkRunbook(ctx, rb); why != "" {
		return nil, fmt.Errorf("runbook %s does not type-check, so it is not saved: %s", rb.Name, why)
	}
	if err := b.bridge.SaveRunbook(ctx, bridge.SavedRunbook{Name: rb.Name, Code: rb.Code, SavedBy: by}); err != nil {
		return nil, err
	}
	// The next script finds it in the catalog, on this replica at once.
	_, _, _ = b.bridge.Refresh(catalog.WithCaller(context.WithoutCancel(ctx), nil))
	return json.Marshal(map[string]string{"name": rb.Name, "version": rb.Version, "call": "tools." + rb.OpName() + "({...})", "state": "draft",
		"approve": "a draft does not run: a person reads it and approves it as a standard change with `kubecode runbooks approve " + rb.Name + " --version " + rb.Version + " --namespace NS` (kubecode runbooks show " + rb.Name + " prints it)"})
}

// checkRunbook type-checks rb against the catalog, once per version, and
// says why it fails ("" when it passes or no checker is set).
func (b *Broker) checkRunbook(ctx context.Context, rb *Runbook) string {
	if b.checker == nil {
		return ""
	}
	r := b.opts.Runbooks
	if r != nil {
		r.mu.Lock()
		why, ok := r.checked[codeKey(rb.Code)]
		r.mu.Unlock()
		if ok {
			return why
		}
	}
	st, err := b.state(ctx)
	if err != nil {
		return "" // the run itself will say what is wrong
	}
	block, _, err := b.typecheck(ctx, st, rb.paramsDecl()+"\n"+rb.Code)
	if err != nil {
		return "" // no checker could run: the runtime still checks calls
	}
	var why []string
	for _, d := range block[:min(3, len(block))] {
		d.Line-- // the params line
		why = append(why, strings.Replace(d.String(), "user.ts", rb.Name+".ts", 1))
	}
	if r != nil {
		r.mu.Lock()
		r.checked[codeKey(rb.Code)] = strings.Join(why, "; ")
		r.mu.Unlock()
	}
	return strings.Join(why, "; ")
}

// maxSaved bounds the runbooks agents may save on a server.
const maxSaved = 50

// codeKey names a runbook's text whole (a version is a short hash, for
// people).
func codeKey(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// runbookKey marks a context inside a runbook's run.
type runbookKey struct{}

// RunbookOutcome is what became of one runbook call of an execution.
type RunbookOutcome struct {
	Runbook string `json:"runbook"`
	Version string `json:"version"`
	// Standard is the standard change it ran as, when it did; Execution
	// the run's trace (what kubecode.revert takes), Applied how many
	// changes it made and Diverged why it stopped short.
	Standard   string `json:"standard,omitempty"`
	Execution  string `json:"execution,omitempty"`
	Applied    int    `json:"applied"`
	Diverged   string `json:"diverged,omitempty"`
	Revertable bool   `json:"revertable,omitempty"`
	// Planned says why the run is no standard change: its changes joined
	// the script's own plan.
	Planned string `json:"planned,omitempty"`
}

// runbookLog gathers an execution's RunbookOutcomes.
type runbookLog struct {
	mu  sync.Mutex
	out []RunbookOutcome
}

type runbookLogKey struct{}

func (l *runbookLog) add(o RunbookOutcome) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out = append(l.out, o)
}

func (l *runbookLog) all() []RunbookOutcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]RunbookOutcome(nil), l.out...)
}

// runRunbook runs rb with args for session s. Within a standard change
// its run is planned in a session of its own (a dry run judged against
// the bounds), then applied as that plan; a run outside its standard
// change runs in s, so that its changes join the script's plan; a
// version no standard change allows is refused.
func (b *Broker) runRunbook(ctx context.Context, s *bridge.Session, rb *Runbook, args json.RawMessage) (json.RawMessage, error) {
	if ctx.Value(runbookKey{}) != nil {
		return nil, fmt.Errorf("%w: a runbook does not call runbooks (%s)", bridge.ErrNotStandard, rb.Name)
	}
	ctx = context.WithValue(ctx, runbookKey{}, rb.Name)
	log, _ := ctx.Value(runbookLogKey{}).(*runbookLog)
	var params map[string]any
	if err := json.Unmarshal(args, &params); err != nil {
		return nil, err
	}
	if b.bridge.Policy().Mode == policy.ModeApply {
		// Changes apply without plans here: a standard change adds
		// nothing, and its dry run would not be one.
		log.add(RunbookOutcome{Runbook: rb.Name, Version: rb.Version, Planned: "changes apply without plans on this server (changes: apply)"})
		return b.runIn(ctx, s, rb, args)
	}
	sc, why, err := b.bridge.StandardFor(ctx, rb.Name, rb.Version, rb.Code, params)
	if err != nil {
		return nil, err
	}
	if w := b.checkRunbook(ctx, rb); w != "" {
		return nil, fmt.Errorf("%w: runbook %s (version %s) fails its type check: %s", bridge.ErrNotStandard, rb.Name, rb.Version, w)
	}
	st, err := b.state(ctx)
	if err != nil {
		return nil, err
	}
	code := rb.script(args)
	ref := &bridge.RunbookRun{Name: rb.Name, Version: rb.Version, Params: args, CalledBy: s.Trace()}
	trace := b.newTrace() // the run's own: what kubecode.revert takes
	if sc != nil {
		// The dry run: what the run would change, judged by the bounds.
		std := *ref
		std.Standard = sc.ID
		dry := b.bridge.Session(trace + "-dry")
		dry.SetCaller(s.Caller())
		dry.SetRun(s.Run())
		dry.SetRunbook(&std)
		dry.JudgeStandard(sc)
		res := b.runScript(ctx, st, dry, code)
		dry.Wait(2 * time.Second)
		if res.Error != nil {
			return nil, runbookError(rb, "its dry run failed", res.Error)
		}
		if refused := dry.Refused(); refused != "" {
			return nil, fmt.Errorf("%w: runbook %s: %s", bridge.ErrPlan, rb.Name, refused)
		}
		why = dry.OutOfBounds()
		plan := b.bridge.NewPlan(dry, code)
		if why == "" && plan == nil { // nothing to change: the dry run's answer is the answer
			log.add(RunbookOutcome{Runbook: rb.Name, Version: rb.Version, Standard: sc.ID})
			return res.Value, nil
		}
		if why == "" {
			counted, err := b.bridge.CountRun(ctx, sc.ID, bridge.StandardRun{Execution: trace, User: userOf(s.Caller()), Params: args})
			if err != nil { // revoked or ended meanwhile: refused
				return nil, err
			}
			if !counted {
				why = fmt.Sprintf("standard change %s allows %d runs an hour and had them", sc.ID, sc.Bounds.RunsPerHour)
			}
		}
		if why == "" {
			run := b.bridge.Session(trace)
			run.SetCaller(s.Caller())
			run.SetRun(s.Run())
			run.SetRunbook(&std)
			by := fmt.Sprintf("standard change %s of runbook %s (version %s), approved by %s", sc.ID, rb.Name, rb.Version, (&bridge.Pending{Decisions: []bridge.Decision{sc.Approved}}).Decided())
			if err := run.Approve(plan, by); err != nil {
				return nil, err
			}
			res := b.runScript(ctx, st, run, code)
			run.Wait(2 * time.Second)
			o := RunbookOutcome{Runbook: rb.Name, Version: rb.Version, Standard: sc.ID, Execution: trace}
			o.Applied, o.Diverged = run.Applied()
			if o.Revertable, err = run.KeepReverts(context.WithoutCancel(ctx)); err != nil {
				b.opts.Logger.Warn("the runbook's run cannot be reverted", "trace", trace, "error", err)
			}
			log.add(o)
			if res.Error != nil {
				return nil, runbookError(rb, fmt.Sprintf("it stopped after %d of %d changes (execution %s)", o.Applied, len(plan.Changes), trace), res.Error)
			}
			if o.Diverged == "" && o.Applied < len(plan.Changes) {
				o.Diverged = "the run made fewer changes than its dry run"
				if refused := run.Refused(); refused != "" {
					o.Diverged = "refused: " + refused
				}
			}
			if o.Diverged != "" {
				return nil, fmt.Errorf("runbook %s: its run made %d of the %d changes its dry run showed, then stopped: %s (execution %s)", rb.Name, o.Applied, len(plan.Changes), o.Diverged, trace)
			}
			return res.Value, nil
		}
	}
	// Outside the standard change: the run is the script's own, its
	// changes planned for a person with the rest.
	log.add(RunbookOutcome{Runbook: rb.Name, Version: rb.Version, Planned: why})
	return b.runIn(ctx, s, rb, args)
}

// runIn runs rb with args in session s: its changes are the script's.
func (b *Broker) runIn(ctx context.Context, s *bridge.Session, rb *Runbook, args json.RawMessage) (json.RawMessage, error) {
	st, err := b.state(ctx)
	if err != nil {
		return nil, err
	}
	res := b.runScript(ctx, st, s, rb.script(args))
	if res.Error != nil {
		return nil, runbookError(rb, "it failed", res.Error)
	}
	return res.Value, nil
}

func userOf(c *catalog.Caller) string {
	if c == nil {
		return ""
	}
	return c.User
}

// runbookError says where in the runbook its run failed.
func runbookError(rb *Runbook, what string, e *runtime.Error) error {
	at := ""
	if e.Line > 1 {
		at = fmt.Sprintf(" at %s.ts:%d:%d", rb.Name, e.Line-1, e.Column)
	}
	return fmt.Errorf("runbook %s: %s%s: %s", rb.Name, what, at, e.Message)
}

// runScript runs code for session s, in a worker when the broker has a
// pool.
func (b *Broker) runScript(ctx context.Context, st *state, s *bridge.Session, code string) *runtime.Result {
	eo := &runtime.ExecOptions{Host: bridgeHost(s)}
	if b.opts.Pool != nil {
		return b.opts.Pool.Execute(ctx, st.hostOps, code, eo)
	}
	return st.rt.Execute(ctx, code, eo)
}

// runbook returns the runbook the broker serves under name.
func (b *Broker) runbook(ctx context.Context, name string) (*Runbook, error) {
	if b.opts.Runbooks == nil {
		return nil, errors.New("this server has no runbooks")
	}
	return b.opts.Runbooks.Runbook(ctx, name)
}

// PreviewRunbook runs runbook name with params as a dry run for caller
// (nil: the server) and returns its plan's lines: what a person approving
// it as a standard change sees it would do.
func (b *Broker) PreviewRunbook(ctx context.Context, name string, params json.RawMessage, caller *catalog.Caller) ([]string, error) {
	rb, err := b.runbook(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	var m map[string]any
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, fmt.Errorf("the example parameters are a JSON object: %v", err)
	}
	if why := b.checkRunbook(ctx, rb); why != "" {
		return nil, fmt.Errorf("runbook %s fails its type check: %s", rb.Name, why)
	}
	st, err := b.state(ctx)
	if err != nil {
		return nil, err
	}
	s := b.bridge.Session(fmt.Sprintf("preview-%s-%d", rb.Name, b.trace.Add(1)))
	s.SetCaller(caller)
	s.SetRunbook(&bridge.RunbookRun{Name: rb.Name, Version: rb.Version, Params: params})
	res := b.runScript(context.WithValue(ctx, runbookKey{}, rb.Name), st, s, rb.script(params))
	s.Wait(2 * time.Second)
	if res.Error != nil {
		return nil, runbookError(rb, "its dry run failed", res.Error)
	}
	if refused := s.Refused(); refused != "" {
		return []string{"refused: " + refused}, nil
	}
	var sb strings.Builder
	writeChanges(&sb, s.Planned())
	lines := strings.Split(strings.TrimRight(sb.String(), "\n"), "\n")
	if sb.Len() == 0 {
		lines = []string{"(its dry run changes nothing with these parameters)"}
	}
	return lines, nil
}

// ApproveRunbook records d's approval of runbook name at version (the
// version the person read) as a standard change within bounds, with the
// dry run of example (none when nil) for the record.
func (b *Broker) ApproveRunbook(ctx context.Context, name, version string, bounds bridge.Bounds, example json.RawMessage, d bridge.Decision) (*bridge.StandardChange, error) {
	rb, err := b.runbook(ctx, name)
	if err != nil {
		return nil, err
	}
	if version != rb.Version {
		return nil, fmt.Errorf("%w: runbook %s is at version %s, not %s: read it again (kubecode runbooks show %s) and approve the version you read", bridge.ErrPlan, rb.Name, rb.Version, orNothing(version), rb.Name)
	}
	if why := b.checkRunbook(ctx, rb); why != "" {
		return nil, fmt.Errorf("%w: runbook %s fails its type check: %s", bridge.ErrPlan, rb.Name, why)
	}
	for p := range bounds.Params {
		if !slices.ContainsFunc(rb.Params, func(q RunbookParam) bool { return q.Name == p }) {
			return nil, fmt.Errorf("%w: runbook %s has no parameter %s", bridge.ErrPlan, rb.Name, p)
		}
	}
	sc := bridge.StandardChange{Runbook: rb.Name, Version: rb.Version, Code: rb.Code, Bounds: bounds, Example: example}
	if len(example) > 0 {
		if sc.Preview, err = b.PreviewRunbook(ctx, name, example, nil); err != nil {
			return nil, err
		}
	}
	return b.bridge.ApproveStandard(ctx, sc, d)
}

// RevokeStandard ends standard change id at once, on every replica.
func (b *Broker) RevokeStandard(ctx context.Context, id string, d bridge.Decision) (*bridge.StandardChange, error) {
	return b.bridge.RevokeStandard(ctx, id, d)
}

// RunbookView is a runbook as kubecode runbooks lists it: what it is,
// and the standard changes of it.
type RunbookView struct {
	*Runbook
	// State is "draft" (no standard change allows this version),
	// "standard" or "revoked".
	State string `json:"state"`
	// Check says why the runbook fails its type check against the
	// catalog, when it does: it is then refused whatever its state.
	Check    string                   `json:"check,omitempty"`
	Standard []*bridge.StandardChange `json:"standard,omitempty"`
}

// RunbookViews lists the runbooks with their standard changes.
func (b *Broker) RunbookViews(ctx context.Context) ([]RunbookView, error) {
	r := b.opts.Runbooks
	if r == nil {
		return nil, nil
	}
	all, scs, err := r.records(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]RunbookView, 0, len(all))
	for _, rb := range all {
		v := RunbookView{Runbook: rb, State: "draft", Check: b.checkRunbook(ctx, rb)}
		for _, sc := range scs {
			if sc.Runbook != rb.Name {
				continue
			}
			v.Standard = append(v.Standard, sc)
			if sc.Version == rb.Version && sc.Code == rb.Code && sc.Active(now) {
				v.State = "standard"
			} else if sc.Version == rb.Version && sc.Code == rb.Code && v.State == "draft" && sc.Revoked != nil {
				v.State = "revoked"
			}
		}
		out = append(out, v)
	}
	return out, nil
}
