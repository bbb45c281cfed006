package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
)

// A Pending is a plan waiting for people, as the approval store keeps
// it: the signed plan (which holds no values), how it reads, and the
// decisions made on it.
type Pending struct {
	ID string `json:"id"`
	// Token is the plan's signed token; only the server reads it.
	Token string `json:"token"`
	// User is whom the plan acts for ("" for the server's identity).
	User string `json:"user,omitempty"`
	// Text is the plan as a reviewer reads it.
	Text string `json:"text"`
	// Changes counts the plan's changes.
	Changes int `json:"changes"`
	// Approvers is how many distinct people must approve it (1 or 2).
	Approvers int `json:"approvers"`
	// Why says why it needs two, when it does.
	Why string `json:"why,omitempty"`
	// NoSelf says why the user it acts for may not approve it, when so.
	NoSelf    string     `json:"noSelf,omitempty"`
	Created   time.Time  `json:"created"`
	Expires   time.Time  `json:"expires"`
	Decisions []Decision `json:"decisions,omitempty"`
	// Cluster names the cluster the plan changes (its API server; with
	// several, their names).
	Cluster string `json:"cluster,omitempty"`
	// Outcome is what the approved plan's run did, once it ran.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Calls are each change's full call (operation and arguments, secret
	// values elided), for the reviewer who wants the whole object.
	Calls []PlanCall `json:"calls,omitempty"`
}

// PlanCall is one planned change's full call.
type PlanCall struct {
	Op        string          `json:"op"`
	Object    string          `json:"object"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Lines are the change's lines of the plan's text.
	Lines  []string `json:"lines,omitempty"`
	Review Review   `json:"review"`
}

// A Decision is one person's answer to a plan.
type Decision struct {
	// By is who decided: an authenticated user, or a description of the
	// person at the channel ("local user").
	By string `json:"by"`
	// Channel is how: "page", "cli", "elicitation", "terminal", "agent".
	Channel string    `json:"channel"`
	At      time.Time `json:"at"`
	Approve bool      `json:"approve"`
	// Self marks a decision by the user the plan acts for.
	Self bool `json:"self,omitempty"`
	// Verified says By is an identity the cluster authenticated (a
	// token), not a description of whoever holds a local link or key.
	Verified bool `json:"verified,omitempty"`
	// Reason is what the person said with a denial: the agent reads it.
	Reason string `json:"reason,omitempty"`
}

// maxReason bounds a decision's reason, in bytes.
const maxReason = 1000

// Outcome is what the run of an approved plan did.
type Outcome struct {
	// Execution is the run's trace id (what kubecode.revert takes).
	Execution string    `json:"execution"`
	At        time.Time `json:"at"`
	// Applied of Planned changes were made; Error says why the run
	// stopped short, if it did.
	Applied int    `json:"applied"`
	Planned int    `json:"planned"`
	Error   string `json:"error,omitempty"`
	// NoRevert says kubecode.revert has nothing of the run to undo, and
	// NoUndo why changes it made cannot be undone: no seat offers what
	// cannot happen.
	NoRevert bool     `json:"noRevert,omitempty"`
	NoUndo   []string `json:"noUndo,omitempty"`
}

// UndoLine says how to undo the run, or that it cannot be: "to undo it:
// kubecode revert exec-… (it cannot undo: …)", "no undo: …", "" when it
// made nothing to undo. how is the way to call the revert.
func (o *Outcome) UndoLine(how string) string {
	switch {
	case o.NoRevert && len(o.NoUndo) > 0:
		return "no undo: " + strings.Join(o.NoUndo, "; ")
	case o.NoRevert:
		return ""
	case len(o.NoUndo) > 0:
		return "to undo it: " + how + " (it cannot undo: " + strings.Join(o.NoUndo, "; ") + ")"
	}
	return "to undo it: " + how
}

// Channels a person decides through (Decision.Channel, and the
// policy's ApprovalChannels).
const (
	ChannelPage        = "page"
	ChannelCLI         = "cli"
	ChannelElicitation = "elicitation"
	ChannelTerminal    = "terminal"
)

// The states of a Pending.
const (
	StatePending  = "pending"
	StateApproved = "approved"
	StateDenied   = "denied"
	// Shown only (Standing): what became of a plan after its decision.
	StateApplied = "applied"
	StatePartly  = "applied in part"
	StateFailed  = "failed"
	StateExpired = "expired"
)

// Standing is where the plan stands as people read it: its State, or,
// once decided, applied (in part, or failed) by its run, or expired.
func (p *Pending) Standing(now time.Time) string {
	st := p.State()
	switch {
	case p.Outcome != nil && p.Outcome.Applied == 0:
		return StateFailed
	case p.Outcome != nil && p.Outcome.Applied < p.Outcome.Planned:
		return StatePartly
	case p.Outcome != nil:
		return StateApplied
	case st != StateDenied && now.After(p.Expires):
		return StateExpired
	}
	return st
}

// State is where the plan stands: denied by any one, approved once enough
// distinct people approved it, pending until then.
func (p *Pending) State() string {
	n := 0
	for _, d := range p.Decisions {
		if !d.Approve {
			return StateDenied
		}
		n++
	}
	if n >= max(1, p.Approvers) {
		return StateApproved
	}
	return StatePending
}

// Decided returns the decisions' summary for messages and the ledger:
// "alice (page, 16:04:05Z)".
func (p *Pending) Decided() string {
	var parts []string
	for _, d := range p.Decisions {
		s := d.By + " (" + d.Channel + ", " + d.At.UTC().Format(time.RFC3339)
		if d.Self {
			s += ", self-approval"
		}
		s += ")"
		if d.Reason != "" {
			s += fmt.Sprintf(", saying %q", d.Reason)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ErrNoPlan is returned for a plan id no store holds.
var ErrNoPlan = errors.New("no such plan")

// ApprovalStore keeps the records of pending plans (JSON the bridge
// writes, holding no Secret value) where every replica sees them.
type ApprovalStore interface {
	// Where names the store ("" for this process's memory).
	Where() string
	// Put keeps a new plan's record, which may be deleted a while after
	// expires.
	Put(ctx context.Context, id string, expires time.Time, record []byte) error
	// Get returns plan id's record and its version; a nil record when
	// there is none.
	Get(ctx context.Context, id string) (record []byte, version string, err error)
	// List returns the records of plans not yet expired.
	List(ctx context.Context) ([][]byte, error)
	// Update replaces plan id's record if it is still at version, and
	// says whether it was.
	Update(ctx context.Context, id, version string, record []byte) (bool, error)
}

// NewMemoryApprovals returns a store in this process's memory: for one
// local process. now is the clock (nil: time.Now).
func NewMemoryApprovals(now func() time.Time) ApprovalStore {
	if now == nil {
		now = time.Now
	}
	return &memoryApprovals{now: now, plans: map[string]memoryRecord{}, changed: make(chan struct{})}
}

type memoryApprovals struct {
	now     func() time.Time
	mu      sync.Mutex
	seq     int
	plans   map[string]memoryRecord
	changed chan struct{} // closed and replaced on each change
}

type memoryRecord struct {
	record  []byte
	version string
	expires time.Time
}

func (m *memoryApprovals) Where() string { return "" }

func (m *memoryApprovals) Put(_ context.Context, id string, expires time.Time, record []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for k, r := range m.plans {
		if now.After(r.expires.Add(keepDecided)) {
			delete(m.plans, k)
		}
	}
	if _, ok := m.plans[id]; ok {
		return fmt.Errorf("plan %s is recorded already", id)
	}
	m.seq++
	m.plans[id] = memoryRecord{record: slices.Clone(record), version: fmt.Sprint(m.seq), expires: expires}
	m.notify()
	return nil
}

func (m *memoryApprovals) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memoryApprovals) Get(_ context.Context, id string) ([]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.plans[id]
	if !ok {
		return nil, "", nil
	}
	return slices.Clone(r.record), r.version, nil
}

func (m *memoryApprovals) List(_ context.Context) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out [][]byte
	for _, r := range m.plans {
		if !now.After(r.expires) {
			out = append(out, slices.Clone(r.record))
		}
	}
	return out, nil
}

func (m *memoryApprovals) Update(_ context.Context, id, version string, record []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.plans[id]
	if !ok {
		return false, fmt.Errorf("%w: %s", ErrNoPlan, id)
	}
	if r.version != version {
		return false, nil
	}
	m.seq++
	r.record, r.version = slices.Clone(record), fmt.Sprint(m.seq)
	m.plans[id] = r
	m.notify()
	return true, nil
}

// Changed returns a channel closed at the next change: waiting in memory
// needs no polling.
func (m *memoryApprovals) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Pending returns plan id's record, or an error wrapping ErrNoPlan.
func (b *Bridge) Pending(ctx context.Context, id string) (*Pending, error) {
	p, _, err := b.pending(ctx, id)
	return p, err
}

func (b *Bridge) pending(ctx context.Context, id string) (*Pending, string, error) {
	if !strings.HasPrefix(id, "plan-") { // a standard change's or a runbook's record is no plan
		return nil, "", fmt.Errorf("%w: %s", ErrNoPlan, id)
	}
	raw, version, err := b.approvals.Get(ctx, id)
	if err != nil {
		return nil, "", fmt.Errorf("read plan %s: %w", id, err)
	}
	if raw == nil {
		return nil, "", fmt.Errorf("%w: %s", ErrNoPlan, id)
	}
	var p Pending
	if err := b.openRecord(raw, &p); err != nil || p.ID != id {
		return nil, "", fmt.Errorf("the record of plan %s is not one this server wrote (its seal does not match): plan again", id)
	}
	return &p, version, nil
}

// PendingPlans returns the plans not yet expired, newest first.
func (b *Bridge) PendingPlans(ctx context.Context) ([]*Pending, error) {
	raws, err := b.approvals.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	out := make([]*Pending, 0, len(raws))
	for _, raw := range raws {
		var p Pending
		if b.openRecord(raw, &p) == nil && strings.HasPrefix(p.ID, "plan-") {
			out = append(out, &p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// HumanApproval says whether plans need a person's approval: unless every
// cluster's policy says approval "agent", they do.
func (b *Bridge) HumanApproval() bool {
	if b.policy.Approval != policy.ApprovalAgent {
		return true
	}
	for _, c := range b.clusters {
		if c.policy.Approval != policy.ApprovalAgent {
			return true
		}
	}
	return false
}

// recordPurpose seals the records the bridge keeps in its store.
const recordPurpose = "kubecode-record"

// sealRecord encodes v sealed with the plan key: a record written by
// anyone else (another key, or a hand-edited decision) is refused.
func (b *Bridge) sealRecord(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return []byte(b.Seal(recordPurpose, raw)), nil
}

// openRecord checks a sealed record and decodes it into v.
func (b *Bridge) openRecord(sealed []byte, v any) error {
	raw, ok := b.Unseal(recordPurpose, string(sealed))
	if !ok {
		return errors.New("the record's seal does not match")
	}
	return json.Unmarshal(raw, v)
}

// Propose keeps plan p, signed as token and read as text, for people to
// decide on.
func (b *Bridge) Propose(ctx context.Context, p *Plan, token, text string) (*Pending, error) {
	n, why := 1, ""
	if p.TwoPerson != "" {
		n, why = 2, p.TwoPerson
	}
	pd := &Pending{ID: p.ID, Token: token, User: p.User, Text: text, Changes: len(p.Changes), Approvers: n, Why: why, NoSelf: p.NoSelf,
		Created: b.opts.Now().UTC().Truncate(time.Second), Expires: p.Expires, Cluster: b.clusterName()}
	for _, c := range p.Changes {
		pd.Calls = append(pd.Calls, PlanCall{Op: c.Op, Object: c.Object, Arguments: c.Call, Lines: c.Diff, Review: c.Review})
	}
	raw, err := b.sealRecord(pd)
	if err != nil {
		return nil, err
	}
	if err := b.approvals.Put(ctx, p.ID, p.Expires, raw); err != nil {
		return nil, fmt.Errorf("keep plan %s for approval: %w", p.ID, err)
	}
	return pd, nil
}

// Decide records one person's decision on plan id. A decision on a plan
// that expired, was denied or is approved already is refused (an error
// wrapping ErrPlan), and so is, for a plan needing two approvers, an
// approval by the user it acts for or by someone who approved it already.
func (b *Bridge) Decide(ctx context.Context, id string, d Decision) (*Pending, error) {
	if d.By == "" {
		return nil, fmt.Errorf("%w: a decision needs who makes it", ErrPlan)
	}
	if d.At.IsZero() {
		d.At = b.opts.Now().UTC().Truncate(time.Second)
	}
	d.Reason = strings.TrimSpace(d.Reason)
	if d.Approve {
		d.Reason = ""
	}
	if len(d.Reason) > maxReason {
		return nil, fmt.Errorf("%w: a reason is at most %d bytes; this one has %d", ErrPlan, maxReason, len(d.Reason))
	}
	for attempt := 0; ; attempt++ {
		p, version, err := b.pending(ctx, id)
		if errors.Is(err, ErrNoPlan) {
			return nil, fmt.Errorf("%w: no plan %s is waiting for approval here (check the id; plans expire after %s)", ErrPlan, id, time.Duration(b.policy.PlanTTL))
		}
		if err != nil {
			return nil, err
		}
		if b.opts.Now().After(p.Expires) {
			return nil, fmt.Errorf("%w: plan %s expired at %s: the agent must plan again", ErrPlan, p.ID, p.Expires.Format(time.RFC3339))
		}
		if p.Outcome != nil && p.Outcome.Applied > 0 {
			return nil, fmt.Errorf("%w: plan %s was approved by %s and applied by execution %s", ErrPlan, p.ID, p.Decided(), p.Outcome.Execution)
		}
		switch p.State() {
		case StateDenied:
			return nil, fmt.Errorf("%w: plan %s was denied already by %s", ErrPlan, p.ID, p.Decided())
		case StateApproved:
			return nil, fmt.Errorf("%w: plan %s is approved already by %s", ErrPlan, p.ID, p.Decided())
		}
		d.Self = p.User != "" && d.By == p.User
		if d.Approve {
			if why := b.cannotApprove(p, d); why != "" {
				return nil, fmt.Errorf("%w: %s", ErrPlan, why)
			}
		}
		p.Decisions = append(p.Decisions, d)
		raw, err := b.sealRecord(p)
		if err != nil {
			return nil, err
		}
		ok, err := b.approvals.Update(ctx, id, version, raw)
		if err != nil {
			return nil, fmt.Errorf("record the decision on plan %s: %w", id, err)
		}
		if ok {
			b.recordDecision(p, d)
			return p, nil
		}
		if attempt >= 5 {
			return nil, fmt.Errorf("plan %s: its record keeps changing; try again", id)
		}
	}
}

// Await returns plan id's record once it is decided, or as it stands when
// ctx ends (its State then says pending). poll is how often a store that
// cannot notify is read again.
func (b *Bridge) Await(ctx context.Context, id string, poll time.Duration) (*Pending, error) {
	n, _ := b.approvals.(interface{ Changed() <-chan struct{} })
	for {
		var changed <-chan struct{}
		if n != nil {
			changed = n.Changed()
		}
		p, err := b.Pending(context.WithoutCancel(ctx), id)
		if err != nil {
			if errors.Is(err, ErrNoPlan) {
				return nil, fmt.Errorf("%w: no plan %s is waiting for approval here: run the script without approve for a new plan", ErrPlan, id)
			}
			return nil, err
		}
		if p.State() != StatePending || b.opts.Now().After(p.Expires) {
			return p, nil
		}
		if changed == nil {
			t := time.NewTimer(poll)
			select {
			case <-ctx.Done():
				t.Stop()
				return p, nil
			case <-t.C:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return p, nil
		case <-changed:
		}
	}
}

// twoPerson says why a change needs two approvers under classes (the
// policy's TwoPerson), or "".
func twoPerson(classes []string, c *catalog.Change) string {
	if len(classes) == 0 {
		return ""
	}
	has := func(k string) bool { return slices.Contains(classes, k) || slices.Contains(classes, policy.TwoAll) }
	check := func(c *catalog.Change) string {
		switch {
		case has(policy.TwoAll):
			return "every change needs two approvers"
		case has(policy.TwoProtectedDelete) && c.Action == "delete" && c.Protected:
			return "deleting " + c.Object() + " is a protected delete"
		case has(policy.TwoPermissionWrite) && c.Privileged:
			return c.Object() + " grants permissions"
		case has(policy.TwoClusterScoped) && c.Namespace == "" && c.Kind != "" && c.Upstream == "":
			return c.Object() + " is cluster-scoped"
		}
		return ""
	}
	return firstOf(c, check)
}

// firstOf is what check says of change c, or else of the first of its
// objects (a manifest's, a release's) it says something of.
func firstOf(c *catalog.Change, check func(*catalog.Change) string) string {
	if why := check(c); why != "" {
		return why
	}
	for i := range c.Objects {
		if why := check(&c.Objects[i]); why != "" {
			return why
		}
	}
	return ""
}

// keepDecided is how long past its expiry a plan's record is kept, for the
// page and the CLI to say what became of it.
const keepDecided = 10 * time.Minute

// recordDecision writes a person's decision on plan p to the ledger.
func (b *Bridge) recordDecision(p *Pending, d Decision) {
	w := b.opts.Ledger
	if w == nil {
		return
	}
	e := Entry{Trace: p.ID, User: p.User, Time: d.At, Operation: OpApprovePlan, Outcome: "ok", Decision: "approved", Plan: p.ID,
		ApprovedBy: (&Pending{Decisions: []Decision{d}}).Decided()}
	if !d.Approve {
		e.Operation, e.Decision = OpDenyPlan, "denied"
	}
	line, _ := json.Marshal(e)
	b.ledgerMu.Lock()
	_, _ = w.Write(append(line, '\n'))
	b.ledgerMu.Unlock()
}

// Settle records on approved plan id's record what its run did (a plan
// approved without a record, by its token in a terminal, has none to
// settle). The outcome of a run that applied something stays; one that
// applied nothing (the plan is not used up) gives way to a later run's.
func (b *Bridge) Settle(ctx context.Context, id string, o Outcome) error {
	if o.At.IsZero() {
		o.At = b.opts.Now().UTC().Truncate(time.Second)
	}
	for attempt := 0; attempt < 5; attempt++ {
		p, version, err := b.pending(ctx, id)
		if errors.Is(err, ErrNoPlan) {
			return nil
		}
		if err != nil {
			return err
		}
		if p.Outcome != nil && p.Outcome.Applied > 0 {
			return nil // the plan is used up: its first outcome stands
		}
		p.Outcome = &o
		raw, err := b.sealRecord(p)
		if err != nil {
			return err
		}
		if ok, err := b.approvals.Update(ctx, id, version, raw); err != nil || ok {
			return err
		}
	}
	return fmt.Errorf("plan %s: its record keeps changing", id)
}

// clusterName names what the bridge's plans change: its scope (the API
// server), or, with several clusters, their names.
func (b *Bridge) clusterName() string {
	if len(b.clusters) > 1 {
		var names []string
		for _, c := range b.clusters {
			names = append(names, c.name)
		}
		return strings.Join(names, ", ")
	}
	return b.scope
}

// CannotApprove says why d.By could not approve plan p through
// d.Channel (d.Verified as their seat vouches), "" when they could: a
// seat that cannot approve a plan does not offer to.
func (b *Bridge) CannotApprove(p *Pending, d Decision) string {
	d.Self = p.User != "" && d.By == p.User
	return b.cannotApprove(p, d)
}

func (b *Bridge) cannotApprove(p *Pending, d Decision) string {
	switch {
	case !b.policy.ChannelAllowed(d.Channel):
		return fmt.Sprintf("plan %s cannot be approved through %s: the policy's approvalChannels allow only %s", p.ID, d.Channel, strings.Join(b.policy.ApprovalChannels, ", "))
	case d.Self && p.NoSelf != "":
		return fmt.Sprintf("plan %s cannot be approved by %s, for whom it acts: %s", p.ID, p.User, p.NoSelf)
	case p.Approvers > 1 && d.Self:
		return fmt.Sprintf("plan %s needs two approvers other than %s, for whom it acts (%s)", p.ID, p.User, p.Why)
	}
	if p.Approvers > 1 {
		for _, o := range p.Decisions {
			if o.By == d.By {
				return fmt.Sprintf("plan %s needs two distinct approvers and %s approved it already (%s)", p.ID, d.By, p.Why)
			}
		}
		if !d.Verified {
			return fmt.Sprintf("plan %s needs two people, each approving as themselves (%s): each runs kubecode approve %s --token with their own Kubernetes token (a person's, not a ServiceAccount's), or signs in on the page of a server run with --auth", p.ID, p.Why, p.ID)
		}
	}
	return ""
}
