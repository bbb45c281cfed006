package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configures an Adapter. A nil *Options means defaults.
type Options struct {
	// Namespace is used by namespaced operations called without one, as
	// kubectl uses the context's namespace. Zero means "default".
	Namespace string
	// PageSize is the server-side page size lists use while fetching every
	// page. Zero means 500.
	PageSize int64
	// KeepManagedFields keeps metadata.managedFields and kubectl's
	// last-applied annotation in what lists return. Zero means they are
	// dropped (the bridge drops them from every other result).
	KeepManagedFields bool
	// Secrets is the registry of secret values every result passes at the
	// bridge (bridge.Options.Secrets): the adapter registers there the
	// credentials it holds and, unless SecretWatch holds them all, the
	// Secrets of a pod before its logs or a command's output. Nil means a
	// registry of the adapter's own, which guards its command output only.
	Secrets *secrets.Registry
	// SecretWatch is the watch that keeps Secrets current with every
	// Secret of the cluster (WatchSecrets). Nil means none: a pod's
	// Secrets are read with the server's identity before each such read.
	SecretWatch *SecretWatch
}

// Adapter executes Kubernetes operations against one cluster. It is safe for
// concurrent use.
type Adapter struct {
	ns          string
	pageSize    int64
	keepManaged bool
	dyn         dynamic.Interface
	typed       *typedLists // lists of built-in resources in protobuf
	disc        *discovery.DiscoveryClient
	core        kubernetes.Interface
	// cfg is the configuration the clients are built from (acting for
	// callers); base is it before any wrapping (pods.exec builds a
	// caller's own from it).
	cfg, base *rest.Config
	// secrets is the boundary's registry; watch keeps it current.
	secrets *secrets.Registry
	watch   *SecretWatch

	mu        sync.RWMutex
	resources map[string]*resource // keyed by operation segment, e.g. "pods"
	aliases   map[string]string    // alias operation name → canonical name
	ops       []*catalog.Operation
	version   string                // fingerprint of the discovered resources
	docs      map[string]*cachedDoc // OpenAPI v3 per group-version path
}

type cachedDoc struct {
	url string
	doc *openapiDoc
}

// New returns an Adapter using cfg's credentials. It does not contact the
// cluster; Discover does.
func New(cfg *rest.Config, opts *Options) (*Adapter, error) {
	a := &Adapter{ns: "default", pageSize: 500, docs: map[string]*cachedDoc{}}
	if opts != nil {
		if opts.Namespace != "" {
			a.ns = opts.Namespace
		}
		if opts.PageSize > 0 {
			a.pageSize = opts.PageSize
		}
		a.keepManaged = opts.KeepManagedFields
		a.secrets, a.watch = opts.Secrets, opts.SecretWatch
	}
	if a.secrets == nil {
		a.secrets = secrets.New(nil)
	}
	RegisterCredentials(cfg, a.secrets)
	cfg = rest.CopyConfig(cfg)
	a.base = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 100, 200 // scripts fan out; client-go's 5 QPS default would serialize them
	}
	if err := kubeapi.ActForCallers(cfg); err != nil {
		return nil, err
	}
	reg := a.secrets
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return auditID{credentials{rt, reg}} })
	var err error
	if a.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes: dynamic client: %w", err)
	}
	if a.disc, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes: discovery client: %w", err)
	}
	a.cfg = cfg
	if a.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes: client: %w", err)
	}
	if a.typed, err = newTypedLists(cfg); err != nil {
		return nil, err
	}
	return a, nil
}

// Call runs the operation name (canonical or alias) with JSON args.
// CallParts answers a list in parts, page by page as the API server
// sends them (bridge.PartsProvider); every other operation only whole.
func (a *Adapter) CallParts(ctx context.Context, name string, args json.RawMessage, part func(json.RawMessage) error) (bool, error) {
	a.mu.RLock()
	if c, ok := a.aliases[name]; ok {
		name = c
	}
	a.mu.RUnlock()
	rest, ok := strings.CutPrefix(name, "kubernetes.")
	seg, verb, _ := strings.Cut(rest, ".")
	if !ok || verb != "list" {
		return false, nil
	}
	a.mu.RLock()
	r := a.resources[seg]
	a.mu.RUnlock()
	if r == nil || !r.hasOp(verb) {
		return false, nil // Call says why
	}
	_, err := a.list(ctx, r, args, part)
	return true, err
}

func (a *Adapter) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	a.mu.RLock()
	if c, ok := a.aliases[name]; ok {
		name = c
	}
	a.mu.RUnlock()
	rest, ok := strings.CutPrefix(name, "kubernetes.")
	if !ok {
		return nil, fmt.Errorf("%w: %s", errUnknownOperation, name)
	}
	if rest == "api_resources" {
		return a.apiResources(ctx, args)
	}
	if strings.HasPrefix(rest, "auth.") {
		return a.access(ctx, rest, args)
	}
	if name == ApplyOp {
		return a.applyManifest(ctx, args)
	}
	seg, verb, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, fmt.Errorf("%w: %s", errUnknownOperation, name)
	}
	a.mu.RLock()
	r := a.resources[seg]
	a.mu.RUnlock()
	if r == nil || !r.hasOp(verb) {
		return nil, fmt.Errorf("%w: %s", errUnknownOperation, name)
	}
	switch verb {
	case "list":
		return a.list(ctx, r, args, nil)
	case "page":
		return a.page(ctx, r, args)
	case "get":
		return a.get(ctx, r, args)
	case "logs":
		if r.kind == "Node" {
			return a.nodeLogs(ctx, args)
		}
		return a.logs(ctx, r, args)
	case "stats":
		return a.nodeStats(ctx, args)
	case "top":
		if r.kind == "Node" {
			return a.topNodes(ctx, args)
		}
		return a.topPods(ctx, args)
	case "exec":
		return a.exec(ctx, args)
	case "evict":
		return a.evict(ctx, args)
	case "drain":
		return a.drain(ctx, args)
	case "rollout.status":
		return a.rolloutStatus(ctx, r, args)
	case "rollout.history":
		return a.rolloutHistory(ctx, r, args)
	}
	if verb == "create" && isReview(r) {
		return a.review(ctx, r, args)
	}
	if writeVerbs[verb] {
		return a.mutate(ctx, r, verb, args)
	}
	return nil, fmt.Errorf("%w: %s", errUnknownOperation, name)
}

var errUnknownOperation = errors.New("unknown operation")

// auditID sends the identity of the operation call a request serves as its
// Audit-ID header: the API server's audit log then names the call as the
// bridge's ledger does.
type auditID struct{ next http.RoundTripper }

func (t auditID) RoundTrip(req *http.Request) (*http.Response, error) {
	if id := catalog.CallID(req.Context()); id != "" && req.Header.Get("Audit-ID") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Audit-ID", id)
	}
	return t.next.RoundTrip(req)
}

func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	if err := json.Unmarshal(args, v); err != nil {
		return &catalog.CallError{Status: 400, Reason: "BadRequest", Message: "invalid arguments: " + err.Error()}
	}
	return nil
}
