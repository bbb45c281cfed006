package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
)

// A StandardChange is a runbook version a person approved once, with
// bounds: a run within them applies without a plan of its own (ITIL's
// standard change). Every change a run makes still passes the policy,
// and one the policy would have a person (or two) look at in any plan —
// critical, two-person, permission-widening, secret-touching — takes the
// run out of the standard change: it is planned, like any change.
type StandardChange struct {
	// ID names it: "std-" and 16 hex digits.
	ID string `json:"id"`
	// Runbook and Version are what it approves: a runbook's name and the
	// hash of its code. An edited runbook is another version, which this
	// approval does not cover.
	Runbook string `json:"runbook"`
	Version string `json:"version"`
	// Code is the version's code as the person read it.
	Code   string `json:"code"`
	Bounds Bounds `json:"bounds"`
	// Example are the parameters of the dry run the person saw, and
	// Preview what it would change, as the plan lines read.
	Example json.RawMessage `json:"example,omitempty"`
	Preview []string        `json:"preview,omitempty"`
	// Approved is the person's decision; Revoked, when set, who ended it.
	Approved Decision  `json:"approved"`
	Revoked  *Decision `json:"revoked,omitempty"`
	// Runs are its recent runs, oldest first: the last hour's, and at
	// least the last 20.
	Runs []StandardRun `json:"runs,omitempty"`
}

// Bounds are what a standard change allows its runs.
type Bounds struct {
	// Namespaces are the only namespaces a run may change. Required: a
	// cluster-scoped change, or one elsewhere, is planned.
	Namespaces []string `json:"namespaces"`
	// Params bound the runbook's parameters, by name: a run whose
	// parameter fails its bound is planned. A parameter not named is free.
	Params map[string]ParamBound `json:"params,omitempty"`
	// RunsPerHour bounds the runs in any hour, on every replica together;
	// past it runs are planned. Zero means 10.
	RunsPerHour int `json:"runsPerHour,omitempty"`
	// Until is when the approval ends. Zero means 30 days after it is
	// given; at most a year.
	Until time.Time `json:"until,omitzero"`
}

// ParamBound bounds one parameter's value. Each that is set must hold.
type ParamBound struct {
	// Values are the only values allowed (as text: "3", "true", "web").
	Values []string `json:"values,omitempty"`
	// Pattern is a regular expression (RE2) the whole value matches.
	Pattern string `json:"pattern,omitempty"`
	// Min and Max bound a number.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

// StandardRun is one run of a standard change.
type StandardRun struct {
	At time.Time `json:"at"`
	// Execution is the run's trace: what kubecode.revert takes.
	Execution string `json:"execution"`
	// User is whom it acted for ("" for the server's identity).
	User   string          `json:"user,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Defaults and ceilings of Bounds.
const (
	defaultRunsPerHour = 10
	maxRunsPerHour     = 100
	// maxRunParams bounds the parameters a run's record keeps, in bytes:
	// a record holds at most maxRunsPerHour+keepRuns runs, and must stay
	// small enough to be revoked.
	maxRunParams       = 512
	defaultStandardFor = 30 * 24 * time.Hour
	maxStandardFor     = 366 * 24 * time.Hour
	keepRuns           = 20
)

// Ledger operations of standard changes.
const (
	OpApproveStandard = "standard.approve"
	OpRevokeStandard  = "standard.revoke"
)

// ErrNotStandard is the class of runbook runs no standard change allows
// at all (a draft, a revoked or expired approval): they are refused, not
// planned.
var ErrNotStandard = errors.New("not a standard change")

// Active says whether sc allows runs at now.
func (sc *StandardChange) Active(now time.Time) bool {
	return sc.Revoked == nil && now.Before(sc.Bounds.Until)
}

// RunsInHour counts sc's runs in the hour before now.
func (sc *StandardChange) RunsInHour(now time.Time) int {
	n := 0
	for _, r := range sc.Runs {
		if now.Sub(r.At) < time.Hour {
			n++
		}
	}
	return n
}

// Text says b on one line, as people read it: "namespaces shop; name
// matching web|api; 5 runs an hour; until 2026-12-29T07:04:38Z".
func (b Bounds) Text() string {
	parts := []string{"namespaces " + strings.Join(b.Namespaces, ", ")}
	names := make([]string, 0, len(b.Params))
	for n := range b.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		pb := b.Params[name]
		var s []string
		if len(pb.Values) > 0 {
			s = append(s, "one of "+strings.Join(pb.Values, ", "))
		}
		if pb.Pattern != "" {
			s = append(s, "matching "+pb.Pattern)
		}
		if pb.Min != nil || pb.Max != nil {
			s = append(s, "in "+rangeText(pb))
		}
		parts = append(parts, name+" "+strings.Join(s, " and "))
	}
	return strings.Join(append(parts, fmt.Sprintf("%d runs an hour", b.RunsPerHour), "until "+b.Until.UTC().Format(time.RFC3339)), "; ")
}

// check fills b's defaults and says what is wrong with it.
func (b *Bounds) check(now time.Time) error {
	if len(b.Namespaces) == 0 {
		return errors.New("a standard change names the namespaces its runs may change (--namespace)")
	}
	for _, ns := range b.Namespaces {
		if !dnsLabel.MatchString(ns) {
			return fmt.Errorf("namespace %q is not a namespace's name", ns)
		}
	}
	for name, pb := range b.Params {
		if pb.Pattern != "" {
			if _, err := regexp.Compile(`^(?:` + pb.Pattern + `)$`); err != nil {
				return fmt.Errorf("parameter %s: pattern: %v", name, err)
			}
		}
		if pb.Min != nil && pb.Max != nil && *pb.Min > *pb.Max {
			return fmt.Errorf("parameter %s: min %v is above max %v", name, *pb.Min, *pb.Max)
		}
	}
	switch {
	case b.RunsPerHour == 0:
		b.RunsPerHour = defaultRunsPerHour
	case b.RunsPerHour < 0 || b.RunsPerHour > maxRunsPerHour:
		return fmt.Errorf("runs per hour is between 1 and %d, not %d", maxRunsPerHour, b.RunsPerHour)
	}
	switch {
	case b.Until.IsZero():
		b.Until = now.Add(defaultStandardFor)
	case !b.Until.After(now):
		return fmt.Errorf("until %s is past", b.Until.Format(time.RFC3339))
	case b.Until.Sub(now) > maxStandardFor:
		return fmt.Errorf("a standard change lasts at most a year, not until %s", b.Until.Format(time.RFC3339))
	}
	b.Until = b.Until.UTC().Truncate(time.Second)
	return nil
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Admits says why params fall outside sc's parameter bounds, or "".
func (sc *StandardChange) Admits(params map[string]any) string {
	names := make([]string, 0, len(sc.Bounds.Params))
	for n := range sc.Bounds.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		pb := sc.Bounds.Params[name]
		v, ok := params[name]
		if !ok || v == nil {
			return fmt.Sprintf("parameter %s is not given and its bound needs a value", name)
		}
		text := valueText(v)
		if len(pb.Values) > 0 && !slices.Contains(pb.Values, text) {
			return fmt.Sprintf("parameter %s is %q, not one of %s", name, text, strings.Join(pb.Values, ", "))
		}
		if pb.Pattern != "" {
			if re, err := regexp.Compile(`^(?:` + pb.Pattern + `)$`); err != nil || !re.MatchString(text) {
				return fmt.Sprintf("parameter %s is %q, which does not match %s", name, text, pb.Pattern)
			}
		}
		if pb.Min != nil || pb.Max != nil {
			f, ok := v.(float64)
			if !ok || math.IsNaN(f) {
				return fmt.Sprintf("parameter %s is %q, not a number", name, text)
			}
			if pb.Min != nil && f < *pb.Min || pb.Max != nil && f > *pb.Max {
				return fmt.Sprintf("parameter %s is %s, outside %s", name, text, rangeText(pb))
			}
		}
	}
	return ""
}

func valueText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

func rangeText(pb ParamBound) string {
	lo, hi := "…", "…"
	if pb.Min != nil {
		lo = strconv.FormatFloat(*pb.Min, 'f', -1, 64)
	}
	if pb.Max != nil {
		hi = strconv.FormatFloat(*pb.Max, 'f', -1, 64)
	}
	return lo + ".." + hi
}

// outside says why change c, planned as pc in a run of sc, is no
// standard change: what a person must see in a plan of its own.
func (sc *StandardChange) outside(c *catalog.Change, pc *PlanChange) string {
	switch {
	case pc.TwoPerson != "":
		return pc.Object + " needs two approvers (" + pc.TwoPerson + ")"
	case pc.NoSelf != "":
		return pc.NoSelf
	}
	check := func(o *catalog.Change) string {
		switch {
		case o.Upstream != "":
			return o.Object() + " is an upstream tool's change"
		case o.Namespace == "":
			return o.Object() + " is cluster-scoped"
		case !slices.Contains(sc.Bounds.Namespaces, o.Namespace):
			return fmt.Sprintf("%s is in namespace %s, outside the standard change's %s", o.Object(), o.Namespace, strings.Join(sc.Bounds.Namespaces, ", "))
		case o.Critical != "":
			return o.Object() + " is critical (" + o.Critical + ")"
		case o.Privileged:
			return o.Object() + " grants permissions"
		case o.Sensitive:
			return o.Object() + " holds secret values"
		case o.SecretAccess != "":
			return o.Object() + ": the command can read a Secret (" + o.SecretAccess + ")"
		case o.PodSecurity != "":
			return o.Object() + " runs privileged pods (" + o.PodSecurity + ")"
		case o.Action == "delete" && o.Protected:
			return "deleting " + o.Object() + " is a protected delete"
		case o.RevertOf != "":
			return o.Object() + " is a revert"
		}
		return ""
	}
	return firstOf(c, check)
}

// ApproveStandard records d's approval of runbook sc.Runbook at
// sc.Version (its Code) as a standard change within sc.Bounds, where
// every replica sees it, and returns it with its ID. The decision must
// be a person's approval through a channel the policy allows.
func (b *Bridge) ApproveStandard(ctx context.Context, sc StandardChange, d Decision) (*StandardChange, error) {
	now := b.opts.Now().UTC().Truncate(time.Second)
	switch {
	case d.By == "":
		return nil, fmt.Errorf("%w: an approval needs who gives it", ErrPlan)
	case !d.Approve:
		return nil, fmt.Errorf("%w: a standard change is approved; to end one, revoke it", ErrPlan)
	case !b.policy.ChannelAllowed(d.Channel):
		return nil, fmt.Errorf("%w: a standard change cannot be approved through %s: the policy's approvalChannels allow only %s", ErrPlan, d.Channel, strings.Join(b.policy.ApprovalChannels, ", "))
	case sc.Runbook == "" || sc.Version == "" || sc.Code == "":
		return nil, fmt.Errorf("%w: a standard change names a runbook, its version and its code", ErrPlan)
	}
	if err := sc.Bounds.check(now); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlan, err)
	}
	if d.At.IsZero() {
		d.At = now
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	sc.ID, sc.Approved, sc.Revoked, sc.Runs = "std-"+hex.EncodeToString(id), d, nil, nil
	raw, err := b.sealRecord(sc)
	if err != nil {
		return nil, err
	}
	if err := b.approvals.Put(ctx, sc.ID, sc.Bounds.Until, raw); err != nil {
		return nil, fmt.Errorf("keep standard change %s: %w", sc.ID, err)
	}
	b.recordStandard(&sc, OpApproveStandard, d)
	return &sc, nil
}

// RevokeStandard ends standard change id at once, on every replica: the
// next run is refused.
func (b *Bridge) RevokeStandard(ctx context.Context, id string, d Decision) (*StandardChange, error) {
	if d.By == "" {
		return nil, fmt.Errorf("%w: a revocation needs who makes it", ErrPlan)
	}
	if d.At.IsZero() {
		d.At = b.opts.Now().UTC().Truncate(time.Second)
	}
	d.Approve = false
	var out *StandardChange
	err := b.updateStandard(ctx, id, func(sc *StandardChange) error {
		if sc.Revoked != nil {
			return fmt.Errorf("%w: standard change %s was revoked already by %s", ErrPlan, id, (&Pending{Decisions: []Decision{*sc.Revoked}}).Decided())
		}
		sc.Revoked, out = &d, sc
		if len(sc.Runs) > keepRuns { // whatever the record holds, a revocation fits
			sc.Runs = sc.Runs[len(sc.Runs)-keepRuns:]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.recordStandard(out, OpRevokeStandard, d)
	return out, nil
}

// StandardChanges returns the standard changes not yet past their end,
// revoked ones included, newest first.
func (b *Bridge) StandardChanges(ctx context.Context) ([]*StandardChange, error) {
	_, out, err := b.RunbookRecords(ctx)
	return out, err
}

// RunbookRecords returns, from one read of the store, the runbooks agents
// saved (by name) and the standard changes (StandardChanges).
func (b *Bridge) RunbookRecords(ctx context.Context) ([]SavedRunbook, []*StandardChange, error) {
	raws, err := b.approvals.List(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list runbooks and standard changes: %w", err)
	}
	var saved []SavedRunbook
	var out []*StandardChange
	for _, sealed := range raws {
		raw, ok := b.Unseal(recordPurpose, string(sealed))
		if !ok {
			continue
		}
		var kind struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			SavedBy string `json:"savedBy"`
		}
		if json.Unmarshal(raw, &kind) != nil {
			continue
		}
		switch {
		case strings.HasPrefix(kind.ID, "std-"):
			var sc StandardChange
			if json.Unmarshal(raw, &sc) == nil {
				out = append(out, &sc)
			}
		case kind.ID == "" && kind.Name != "" && kind.SavedBy != "":
			var r SavedRunbook
			if json.Unmarshal(raw, &r) == nil && r.Code != "" {
				saved = append(saved, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Approved.At.Equal(out[j].Approved.At) {
			return out[i].Approved.At.After(out[j].Approved.At)
		}
		return out[i].ID < out[j].ID
	})
	sort.Slice(saved, func(i, j int) bool { return saved[i].Name < saved[j].Name })
	return saved, out, nil
}

// StandardFor returns the standard change that allows a run of runbook
// at version (whose text is code: an approval holds the very text the
// person read, and allows it only) with params, and "" — or nil and why
// the run is to be
// planned instead. An error wrapping ErrNotStandard says no standard
// change allows this version at all (a draft, an approval revoked or
// ended): the run is refused.
func (b *Bridge) StandardFor(ctx context.Context, runbook, version, code string, params map[string]any) (*StandardChange, string, error) {
	all, err := b.StandardChanges(ctx)
	if err != nil {
		return nil, "", err
	}
	now := b.opts.Now()
	var ended, others []*StandardChange
	var why string
	for _, sc := range all {
		switch {
		case sc.Runbook != runbook:
		case sc.Version != version || sc.Code != code: // the text, not only its short hash
			if sc.Active(now) {
				others = append(others, sc)
			}
		case !sc.Active(now):
			ended = append(ended, sc)
		default:
			if w := sc.Admits(params); w != "" {
				if why == "" {
					why = w
				}
				continue
			}
			if sc.RunsInHour(now) >= sc.Bounds.RunsPerHour {
				if why == "" {
					why = fmt.Sprintf("standard change %s allows %d runs an hour and had them", sc.ID, sc.Bounds.RunsPerHour)
				}
				continue
			}
			return sc, "", nil
		}
	}
	if why != "" {
		return nil, why, nil
	}
	approve := "a person approves it with `kubecode runbooks approve " + runbook + " --namespace NS` (or on the approval page)"
	switch {
	case len(ended) > 0:
		e := ended[0]
		if e.Revoked != nil {
			return nil, "", fmt.Errorf("%w: standard change %s of runbook %s was revoked by %s: no run of it is allowed; %s again", ErrNotStandard, e.ID, runbook, (&Pending{Decisions: []Decision{*e.Revoked}}).Decided(), approve)
		}
		return nil, "", fmt.Errorf("%w: standard change %s of runbook %s ended at %s; %s again", ErrNotStandard, e.ID, runbook, e.Bounds.Until.Format(time.RFC3339), approve)
	case len(others) > 0:
		return nil, "", fmt.Errorf("%w: runbook %s changed since a person approved it (approved version %s, this one %s): a changed runbook is a draft until %s", ErrNotStandard, runbook, others[0].Version, version, approve)
	}
	return nil, "", fmt.Errorf("%w: runbook %s (version %s) is a draft: no person approved it as a standard change, so it does not run; %s", ErrNotStandard, runbook, version, approve)
}

// CountRun records a run of standard change id, if it is still active
// and under its runs per hour (on every replica together); false means
// it is not, and the run is to be planned.
func (b *Bridge) CountRun(ctx context.Context, id string, run StandardRun) (bool, error) {
	if run.At.IsZero() {
		run.At = b.opts.Now().UTC()
	}
	run.Params = elide(run.Params, nil)
	if len(run.Params) > maxRunParams {
		run.Params = json.RawMessage(`"[` + strconv.Itoa(len(run.Params)) + ` bytes, not kept]"`)
	}
	counted := false
	err := b.updateStandard(ctx, id, func(sc *StandardChange) error {
		counted = false
		if sc.Revoked != nil {
			return fmt.Errorf("%w: standard change %s was revoked by %s as the run began: it does not run", ErrNotStandard, id, (&Pending{Decisions: []Decision{*sc.Revoked}}).Decided())
		}
		if !sc.Active(run.At) {
			return fmt.Errorf("%w: standard change %s ended at %s as the run began: it does not run", ErrNotStandard, id, sc.Bounds.Until.Format(time.RFC3339))
		}
		if sc.RunsInHour(run.At) >= sc.Bounds.RunsPerHour {
			return nil
		}
		runs := append(sc.Runs, run)
		for len(runs) > keepRuns && run.At.Sub(runs[0].At) >= time.Hour {
			runs = runs[1:]
		}
		sc.Runs, counted = runs, true
		return nil
	})
	return counted, err
}

// updateStandard changes standard change id's record with f, again if
// another replica changed it meanwhile.
func (b *Bridge) updateStandard(ctx context.Context, id string, f func(*StandardChange) error) error {
	for attempt := 0; attempt < 8; attempt++ {
		raw, version, err := b.approvals.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("read standard change %s: %w", id, err)
		}
		var sc StandardChange
		if raw == nil || !strings.HasPrefix(id, "std-") {
			return fmt.Errorf("%w: no standard change %s is recorded here", ErrPlan, id)
		}
		if err := b.openRecord(raw, &sc); err != nil || sc.ID != id {
			return fmt.Errorf("the record of standard change %s is not one this server wrote (its seal does not match)", id)
		}
		if err := f(&sc); err != nil {
			return err
		}
		sealed, err := b.sealRecord(&sc)
		if err != nil {
			return err
		}
		ok, err := b.approvals.Update(ctx, id, version, sealed)
		if err != nil {
			return fmt.Errorf("record standard change %s: %w", id, err)
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("standard change %s: its record keeps changing; try again", id)
}

// recordStandard writes a decision on a standard change to the ledger.
func (b *Bridge) recordStandard(sc *StandardChange, op string, d Decision) {
	w := b.opts.Ledger
	if w == nil {
		return
	}
	e := Entry{Trace: sc.ID, Time: d.At, Operation: op, Outcome: "ok", Decision: "approved", Plan: sc.ID,
		ApprovedBy: (&Pending{Decisions: []Decision{d}}).Decided(),
		Runbook:    &RunbookRun{Name: sc.Runbook, Version: sc.Version, Standard: sc.ID}}
	if op == OpRevokeStandard {
		e.Decision = "revoked"
	}
	line, _ := json.Marshal(e)
	b.ledgerMu.Lock()
	_, _ = w.Write(append(line, '\n'))
	b.ledgerMu.Unlock()
}

// RunbookRun names, in the ledger, the runbook run a call belongs to.
type RunbookRun struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Standard is the standard change that allowed the run without a
	// plan; empty for a run planned like any change.
	Standard string          `json:"standard,omitempty"`
	Params   json.RawMessage `json:"params,omitempty"`
	// CalledBy is the execution whose script called the runbook.
	CalledBy string `json:"calledBy,omitempty"`
}

// A SessionProvider runs operations that are scripts
// (catalog.Annotations.Script): it is given the calling session, whose
// caller, plan and approval the script's own calls share unless a
// standard change runs them in a session of their own.
type SessionProvider interface {
	Provider
	CallIn(ctx context.Context, s *Session, name string, args json.RawMessage) (json.RawMessage, error)
}

// SavedRunbook is a runbook an agent saved: a draft until a person
// approves it as a standard change.
type SavedRunbook struct {
	Name    string    `json:"name"`
	Code    string    `json:"code"`
	SavedBy string    `json:"savedBy"`
	Saved   time.Time `json:"saved"`
}

// keepSaved is how long a saved runbook is kept.
const keepSaved = 366 * 24 * time.Hour

// SaveRunbook keeps runbook r where every replica sees it, replacing one
// saved before under its name.
func (b *Bridge) SaveRunbook(ctx context.Context, r SavedRunbook) error {
	if r.Saved.IsZero() {
		r.Saved = b.opts.Now().UTC().Truncate(time.Second)
	}
	id := "rb-" + r.Name
	raw, err := b.sealRecord(r)
	if err != nil {
		return err
	}
	for attempt := 0; attempt < 5; attempt++ {
		_, version, err := b.approvals.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("read runbook %s: %w", r.Name, err)
		}
		if version == "" {
			if err = b.approvals.Put(ctx, id, r.Saved.Add(keepSaved), raw); err == nil {
				return nil
			}
			continue // saved meanwhile by another: replace it
		}
		if ok, err := b.approvals.Update(ctx, id, version, raw); err != nil || ok {
			return err
		}
	}
	return fmt.Errorf("runbook %s: its record keeps changing; try again", r.Name)
}

// SavedRunbooks returns the runbooks agents saved.
func (b *Bridge) SavedRunbooks(ctx context.Context) ([]SavedRunbook, error) {
	saved, _, err := b.RunbookRecords(ctx)
	return saved, err
}
