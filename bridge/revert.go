package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
)

// A Reverter is a provider whose changes can be reverted: it snapshots
// the objects a change touches, before and after, and says which call
// brings an object back from after to before.
type Reverter interface {
	// Snapshot returns the object that op's change c touches as it is
	// now. result, when set, is the call's result (it names an object the
	// call named only by generateName).
	Snapshot(ctx context.Context, op string, c *catalog.Change, result json.RawMessage) (*catalog.Snapshot, error)
	// Restore returns the operation call that brings the object from
	// after back to before, checking that it is still as after left it;
	// an error says why it cannot (it moved on since: a conflict; a
	// Secret's values, never recorded, would be needed).
	Restore(ctx context.Context, before, after *catalog.Snapshot) (op string, args json.RawMessage, err error)
}

// revertRecord is what a revert needs of an execution: each object it
// changed, before its first change and after the execution.
type revertRecord struct {
	Execution string       `json:"execution"`
	User      string       `json:"user,omitempty"`
	Created   time.Time    `json:"created"`
	Steps     []revertStep `json:"steps"`
}

type revertStep struct {
	Cluster string            `json:"cluster,omitempty"`
	Before  *catalog.Snapshot `json:"before"`
	After   *catalog.Snapshot `json:"after"`
}

// touched is an object a session changed: its snapshot before the first
// change, and how to read it again.
type touched struct {
	cluster  *cluster
	reverter Reverter
	op       string
	change   catalog.Change
	before   *catalog.Snapshot
	// after is the object as the execution left it (KeepReverts), and
	// actors what the plan foresaw would act on it afterwards, from any
	// of the session's changes of it: the held check reads it again.
	after  *catalog.Snapshot
	actors []catalog.Actor
}

// revertTTL is how long an execution's changes can be reverted.
const revertTTL = 24 * time.Hour

// RevertOp is the operation that reverts an applied execution.
const RevertOp = "kubecode.revert"

// revertKey is the record of execution's changes in the store.
func revertKey(execution string) string { return "revert-" + execution }

type revertMark struct{}

// withRevert marks ctx's changes as the revert of execution.
func withRevert(ctx context.Context, execution string) context.Context {
	return context.WithValue(ctx, revertMark{}, execution)
}

// revertOf is the execution ctx's changes revert, or "".
func revertOf(ctx context.Context) string { v, _ := ctx.Value(revertMark{}).(string); return v }

// snapshotBefore records the object c changes as it is before the
// session's first change of it — each object of a call that changes many
// with operations of their own (a manifest's) — or why the change cannot
// be undone.
func (s *Session) snapshotBefore(ctx context.Context, c *callInfo) {
	r, ok := c.provider.(Reverter)
	if !ok || c.change == nil {
		return // not revertable
	}
	var objects []catalog.Change
	for _, o := range c.change.Objects {
		if o.ObjectOp != "" {
			objects = append(objects, o)
		}
	}
	if len(objects) > 0 {
		for i := range objects {
			s.snapshotOne(ctx, c, r, objects[i].ObjectOp, &objects[i])
		}
		return
	}
	// A call whose provider restores it whole (a Helm release, rolled
	// back to a revision) may leave its objects other than they were
	// before: one changed by hand since that revision comes back as that
	// revision has it. Each object it updates is kept too, with the
	// operations of its own resource, before the call itself: a revert
	// goes in reverse order, so the release is restored first, then each
	// object to what it was just before the execution.
	for i := range c.change.Objects {
		o := c.change.Objects[i]
		if o.Action != "update" || !o.Existed || o.Sensitive {
			continue
		}
		op, or := s.b.objectOp(c.cluster, o.Kind, o.Group)
		if or == nil {
			continue
		}
		s.snapshotOne(ctx, c, or, op, &o)
	}
	s.snapshotOne(ctx, c, r, c.name, c.change)
}

// objectOp finds the operation that applies objects of kind in group on
// cluster cl, and its provider when that can revert: "" and nil when none
// is served.
func (b *Bridge) objectOp(cl *cluster, kind, group string) (string, Reverter) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for name, e := range b.ops {
		if e.op.Kind != kind || e.op.Group != group || e.op.Verb != "apply" {
			continue
		}
		p := e.on[cl.name]
		if e.shared {
			p = e.on[""]
		}
		if r, ok := p.(Reverter); ok {
			return name, r
		}
	}
	return "", nil
}

// snapshotOne records object ch, changed by operation op of call c.
func (s *Session) snapshotOne(ctx context.Context, c *callInfo, r Reverter, op string, ch *catalog.Change) {
	if strings.HasSuffix(ch.Name, "*") {
		return // named by generateName: absent before (createdAfter)
	}
	key := c.cluster.name + "\x00" + ch.Object()
	if ch.Upstream != "" {
		// A tool call is no object: each is its own step.
		key += "\x00" + strconv.Itoa(c.seq)
	}
	if s.touchIndex == nil {
		s.touchIndex = map[string]bool{}
	}
	if s.touchIndex[key] {
		for _, t := range s.touched {
			if t.cluster == c.cluster && t.change.Object() == ch.Object() {
				t.actors = append(t.actors, ch.After...)
			}
		}
		return
	}
	snap, err := r.Snapshot(ctx, op, ch, nil)
	if errors.Is(err, catalog.ErrIrreversible) {
		if !slices.Contains(s.irreversible, err.Error()) {
			s.irreversible = append(s.irreversible, err.Error())
		}
		return
	}
	if err != nil {
		return // the change goes on; it is not revertable
	}
	s.touchIndex[key] = true
	s.touched = append(s.touched, &touched{cluster: c.cluster, reverter: r, op: op, change: *ch, before: snap, actors: ch.After})
}

// Irreversible says, for each change the session made that no revert can
// undo, why (catalog.ErrIrreversible).
func (s *Session) Irreversible() []string {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	return slices.Clone(s.irreversible)
}

// createdAfter records an object a create named only by generateName:
// absent before the call, named by its result.
func (s *Session) createdAfter(ctx context.Context, c *callInfo, out json.RawMessage) {
	r, ok := c.provider.(Reverter)
	if !ok || c.change == nil || !strings.HasSuffix(c.change.Name, "*") {
		return
	}
	snap, err := r.Snapshot(ctx, c.name, c.change, out)
	if err != nil || !snap.Exists {
		return
	}
	ch := *c.change
	ch.Name = snap.Name
	if s.touchIndex == nil {
		s.touchIndex = map[string]bool{}
	}
	s.touchIndex[c.cluster.name+"\x00"+ch.Object()] = true // later changes of it keep this "before"
	before := *snap
	before.Exists, before.UID, before.Content = false, "", nil
	s.touched = append(s.touched, &touched{cluster: c.cluster, reverter: r, op: c.name, change: ch, before: &before})
}

// KeepReverts records, for a later revert, each object the session
// changed: before its first change and as it is now. It says whether
// there was anything to record.
func (s *Session) KeepReverts(ctx context.Context) (bool, error) {
	s.changeMu.Lock()
	touched := s.touched
	s.changeMu.Unlock()
	if len(touched) == 0 {
		return false, nil
	}
	rec := revertRecord{Execution: s.trace, User: s.user(), Created: s.b.opts.Now().UTC()}
	if caller := s.callerOf(); caller != nil { // read as the user the changes were for
		ctx = catalog.WithCaller(ctx, caller)
	}
	for _, t := range touched {
		after, err := t.reverter.Snapshot(ctx, t.op, &t.change, nil)
		if err != nil {
			return false, fmt.Errorf("read %s after the execution: %w", t.change.Object(), err)
		}
		cl := ""
		if s.b.multi() {
			cl = t.cluster.name
		}
		rec.Steps = append(rec.Steps, revertStep{Cluster: cl, Before: t.before, After: after})
		s.changeMu.Lock()
		t.after = after
		s.changeMu.Unlock()
	}
	raw, err := s.b.sealRecord(rec)
	if err != nil {
		return false, err
	}
	if err := s.b.approvals.Put(ctx, revertKey(s.trace), s.b.opts.Now().Add(revertTTL), raw); err != nil {
		return false, fmt.Errorf("keep what execution %s changed, for a revert: %w", s.trace, err)
	}
	return true, nil
}

// revertArgs are kubecode.revert's arguments.
type revertArgs struct {
	Execution string `json:"execution"`
}

// RevertResult is what kubecode.revert answers.
type RevertResult struct {
	Execution string   `json:"execution"`
	Restored  []string `json:"restored"`
	// Conflicts are the objects left alone: moved on since the execution,
	// or needing values that were never recorded.
	Conflicts []string `json:"conflicts,omitempty"`
}

// revert runs kubecode.revert: each object the execution changed is
// brought back by a change of its own, in reverse order, each through the
// policy, planned or applied as any change.
func (s *Session) revert(ctx context.Context, c *callInfo) (json.RawMessage, *RPCError) {
	var a revertArgs
	if err := json.Unmarshal(c.args, &a); err != nil || a.Execution == "" {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "kubecode.revert needs {execution: string}: the execution id an applied answer names", Data: &ErrorData{Tool: RevertOp, Reason: "Invalid", Field: "execution"}}
	}
	raw, _, err := s.b.approvals.Get(ctx, revertKey(a.Execution))
	if err != nil {
		return nil, &RPCError{Code: CodeOperationFailed, Message: err.Error(), Data: &ErrorData{Tool: RevertOp}}
	}
	var rec revertRecord
	if raw == nil || s.b.openRecord(raw, &rec) != nil || rec.Execution != a.Execution {
		return nil, &RPCError{Code: CodeOperationFailed, Message: fmt.Sprintf("no change of execution %q is recorded here: it applied nothing, is older than %s, or ran on a server keeping its records elsewhere", a.Execution, revertTTL),
			Data: &ErrorData{Tool: RevertOp, Status: 404, Reason: "NotFound"}}
	}
	if u := s.user(); rec.User != u {
		return nil, &RPCError{Code: CodeRefused, Message: fmt.Sprintf("refused: execution %s acted for %s, not %s: only the same user reverts it", a.Execution, orServer(rec.User), orServer(u)),
			Data: &ErrorData{Tool: RevertOp, Reason: ReasonRefused}}
	}
	res := RevertResult{Execution: a.Execution, Restored: []string{}}
	rctx := withRevert(ctx, a.Execution)
	// Every restoring call is worked out before any is made: a release
	// rolled back first changes its objects, whose own restores are
	// reckoned from what the execution left.
	type restore struct {
		object, op string
		args       json.RawMessage
	}
	var calls []restore
	for i := len(rec.Steps) - 1; i >= 0; i-- {
		st := rec.Steps[i]
		e := s.b.lookup(st.Before.Op)
		var r Reverter
		if cl := s.b.clusterNamed(st.Cluster); e != nil && e.shared {
			r, _ = e.on[""].(Reverter)
		} else if e != nil && cl != nil {
			r, _ = e.on[cl.name].(Reverter)
		}
		if r == nil {
			res.Conflicts = append(res.Conflicts, st.Before.Object()+": its operation is no longer served")
			continue
		}
		op, args, err := r.Restore(ctx, st.Before, st.After)
		if errors.Is(err, catalog.ErrNothingToRevert) {
			continue
		}
		if err != nil {
			res.Conflicts = append(res.Conflicts, st.Before.Object()+": "+err.Error())
			continue
		}
		if st.Cluster != "" && (e == nil || !e.shared) {
			args = withContextArg(args, st.Cluster)
		}
		calls = append(calls, restore{object: st.Before.Object(), op: op, args: args})
	}
	for _, rc := range calls {
		if _, rpcErr := s.call(rctx, rc.op, rc.args); rpcErr != nil {
			if rpcErr.Code == CodeRefused {
				return nil, rpcErr // the policy's word: no plan of part of it
			}
			// Object by object: one that cannot be restored (its dry run
			// failed) is reported, and the rest is still planned.
			res.Conflicts = append(res.Conflicts, rc.object+": cannot be restored: "+rpcErr.Message)
			continue
		}
		res.Restored = append(res.Restored, rc.object)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, &RPCError{Code: CodeInternal, Message: err.Error()}
	}
	return out, nil
}

// withContextArg adds the cluster argument to a call's arguments.
func withContextArg(args json.RawMessage, cluster string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	m[contextArg] = cluster
	out, _ := json.Marshal(m)
	return out
}

// revertProvider serves kubecode.revert's description; the session runs
// it itself (Session.revert).
type revertProvider struct{}

func (revertProvider) Discover(context.Context) ([]*catalog.Operation, string, error) {
	return []*catalog.Operation{{
		Name:        RevertOp,
		Provider:    "kubecode",
		Verb:        "revert",
		Description: "Undo an applied execution as a new plan: fields it set go back to what they were, objects it created are deleted, objects it deleted are re-created; objects changed since are reported, not overwritten.",
		Keywords:    []string{"undo", "revert", "rollback", "restore", "back out", "previous state", "execution"},
		Input: &catalog.Schema{Type: "object", Required: []string{"execution"}, Properties: map[string]*catalog.Schema{
			"execution": {Type: "string", Description: "the execution id of the applied answer to undo (its trace)"}}},
		Output: &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
			"execution": {Type: "string"},
			"restored":  {Type: "array", Items: &catalog.Schema{Type: "string"}, Description: "objects brought back (planned, in plan mode)"},
			"conflicts": {Type: "array", Items: &catalog.Schema{Type: "string"}, Description: "objects left alone, and why"}}},
		OutputName: "RevertResult",
	}}, "1", nil
}

func (revertProvider) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("kubecode.revert runs in the bridge's session")
}
