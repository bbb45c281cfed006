package bridge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
)

// Provider is an adapter: it describes its operations and executes them.
type Provider interface {
	// Discover returns the provider's operations and a version string that
	// changes whenever the set of operations does.
	Discover(ctx context.Context) ([]*catalog.Operation, string, error)
	// Call executes one operation with JSON arguments already validated
	// against its Input schema.
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// A PartsProvider is a Provider that may answer a read as it makes the
// answer, in parts: a list of every pod page by page, never whole in the
// server's memory. The bridge shapes each part and hides secrets in it as
// it does a whole answer.
type PartsProvider interface {
	Provider
	// CallParts is Call for an operation whose answer is a JSON array: it
	// sends the array's items in parts, each a JSON array, to part, in
	// order, and returns true. It returns false, having sent nothing, when
	// it answers the operation only whole. An error from part ends the
	// call with that error.
	CallParts(ctx context.Context, name string, args json.RawMessage, part func(json.RawMessage) error) (bool, error)
}

// Options configures a Bridge. A nil *Options means defaults.
type Options struct {
	// RefreshInterval is how old the operation registry may get before
	// Operations asks the providers again. Zero means 2s.
	RefreshInterval time.Duration
	// Ledger receives every call as one JSON line. Nil means calls are
	// kept only in each Session.
	Ledger io.Writer
	// KeepNoise keeps in results what the providers call noise
	// (catalog.ResultRules.Noise; for Kubernetes, metadata.managedFields
	// and kubectl's last-applied-configuration annotation). Zero drops it.
	// Secret values are hidden either way.
	KeepNoise bool
	// Now is the clock for ledger entries. Nil means time.Now.
	Now func() time.Time
	// Policy is the rules every change passes. The zero Policy is the
	// safe default (see package policy).
	Policy policy.Policy
	// Scope names what the bridge's plans change (a cluster: its API
	// server): a plan made under one scope is refused under another, even
	// by replicas sharing PlanKey. Zero means plans carry no scope.
	Scope string
	// Observe, when set, is called with every call's ledger entry as the
	// call ends, with the call's context (metrics and traces take it
	// from there). It must not keep e.
	Observe func(ctx context.Context, e *Entry)
	// Clusters, when there are more than one, are the clusters the bridge
	// serves, the first the default: every operation takes a context
	// argument naming one (an operation some clusters lack says which
	// have it), each cluster's calls go to its providers and its changes
	// pass its policy, and plans name all. New's providers are then
	// ignored. Zero means one cluster: New's providers, Policy and Scope.
	Clusters []Cluster
	// PlanKey signs plans. Nil means a random key: plans are then
	// approvable only by this process; replicas behind one endpoint need a
	// shared key.
	PlanKey []byte
	// PlanUses records which plans were applied, so that each applies
	// once. Nil means a record in this process's memory; processes sharing
	// PlanKey need a shared one (kubernetes.PlanUses).
	PlanUses PlanUses
	// Shared are providers that belong to no cluster (upstream MCP
	// servers): with several clusters their operations take no context
	// argument and their changes pass Policy, the base policy, whichever
	// cluster a script names elsewhere. With one cluster they join it.
	Shared []Provider
	// Secrets is the registry of values that no result, error or plan line
	// may carry: every one passes it before it leaves the bridge (see
	// package secrets). Whoever learns a secret value registers it there:
	// the Kubernetes adapter's watch of Secrets, the credentials of
	// clusters and upstreams. Nil means an empty registry of the bridge's
	// own, which still hides what looks like a JSON Web Token.
	Secrets *secrets.Registry
	// Approvals keeps plans waiting for people and their decisions. Nil
	// means a store in this process's memory; replicas need a shared one
	// (kubernetes.Approvals).
	Approvals ApprovalStore
}

// Bridge dispatches operation calls to providers. Close it to stop its
// background refreshes.
type Bridge struct {
	clusters  []*cluster
	shared    *cluster // Options.Shared, with several clusters; nil otherwise
	opts      Options
	policy    policy.Policy // the default cluster's
	scope     string        // what plans are for
	planKey   []byte
	uses      PlanUses
	approvals ApprovalStore
	secrets   *secrets.Registry

	mu      sync.RWMutex
	ops     map[string]*entry // canonical name → entry
	aliases map[string]string
	list    []*catalog.Operation
	// allSecretArgs is the union of the operations' SecretArgs.
	allSecretArgs []string
	// shaper applies every provider's result rules to every result.
	shaper    *shaper
	version   string
	refreshed time.Time

	ledgerMu   sync.Mutex
	refreshing atomic.Bool
	missMu     sync.Mutex

	lifeMu sync.Mutex
	life   context.Context // ends with Close
	stop   context.CancelFunc
	wg     sync.WaitGroup // background refreshes
}

// New returns a Bridge over providers.
func New(providers []Provider, opts *Options) *Bridge {
	b := &Bridge{}
	b.life, b.stop = context.WithCancel(context.Background())
	if opts != nil {
		b.opts = *opts
	}
	b.scope = b.opts.Scope
	if len(b.opts.Clusters) > 1 {
		for _, c := range b.opts.Clusters {
			p := b.opts.Policy
			if c.Policy != nil {
				p = *c.Policy
			}
			b.clusters = append(b.clusters, &cluster{name: c.Name, providers: c.Providers, policy: p.WithDefaults()})
		}
		b.scope = scopeOf(b.opts.Clusters)
	} else if len(b.opts.Clusters) == 1 {
		c := b.opts.Clusters[0]
		p := b.opts.Policy
		if c.Policy != nil {
			p = *c.Policy
		}
		b.opts.Policy, b.scope = p, c.Scope
		b.clusters = []*cluster{{name: c.Name, providers: c.Providers}}
	} else {
		b.clusters = []*cluster{{providers: providers}}
	}
	if b.opts.RefreshInterval == 0 {
		b.opts.RefreshInterval = 2 * time.Second
	}
	if b.opts.Now == nil {
		b.opts.Now = time.Now
	}
	if len(b.opts.Shared) > 0 {
		if b.multi() {
			b.shared = &cluster{providers: b.opts.Shared, policy: b.opts.Policy.WithDefaults()}
		} else {
			b.clusters[0].providers = append(append([]Provider(nil), b.clusters[0].providers...), b.opts.Shared...)
		}
	}
	var all []Provider
	if b.shared != nil {
		all = append(all, b.shared.providers...)
	}
	for _, c := range b.clusters { // every cluster serves kubecode.revert
		c.providers = append(append([]Provider(nil), c.providers...), revertProvider{})
		all = append(all, c.providers...)
	}
	b.shaper = newShaper(all)
	b.policy = b.opts.Policy.WithDefaults()
	if !b.multi() {
		b.clusters[0].policy = b.policy
	}
	b.uses = b.opts.PlanUses
	if b.uses == nil {
		b.uses = &memoryUses{now: b.opts.Now, used: map[string]time.Time{}}
	}
	b.approvals = b.opts.Approvals
	if b.approvals == nil {
		b.approvals = NewMemoryApprovals(b.opts.Now)
	}
	b.secrets = b.opts.Secrets
	if b.secrets == nil {
		b.secrets = secrets.New(nil)
	}
	b.planKey = b.opts.PlanKey
	if len(b.planKey) == 0 {
		b.planKey = make([]byte, 32)
		_, _ = rand.Read(b.planKey)
	}
	return b
}

// allClustersAndShared are the clusters, and the shared providers' own
// when there are several clusters.
func (b *Bridge) allClustersAndShared() []*cluster {
	if b.shared == nil {
		return b.clusters
	}
	return append(slices.Clone(b.clusters), b.shared)
}

// Policy returns the rules the bridge applies to changes, defaults filled.
func (b *Bridge) Policy() policy.Policy { return b.policy }

// Secrets returns the registry every result passes (Options.Secrets).
func (b *Bridge) Secrets() *secrets.Registry { return b.secrets }
