package bridge

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/internal/editdistance"
)

// The operation registry: every provider's operations by name and alias,
// refreshed in the background so a CRD installed at run time appears
// without slowing any request.

type entry struct {
	op *catalog.Operation // as scripts see it (with several clusters: a context argument)
	on map[string]Provider
	// shared marks an operation of a provider of no cluster
	// (Options.Shared): on[""] serves it.
	shared bool
}

// refreshTimeout bounds one background refresh.
const refreshTimeout = 30 * time.Second

// Operations returns every operation and a version that changes when they
// do. The first call asks the providers; later calls return the current
// registry at once and, when it is older than RefreshInterval, refresh it in
// the background (so a CRD installed at run time appears within about one
// interval). Background refreshes stop with Close.
func (b *Bridge) Operations(ctx context.Context) ([]*catalog.Operation, string, error) {
	b.mu.RLock()
	stale := b.opts.Now().Sub(b.refreshed) >= b.opts.RefreshInterval
	list, version := b.list, b.version
	b.mu.RUnlock()
	if list == nil {
		return b.Refresh(ctx)
	}
	if stale && b.refreshing.CompareAndSwap(false, true) {
		b.background(func(ctx context.Context) {
			defer b.refreshing.Store(false)
			ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
			defer cancel()
			_, _, _ = b.Refresh(ctx) // on failure the current registry stays
		})
	}
	return list, version, nil
}

// background runs f on a goroutine the bridge owns: f's context ends with
// Close, and Close waits for f. After Close, f does not run.
func (b *Bridge) background(f func(ctx context.Context)) {
	b.lifeMu.Lock()
	defer b.lifeMu.Unlock()
	if b.life.Err() != nil {
		b.refreshing.Store(false)
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f(b.life)
	}()
}

// Close stops background refreshes and waits for one under way to end.
// The bridge still serves calls afterwards, from the registry it has.
func (b *Bridge) Close() error {
	b.lifeMu.Lock()
	b.stop()
	b.lifeMu.Unlock()
	b.wg.Wait()
	return nil
}

// Refresh asks every provider for its operations now.
func (b *Bridge) Refresh(ctx context.Context) ([]*catalog.Operation, string, error) {
	ops := map[string]*entry{}
	aliases := map[string]string{}
	var versions []string
	for _, c := range b.clusters {
		for _, p := range c.providers {
			pops, v, err := p.Discover(ctx)
			if err != nil {
				if b.multi() {
					err = fmt.Errorf("cluster %s: %w", c.name, err)
				}
				return nil, "", err
			}
			versions = append(versions, c.name+v)
			for _, op := range pops {
				e := ops[op.Name]
				if e == nil {
					e = &entry{op: op, on: map[string]Provider{}}
					ops[op.Name] = e
				}
				if _, dup := e.on[c.name]; dup {
					return nil, "", fmt.Errorf("bridge: two providers define operation %q", op.Name)
				}
				e.on[c.name] = p
			}
		}
	}
	if b.shared != nil {
		for _, p := range b.shared.providers {
			pops, v, err := p.Discover(ctx)
			if err != nil {
				return nil, "", err
			}
			versions = append(versions, "shared"+v)
			for _, op := range pops {
				if ops[op.Name] != nil {
					return nil, "", fmt.Errorf("bridge: two providers define operation %q", op.Name)
				}
				ops[op.Name] = &entry{op: op, on: map[string]Provider{"": p}, shared: true}
			}
		}
	}
	var list []*catalog.Operation
	for _, e := range ops {
		if b.multi() && !e.shared {
			e.op = b.decorate(e.op, b.clusterNames(e))
		}
		list = append(list, e.op)
	}
	for _, e := range ops {
		for _, a := range e.op.Aliases {
			if _, real := ops[a]; !real {
				aliases[a] = e.op.Name
			}
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	version := strings.Join(versions, "+")
	var secretArgs []string
	for _, op := range list {
		for _, k := range op.Annotations.SecretArgs {
			if !slices.Contains(secretArgs, k) {
				secretArgs = append(secretArgs, k)
			}
		}
	}
	b.mu.Lock()
	b.ops, b.aliases, b.list, b.version, b.refreshed = ops, aliases, list, version, b.opts.Now()
	b.allSecretArgs = secretArgs
	b.mu.Unlock()
	return list, version, nil
}

// secretArgs are every operation's keys of secret data (their
// Annotations.SecretArgs): what a call's arguments hide before its
// operation is known (an unknown name, say), so that hiding never depends
// on the agent spelling the operation right.
func (b *Bridge) secretArgs() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.allSecretArgs
}

func (b *Bridge) lookup(name string) *entry {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if e, ok := b.ops[name]; ok {
		return e
	}
	if c, ok := b.aliases[name]; ok {
		return b.ops[c]
	}
	return nil
}

// refreshOnMiss refreshes the registry for a call to an unknown operation, at
// most once a second however many calls miss at once.
func (b *Bridge) refreshOnMiss(ctx context.Context) bool {
	b.missMu.Lock()
	defer b.missMu.Unlock()
	b.mu.RLock()
	recent := b.opts.Now().Sub(b.refreshed) < time.Second
	b.mu.RUnlock()
	if recent {
		return true
	}
	// The registry is everyone's: discover with the server's identity, not
	// the caller's whose call missed.
	_, _, err := b.Refresh(catalog.WithCaller(ctx, nil))
	return err == nil
}

// suggest lists up to five operation names close to name.
func (b *Bridge) suggest(name string) []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []string
	want := strings.ToLower(name)
	for n := range b.ops {
		if d := editdistance.Levenshtein(want, strings.ToLower(n)); d <= max(3, len(want)/4) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// UnservedLister is a Provider that says what people ask of it that it
// does not serve as an operation (catalog.Unserved).
type UnservedLister interface {
	Unserved() []catalog.Unserved
}

// Unserved returns what the providers say they do not serve, each once:
// with several clusters, a context's provider says it for all.
func (b *Bridge) Unserved() []catalog.Unserved {
	var out []catalog.Unserved
	seen := map[string]bool{}
	for _, c := range b.allClustersAndShared() {
		for _, p := range c.providers {
			l, ok := p.(UnservedLister)
			if !ok {
				continue
			}
			for _, u := range l.Unserved() {
				if !seen[u.Name] {
					seen[u.Name] = true
					out = append(out, u)
				}
			}
		}
	}
	return out
}

// Signaler is a Provider that declares the signals its changes may raise
// (catalog.Change.Signals) and what each means: the autopsy flags them by
// name and knows none itself.
type Signaler interface {
	Signals() []catalog.SignalKind
}

// Signals returns every provider's declared signals, each once, by name.
func (b *Bridge) Signals() []catalog.SignalKind {
	var out []catalog.SignalKind
	seen := map[string]bool{}
	for _, c := range b.allClustersAndShared() {
		for _, p := range c.providers {
			s, ok := p.(Signaler)
			if !ok {
				continue
			}
			for _, k := range s.Signals() {
				if !seen[k.Name] {
					seen[k.Name] = true
					out = append(out, k)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
