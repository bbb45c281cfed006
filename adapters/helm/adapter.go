package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	k8sclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configures an Adapter. A nil *Options means defaults.
type Options struct {
	// Namespace is where operations called without one look for releases.
	// Zero means "default".
	Namespace string
	// Driver is Helm's release storage: "secrets" or "memory" (one store
	// for the adapter's life). Zero means $HELM_DRIVER, then "secrets".
	// "configmaps" is refused: release records hold secret values, which
	// scripts reading ConfigMaps would read.
	Driver string
	// ChartSources are where charts may come from: local directories
	// (charts inside them, at any depth), repository names as configured
	// in Helm's repositories file ("bitnami" allows "bitnami/nginx"), and
	// oci:// or https:// prefixes. A chart from anywhere else is refused.
	// Nil means the working directory only.
	ChartSources []string
	// Settings are Helm's environment settings (HELM_REPOSITORY_CONFIG,
	// HELM_REPOSITORY_CACHE, HELM_REGISTRY_CONFIG, ...), used to find
	// repository and OCI charts. Nil means cli.New(), read from the
	// environment.
	Settings *cli.EnvSettings
	// Timeout bounds how long installs, upgrades, rollbacks and uninstalls
	// wait for their objects when the call gives no timeoutSeconds. Zero
	// means 2 minutes.
	Timeout time.Duration
	// Secrets is the registry every result passes at the bridge
	// (bridge.Options.Secrets): each release's secret values a call reads
	// (what its Secrets hold, values under secret-looking keys, inputs
	// that flow into a Secret) are registered there, so a value a chart
	// copied into a ConfigMap is hidden from every later read. Nil means a
	// registry of the adapter's own, which it then applies to its results,
	// errors and plans itself (an adapter used without a bridge).
	Secrets *secrets.Registry
}

// Adapter executes Helm operations against one cluster. It is safe for
// concurrent use.
type Adapter struct {
	cfg      *rest.Config
	ns       string
	driver   string
	sources  []string
	settings *cli.EnvSettings
	timeout  time.Duration
	secrets  *secrets.Registry
	// ownSecrets says no bridge stands in front (Options.Secrets was nil):
	// the adapter applies its registry itself.
	ownSecrets bool
	dyn        dynamic.Interface
	disc       discovery.CachedDiscoveryInterface
	mapper     *restmapper.DeferredDiscoveryRESTMapper

	chartMu sync.Mutex // Helm's chart downloads share a cache directory

	memory *driver.Memory // the memory driver's one store, when it is used

	lastReset atomic.Int64 // when the mapper last forgot, in Unix nanoseconds

	pinMu sync.Mutex
	pins  map[string]*pinned // previewed renders by call identity
}

// managerName is the field manager Helm's writes carry. Helm's own default
// is its binary's name; the adapter names it as the helm CLI does, so
// releases look the same whoever installed them and drift knows whose
// fields are the release's.
const managerName = "helm"

// New returns an Adapter using cfg's credentials. It does not contact the
// cluster. It sets Helm's field manager name (kube.ManagedFieldsManager)
// to "helm" when nothing else set it.
func New(cfg *rest.Config, opts *Options) (*Adapter, error) {
	a := &Adapter{ns: "default", timeout: 2 * time.Minute}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Namespace != "" {
		a.ns = o.Namespace
	}
	if o.Timeout > 0 {
		a.timeout = o.Timeout
	}
	a.secrets = o.Secrets
	if a.secrets == nil {
		a.secrets, a.ownSecrets = secrets.New(nil), true
	}
	a.settings = o.Settings
	if a.settings == nil {
		a.settings = cli.New()
	}
	a.driver = o.Driver
	if a.driver == "" {
		a.driver = os.Getenv("HELM_DRIVER")
	}
	switch a.driver {
	case "":
		a.driver = "secrets"
	case "secret", "secrets":
	case "memory":
		a.memory = driver.NewMemory()
	case "configmap", "configmaps":
		// Release records hold every value and the rendered Secrets; as
		// ConfigMaps, any script reading ConfigMaps would read them.
		return nil, fmt.Errorf("helm: storage driver %q is refused: release records hold secret values, which ConfigMaps would expose to scripts; use secrets (or memory)", a.driver)
	default:
		return nil, fmt.Errorf("helm: unknown storage driver %q: use secrets or memory", a.driver)
	}
	a.sources = slices.Clone(o.ChartSources)
	if a.sources == nil {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("helm: chart sources: %w", err)
		}
		a.sources = []string{wd}
	}
	for i, s := range a.sources {
		if strings.Contains(s, "://") || !filepath.IsAbs(s) && !strings.HasPrefix(s, ".") && !strings.ContainsAny(s, `/\`) {
			continue // a URL prefix or a repository name
		}
		abs, err := filepath.Abs(s)
		if err != nil {
			return nil, fmt.Errorf("helm: chart source %q: %w", s, err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		a.sources[i] = abs
	}
	if kube.ManagedFieldsManager == "" {
		kube.ManagedFieldsManager = managerName
	}
	a.cfg = rest.CopyConfig(cfg)
	if a.cfg.QPS == 0 {
		a.cfg.QPS, a.cfg.Burst = 100, 200
	}
	if err := kubeapi.ActForCallers(a.cfg); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(a.cfg)
	if err != nil {
		return nil, fmt.Errorf("helm: discovery client: %w", err)
	}
	a.disc = memory.NewMemCacheClient(dc)
	a.mapper = restmapper.NewDeferredDiscoveryRESTMapper(a.disc)
	withID := rest.CopyConfig(a.cfg)
	withID.Wrap(func(rt http.RoundTripper) http.RoundTripper { return auditID{next: rt} })
	if a.dyn, err = dynamic.NewForConfig(withID); err != nil {
		return nil, fmt.Errorf("helm: dynamic client: %w", err)
	}
	return a, nil
}

// ResultRules are the Kubernetes rules every result honours: a release's
// objects are Kubernetes objects, and the bridge applies the rules to every
// provider's results (this adapter hides Secret values in what it returns
// itself too).
func (a *Adapter) ResultRules() catalog.ResultRules { return kubeapi.ResultRules() }

// Discover returns the Helm operations. They do not depend on the cluster.
func (a *Adapter) Discover(context.Context) ([]*catalog.Operation, string, error) {
	return operations(), "helm-v1", nil
}

// Call runs the operation name with JSON args.
func (a *Adapter) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	ctx = withSecrets(ctx)
	out, err := a.call(ctx, name, args)
	sec := secretsOf(ctx)
	sec.register(a.secrets)
	if err != nil {
		return nil, wrapError(a.scrubErr(sec.err(err)))
	}
	return a.result(out)
}

func (a *Adapter) call(ctx context.Context, name string, args json.RawMessage) (out any, err error) {
	switch name {
	case "helm.list":
		out, err = a.list(ctx, args)
	case "helm.status":
		out, err = a.status(ctx, args)
	case "helm.history":
		out, err = a.history(ctx, args)
	case "helm.get_values":
		out, err = a.getValues(ctx, args)
	case "helm.get_manifest":
		out, err = a.getManifest(ctx, args)
	case "helm.get_notes":
		out, err = a.getNotes(ctx, args)
	case "helm.template":
		out, err = a.template(ctx, args)
	case "helm.drift":
		out, err = a.drift(ctx, args)
	case "helm.install", "helm.upgrade", "helm.rollback", "helm.uninstall":
		out, err = a.change(ctx, name, args)
	default:
		return nil, fmt.Errorf("unknown operation %s", name)
	}
	return out, err
}

// Preview runs a changing operation as a dry run and says what it would
// change: the release, and each object it would create, update or delete.
func (a *Adapter) Preview(ctx context.Context, name string, args json.RawMessage) (*catalog.Change, json.RawMessage, error) {
	ctx = withSecrets(ctx)
	c, out, err := a.preview(ctx, name, args)
	sec := secretsOf(ctx)
	sec.register(a.secrets)
	c = sec.change(c)
	if err != nil {
		return c, nil, wrapError(a.scrubErr(sec.err(err)))
	}
	if a.ownSecrets {
		c = scrubChange(a.secrets, c)
	}
	b, err := a.result(out)
	return c, b, err
}

// result returns out as JSON. An adapter with a registry of its own (no
// bridge in front of it) hides the registered values itself; otherwise the
// bridge's boundary does, for every provider alike.
func (a *Adapter) result(out any) (json.RawMessage, error) {
	b, err := json.Marshal(out)
	if err != nil || !a.ownSecrets {
		return b, err
	}
	b, _ = a.secrets.ScrubJSON(b)
	return b, nil
}

// scrubErr is result for an error's message.
func (a *Adapter) scrubErr(err error) error {
	if err == nil || !a.ownSecrets {
		return err
	}
	msg, hidden := a.secrets.Scrub(err.Error(), false)
	if len(hidden) == 0 {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

// scrubChange is result for a change's diff lines and fields.
func scrubChange(reg *secrets.Registry, c *catalog.Change) *catalog.Change {
	if c == nil {
		return nil
	}
	out := *c
	text := func(s string) string { s, _ = reg.Scrub(s, false); return s }
	if c.Diff != nil {
		out.Diff = make([]string, len(c.Diff))
		for i, l := range c.Diff {
			out.Diff[i] = text(l)
		}
	}
	if c.Fields != nil {
		out.Fields = make([]catalog.Field, len(c.Fields))
		for i, f := range c.Fields {
			out.Fields[i] = catalog.Field{Path: text(f.Path), Before: text(f.Before), After: text(f.After)}
		}
	}
	if c.Objects != nil {
		out.Objects = make([]catalog.Change, len(c.Objects))
		for i := range c.Objects {
			out.Objects[i] = *scrubChange(reg, &c.Objects[i])
		}
	}
	return &out
}

// config returns Helm's action configuration for one call in namespace ns
// ("" for all namespaces): its API requests carry the call's identity and
// act for the call's caller. While rendering is set (nil: never), every
// request for Secrets a chart makes is answered Not Found, Helm's own
// release records included: a chart's lookup cannot read a Secret, nor
// another release's record, into a preview's output. Helm's release
// storage has a client of its own, outside that guard, and every release
// it reads or writes is kept in the call's secrets (secretsOf) so that
// nothing the call returns holds their secret values.
func (a *Adapter) config(ctx context.Context, ns string, rendering *atomic.Bool) (*action.Configuration, error) {
	cfg := new(action.Configuration)
	g := &getter{a: a, ns: ns, id: catalog.CallID(ctx), caller: catalog.CallerFrom(ctx), rendering: rendering}
	if err := cfg.Init(g, ns, a.driver, func(string, ...any) {}); err != nil {
		return nil, err
	}
	var d driver.Driver
	if a.memory != nil {
		// One store for every call: the memory driver forgets otherwise.
		a.memory.SetNamespace(ns)
		d = a.memory
	} else {
		store := &getter{a: a, ns: ns, id: g.id, caller: g.caller}
		rc, err := store.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		cs, err := k8sclient.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("helm: release storage client: %w", err)
		}
		d = driver.NewSecrets(cs.CoreV1().Secrets(ns))
	}
	cfg.Releases = storage.Init(recording{Driver: d, secrets: secretsOf(ctx)})
	if a.settings.MaxHistory > 0 {
		cfg.Releases.MaxHistory = a.settings.MaxHistory
	}
	return cfg, nil
}

// getter gives Helm the adapter's credentials and shared discovery.
type getter struct {
	a         *Adapter
	ns        string
	id        string          // the call's identity, sent as Audit-ID
	caller    *catalog.Caller // whom the call is for
	rendering *atomic.Bool    // set while a chart renders
}

var _ genericclioptions.RESTClientGetter = (*getter)(nil)

func (g *getter) ToRESTConfig() (*rest.Config, error) {
	c := rest.CopyConfig(g.a.cfg)
	if g.id != "" || g.caller != nil || g.rendering != nil {
		id, caller, rendering := g.id, g.caller, g.rendering
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return auditID{next: rt, id: id, caller: caller, rendering: rendering}
		})
	}
	return c, nil
}

func (g *getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.a.disc, nil
}

func (g *getter) ToRESTMapper() (meta.RESTMapper, error) { return g.a.mapper, nil }

func (g *getter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return g }

// The getter is its own kubeconfig loader: Helm asks it for the namespace.

func (g *getter) RawConfig() (clientcmdapi.Config, error) { return clientcmdapi.Config{}, nil }

func (g *getter) ClientConfig() (*rest.Config, error) { return g.ToRESTConfig() }

func (g *getter) Namespace() (string, bool, error) { return g.ns, g.ns != "", nil }

func (g *getter) ConfigAccess() clientcmd.ConfigAccess { return nil }

// auditID sends the identity of the operation call a request serves as its
// Audit-ID header, from the request's context or, for Helm's requests,
// which carry no context of the call, from the call it was made for; and
// puts that call's caller in the request's context for the transport
// that acts for callers (kubeapi.ActForCallers).
type auditID struct {
	next      http.RoundTripper
	id        string
	caller    *catalog.Caller
	rendering *atomic.Bool
}

func (t auditID) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.rendering != nil && t.rendering.Load() && secretRead(req) {
		return notFound404(req), nil
	}
	if t.caller != nil && catalog.CallerFrom(req.Context()) == nil {
		req = req.WithContext(catalog.WithCaller(req.Context(), t.caller))
	}
	id := catalog.CallID(req.Context())
	if id == "" {
		id = t.id
	}
	if id != "" && req.Header.Get("Audit-ID") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Audit-ID", id)
	}
	return t.next.RoundTrip(req)
}

// resetMapperOnce forgets discovered kinds, after a kind was not found (a
// chart may have just installed its type definitions), at most once a
// second however many calls miss at once.
func (a *Adapter) resetMapperOnce() {
	now := time.Now().UnixNano()
	last := a.lastReset.Load()
	if now-last < int64(time.Second) || !a.lastReset.CompareAndSwap(last, now) {
		return
	}
	a.mapper.Reset()
}
