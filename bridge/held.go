package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
)

// Held is what became of one change the plan foresaw something would act
// on, read again a while after the execution.
type Held struct {
	// Object is the object changed.
	Object string `json:"object"`
	// Held says it is still as the execution left it.
	Held bool `json:"held"`
	// Checked is false when it could not be read again: Why says why.
	Checked bool `json:"checked"`
	// Moved are the fields that changed since, "path: as left → now".
	Moved []string `json:"moved,omitempty"`
	// Why says what the plan foresaw, or why it could not be checked.
	Why string `json:"why,omitempty"`
	// After is how long after the execution it was read again.
	After time.Duration `json:"-"`
}

// Line says h in one line for the answer.
func (h Held) Line() string {
	after := fmt.Sprintf("%.0f s", h.After.Seconds())
	switch {
	case !h.Checked:
		return "could not check whether " + h.Object + " held: " + h.Why
	case h.Held:
		return "held " + after + " later: " + h.Object + " is as this execution left it (foreseen: " + h.Why + ")"
	}
	return "did not hold: " + after + " later " + h.Object + " has " + strings.Join(h.Moved, ", ") + " — as the plan foresaw: " + h.Why
}

// maxMoved bounds the fields a Held names.
const maxMoved = 5

// Held reads again, wait after KeepReverts, each object the session
// changed that the plan foresaw something would undo (an autoscaler, a
// GitOps controller, an owner), and says whether the change held. It
// waits only when there is such an object; nil otherwise.
func (s *Session) Held(ctx context.Context, wait time.Duration) []Held {
	s.changeMu.Lock()
	var watch []*touched
	for _, t := range s.touched {
		// Only what the plan said would undo the change is waited for: a
		// Helm release's next upgrade, or an inactive autoscaler, acts
		// on no clock a few seconds show.
		if slices.ContainsFunc(t.actors, func(a catalog.Actor) bool { return a.Undoes }) {
			watch = append(watch, t)
		}
	}
	s.changeMu.Unlock()
	if len(watch) == 0 || wait < 0 {
		return nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	if caller := s.callerOf(); caller != nil {
		ctx = catalog.WithCaller(ctx, caller)
	}
	var out []Held
	for _, t := range watch {
		s.changeMu.Lock()
		after := t.after
		s.changeMu.Unlock()
		h := Held{Object: t.change.Object(), After: wait, Why: whyHeld(t.actors)}
		if after == nil {
			h.Why = "it was not read after the execution"
			out = append(out, h)
			continue
		}
		if ctx.Err() != nil {
			h.Why = "the call ended before the check: " + ctx.Err().Error()
			out = append(out, h)
			continue
		}
		now, err := t.reverter.Snapshot(context.WithoutCancel(ctx), t.op, &t.change, nil)
		if err != nil {
			h.Why = s.b.hide(err.Error())
			out = append(out, h)
			continue
		}
		h.Checked = true
		h.Moved = moved(after, now)
		h.Held = len(h.Moved) == 0
		for i := range h.Moved {
			h.Moved[i] = s.b.hide(h.Moved[i])
		}
		out = append(out, h)
	}
	return out
}

// whyHeld names what the plan foresaw, undoers first: "HorizontalPodAutoscaler live/storefront".
func whyHeld(actors []catalog.Actor) string {
	var who []string
	for _, undoes := range []bool{true, false} {
		for _, a := range actors {
			if a.Undoes == undoes && !a.Prevents && !slices.Contains(who, a.Who) {
				who = append(who, a.Who)
			}
		}
	}
	return strings.Join(who, ", ")
}

// moved lists the fields of an object that changed between two
// snapshots, "spec.replicas: 5 → 3", at most maxMoved (and how many
// more).
func moved(was, now *catalog.Snapshot) []string {
	switch {
	case was.Exists && !now.Exists:
		return []string{"been deleted"}
	case !was.Exists && now.Exists:
		return []string{"been made again"}
	case !was.Exists:
		return nil
	case was.UID != now.UID:
		return []string{"been replaced by a new object of the same name"}
	case bytes.Equal(was.Content, now.Content):
		return nil
	}
	a, b := map[string]string{}, map[string]string{}
	var x, y any
	if json.Unmarshal(was.Content, &x) != nil || json.Unmarshal(now.Content, &y) != nil {
		return []string{"changed content"}
	}
	leaves("", x, a)
	leaves("", y, b)
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, k+": "+v+" → (none)")
		} else if w != v {
			out = append(out, k+": "+v+" → "+w)
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+": (none) → "+w)
		}
	}
	slices.Sort(out)
	if len(out) > maxMoved {
		out = append(out[:maxMoved], fmt.Sprintf("%d more fields", len(out)-maxMoved))
	}
	return out
}

// leaves flattens v into dotted paths and compact JSON values; a list is
// one value.
func leaves(prefix string, v any, out map[string]string) {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		for k, x := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			leaves(p, x, out)
		}
		return
	}
	raw, _ := json.Marshal(v)
	if len(raw) > 120 {
		raw = append(raw[:117:117], "..."...)
	}
	out[prefix] = string(raw)
}
