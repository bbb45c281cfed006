package catalog

import (
	"context"
	"strings"
	"sync"
)

// PlanState is what a plan's earlier changes would leave, for previewing
// its later ones on top of them: the second patch of an object starts from
// the first's predicted object, and an object in a namespace the plan
// creates is validated though the namespace does not exist yet. Providers
// keep their own keys and values in it; the bridge gives each planning
// execution one (WithPlanState) and none to executions that make their
// changes, which see the real results instead. Safe for concurrent use.
type PlanState struct {
	mu sync.Mutex
	m  map[string]any
}

// Put records what key would be after a planned change.
func (p *PlanState) Put(key string, v any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]any{}
	}
	p.m[key] = v
}

// Get returns what key would be after the plan's changes so far.
func (p *PlanState) Get(key string) (any, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[key]
	return v, ok
}

// Range calls f with every key that starts with prefix and its value,
// in no order; f must not call p's methods.
func (p *PlanState) Range(prefix string, f func(key string, v any)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range p.m {
		if strings.HasPrefix(k, prefix) {
			f(k, v)
		}
	}
}

type planStateKey struct{}

// WithPlanState returns ctx carrying p: the previews made with ctx build
// on each other.
func WithPlanState(ctx context.Context, p *PlanState) context.Context {
	return context.WithValue(ctx, planStateKey{}, p)
}

// PlanStateFrom returns the plan state ctx carries, or nil: previews then
// start from the system as it is.
func PlanStateFrom(ctx context.Context) *PlanState {
	p, _ := ctx.Value(planStateKey{}).(*PlanState)
	return p
}
