package bridge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
)

// Previewer is a provider whose operations change things: Preview runs one
// as a dry run (nothing persists) and describes the change, with the
// result the call would have. When the dry run fails, Preview may still
// describe the change it attempted: the policy judges it first.
type Previewer interface {
	Preview(ctx context.Context, name string, args json.RawMessage) (*catalog.Change, json.RawMessage, error)
}

// CodeRefused is the JSON-RPC error code of a change the policy refused.
const CodeRefused = -32001

// ReasonRefused and ReasonDiverged are ErrorData.Reason of refused changes.
const (
	ReasonRefused  = "Refused"
	ReasonDiverged = "Diverged"
)

// change runs one call that changes something, through the policy: it is
// refused, planned (a dry run), applied because an approved plan holds it,
// or applied in apply mode. Changes of one session run one at a time, so
// that the order of a plan is the order of the script's calls.
func (s *Session) change(ctx context.Context, e *entry, c *callInfo) (json.RawMessage, *RPCError) {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	p := c.cluster.policy
	refuse := func(rule, reason, msg string) *RPCError {
		c.decision, c.rule = "refused", rule
		if reason == ReasonDiverged {
			c.decision = "diverged"
		} else if s.refused == "" {
			s.refused = c.name + c.changeObject() + ": " + msg
		}
		return &RPCError{Code: CodeRefused, Message: "refused: " + msg, Data: &ErrorData{Tool: c.name, Reason: reason}}
	}
	if p.Mode != policy.ModePlan && p.Mode != policy.ModeApply { // read-only, or a mode nobody checked
		if p.Mode != policy.ModeReadOnly {
			return nil, refuse(policy.RuleReadOnly, ReasonRefused, fmt.Sprintf("the changes mode %q is unknown, so every change is refused; set read-only, plan or apply", p.Mode))
		}
		return nil, refuse(policy.RuleReadOnly, ReasonRefused, fmt.Sprintf("%s changes the cluster and this server is read-only (changes: read-only); say what you would change instead", c.name))
	}
	s.changes++
	if p.MaxChanges > 0 && s.changes > p.MaxChanges {
		return nil, refuse(policy.RuleMaxChanges, ReasonRefused, fmt.Sprintf("an execution may make at most %d changes (maxChanges); split the work into smaller scripts", p.MaxChanges))
	}
	if s.diverged != "" {
		return nil, refuse("plan", ReasonDiverged, "this execution already left its approved plan ("+s.diverged+"); no further change is made")
	}
	pv, ok := c.provider.(Previewer)
	if !ok {
		return nil, refuse("preview", ReasonRefused, c.name+" cannot be dry-run, so it cannot be checked or planned")
	}
	pctx := ctx
	if p.Mode == policy.ModePlan && s.approved == nil {
		pctx = catalog.WithPlanState(ctx, &s.state) // each preview builds on the ones before
	}
	change, preview, err := pv.Preview(pctx, c.name, c.args)
	if change != nil { // a refusal says more than the dry run's failure
		change.Revert = revertOf(ctx) != ""
		change.RevertOf = revertOf(ctx)
		c.change = change
		r, passed := p.Judge(change)
		c.passed = passed
		if r != nil {
			return nil, refuse(r.Rule, ReasonRefused, r.Message)
		}
	}
	if err != nil || change == nil {
		c.decision = "failed"
		if err == nil {
			err = fmt.Errorf("%s: the dry run described no change", c.name)
		}
		rpcErr := scrub(s.failed(ctx, c, err), c.args, c.secretArgs)
		if p.Mode == policy.ModePlan && s.approved == nil && revertOf(ctx) == "" && s.refused == "" {
			// A plan without this change is not what the script does: no
			// plan comes of it, caught or not (a revert reports its
			// objects one by one instead).
			s.refused = c.name + c.changeObject() + ": its dry run failed: " + rpcErr.Message
		}
		return nil, rpcErr
	}
	fingerprint, object := change.Fingerprint, change.Object()
	if s.b.multi() && c.cluster.name != "" { // the same call on another cluster is another change
		fingerprint += "\x00" + c.cluster.name
		object = c.cluster.name + ": " + object
	}
	hash := callHash(c.name, c.args, fingerprint)
	switch {
	case change.Unchanged && len(change.Objects) == 0 && s.approved == nil && p.Mode == policy.ModePlan:
		// Nothing to decide: the dry run shows the object stays as it is.
		c.decision, c.dryRun = DecisionUnchanged, true
		return preview, nil
	case s.approved != nil:
		c.plan, c.approvedBy = s.approved.ID, s.approvedBy
		if s.used == nil {
			s.used = make([]bool, len(s.approved.Changes))
		}
		// Parallel calls reach here in any order: a change matches any
		// planned change not yet made with the same operation, object and
		// hash.
		match, near := -1, -1
		for i, want := range s.approved.Changes {
			if s.used[i] || want.Op != c.name || want.Object != object {
				continue
			}
			if want.Hash == hash {
				match = i
				break
			}
			near = i
		}
		if match < 0 && change.Unchanged && len(change.Objects) == 0 {
			// A call the plan left out because it changed nothing, and
			// still changes nothing: no divergence, nothing made.
			c.decision, c.dryRun = DecisionUnchanged, true
			return preview, nil
		}
		if match < 0 {
			switch {
			case s.applied >= len(s.approved.Changes):
				s.diverged = fmt.Sprintf("the plan holds %d changes and this is one more: %s %s", len(s.approved.Changes), c.name, object)
			case near >= 0:
				s.diverged = fmt.Sprintf("change %d was planned as %s %s, the re-run made it with other arguments or content", near+1, c.name, object)
			default:
				s.diverged = fmt.Sprintf("the re-run made %s %s, which the plan does not hold", c.name, object)
			}
			return nil, refuse("plan", ReasonDiverged, "diverged from the approved plan: "+s.diverged+"; run without approve for a new plan")
		}
		// The plan is used up as its first change is made, not before: a
		// run that never got that far can be approved again.
		if !s.consumed {
			if err := s.b.Use(ctx, s.approved); err != nil {
				s.diverged = err.Error()
				return nil, refuse("plan", ReasonRefused, err.Error())
			}
			s.consumed = true
		}
		s.used[match] = true
	case p.Mode == policy.ModePlan:
		c.decision, c.dryRun = "planned", true
		call := elideForReview(c.args)
		if c.sensitive || change.Sensitive || slices.ContainsFunc(change.Objects, func(o catalog.Change) bool { return o.Sensitive }) {
			call = elideAll(c.args, c.targetArgs)
		}
		diff := reviewLines(change)
		for i, l := range diff {
			diff[i] = s.b.hide(l)
		}
		pc := PlanChange{Op: c.name, Object: object, Hash: hash, Diff: diff, TwoPerson: twoPerson(p.TwoPersonClasses(), change), Call: call, Review: reviewOf(change)}
		if p.PeoplePlanPermissionWrites() && (change.Privileged || slices.ContainsFunc(change.Objects, func(o catalog.Change) bool { return o.Privileged })) {
			pc.NoSelf = object + " widens access"
		}
		if s.standard != nil && s.outOfBounds == "" {
			s.outOfBounds = s.standard.outside(change, &pc)
		}
		s.planned = append(s.planned, pc)
		return preview, nil
	}
	s.snapshotBefore(ctx, c)
	out, err := c.provider.Call(ctx, c.name, c.args)
	if err != nil {
		c.decision = "failed"
		return nil, scrub(s.failed(ctx, c, err), c.args, c.secretArgs)
	}
	s.createdAfter(ctx, c, out)
	c.decision = "applied"
	if s.approved != nil {
		s.applied++
	}
	return out, nil
}

// scrub hides in an error message the call's own secret-looking
// arguments, those the ledger elides (elide), and their base64 decodings,
// in every form the secret boundary knows (secrets.Hide): an API error
// about a secret must not echo it into the ledger or the log.
func scrub(e *RPCError, args json.RawMessage, secretArgs []string) *RPCError {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return e
	}
	var vals []secrets.Value
	elideValue(v, func(t string) {
		vals = append(vals, secrets.Value{Value: t, What: "a secret argument of the call"})
		if d, err := base64.StdEncoding.DecodeString(t); err == nil {
			vals = append(vals, secrets.Value{Value: string(d), What: "a secret argument of the call"})
		}
	}, secretArgs)
	e.Message, _ = secrets.Hide(e.Message, vals)
	return e
}

// secretPath says whether a JSON patch path points into secret values.
func secretPath(p string, secret func(string) bool) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg != "" && secret(seg) {
			return true
		}
	}
	return false
}

// reviewLines are the lines of a planned change a reviewer reads: what it
// does to running workloads, what it restores, how it was validated and
// what to be careful about, then the diff.
func reviewLines(c *catalog.Change) []string {
	// What will undo the change comes before all else: a person approves
	// what stays. What only acts on it afterwards comes after the rest.
	undone, after := actorLines(c)
	out := undone
	if c.RevertOf != "" {
		out = append(out, "revert: brings "+c.Object()+" back to what it was before execution "+c.RevertOf)
	}
	if c.Impact != "" {
		out = append(out, "impact: "+c.Impact)
	}
	if c.Restores != "" {
		out = append(out, "restores: "+c.Restores)
	}
	if c.Validated != "" {
		out = append(out, "checked: "+c.Validated)
	}
	for _, sg := range c.Signals {
		out = append(out, "caution ("+sg.Name+"): "+sg.Detail)
	}
	// A manifest's or a release's objects: how each was checked, once per
	// way (32 objects validated alike are one line, not 32).
	var ways []string
	checked := map[string][]string{}
	for _, o := range c.Objects {
		if o.Validated == "" {
			continue
		}
		if checked[o.Validated] == nil {
			ways = append(ways, o.Validated)
		}
		checked[o.Validated] = append(checked[o.Validated], o.Object())
	}
	for _, w := range ways {
		objs := checked[w]
		if len(objs) == 1 {
			out = append(out, "checked: "+objs[0]+": "+w)
			continue
		}
		out = append(out, fmt.Sprintf("checked: %d objects (%s): %s", len(objs), strings.Join(objs, ", "), w))
	}
	for _, o := range c.Objects {
		for _, sg := range o.Signals {
			out = append(out, "caution ("+sg.Name+"): "+sg.Detail)
		}
	}
	out = append(out, after...)
	return append(out, c.Diff...)
}

// actorLines are the lines (Actor.Line) of what acts on change c's
// objects once it is made: those that undo it or prevent part of it, and
// the others. An object of a call that changes many is named first.
func actorLines(c *catalog.Change) (undone, after []string) {
	add := func(prefix string, as []catalog.Actor) {
		for _, a := range as {
			if a.Undoes || a.Prevents {
				undone = append(undone, prefix+a.Line())
			} else {
				after = append(after, prefix+a.Line())
			}
		}
	}
	add("", c.After)
	for _, o := range c.Objects {
		add(o.Object()+": ", o.After)
	}
	return undone, after
}
