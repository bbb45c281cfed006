package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// globalFlags are kubectl-style connection flags shared by every command.
type globalFlags struct {
	kubeconfig string
	context    string
	namespace  string
	verbose    bool
	timeout    time.Duration
	ledger     string
	mode       string // serve and demo: code, direct or hybrid
	isolation  string // process or none
	memoryMB   int
	maxWorkers int
	workerBin  string // the script worker binary
	cpuLimit   time.Duration
	typecheck  string   // off, calls or strict
	tsgo       string   // the type checker's path
	changes    string   // read-only, plan or apply; overrides the policy file
	policy     string   // a YAML policy file
	contexts   []string // kubeconfig contexts served at once
	helmDriver string   // Helm's release storage
	charts     []string // allowed chart sources
	plansNS    string   // where used plans are recorded
	upstreams  string   // the upstream MCP servers file
	runbooks   string   // the operator's folder of runbooks
	holdCheck  time.Duration
}

func newRootCommand() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "kubecode",
		Short:         "An MCP server that lets an AI agent operate Kubernetes by writing TypeScript",
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&g.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config, then in-cluster)")
	pf.StringVar(&g.context, "context", "", "the kubeconfig context to use")
	pf.StringVarP(&g.namespace, "namespace", "n", "", "default namespace for operations called without one")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log debug output to stderr")
	pf.DurationVar(&g.timeout, "timeout", 0, "default script timeout (default 30s, max 300s)")
	pf.StringVar(&g.ledger, "ledger", "", "append every operation call as a JSON line to this file")
	pf.StringVar(&g.isolation, "isolation", "process", "where scripts run: process (worker processes killed at the deadline, with a memory limit) or none (in the server)")
	pf.IntVar(&g.memoryMB, "memory-limit", 256, "memory limit of a script's worker process, in MB")
	pf.StringVar(&g.workerBin, "worker-binary", "", "the script worker binary, built from ./cmd/kubecode-worker (default: $KUBECODE_WORKER_BINARY, else kubecode-worker beside kubecode, else kubecode itself, which starts slower and uses more memory)")
	pf.IntVar(&g.maxWorkers, "max-workers", 0, "scripts running at once, each in its worker process (default: as many as the machine's memory holds at --memory-limit each, 8 to 128; in a container, set it to what the container's memory limit holds)")
	pf.StringVar(&g.typecheck, "typecheck", "calls", "type-check scripts before they run: off, calls (stop scripts whose tools.* calls do not fit the catalog) or strict (stop on any type error)")
	pf.StringVar(&g.tsgo, "tsgo", "", "path of the native TypeScript compiler (default: $KUBECODE_TSGO, else the one kubecode demo and scripts/test build into the cache)")
	pf.StringSliceVar(&g.contexts, "contexts", nil, "serve these kubeconfig contexts (clusters) at once, the first the default: every operation takes a context argument (\"*\": every context); a policy file's contexts section sets each one's policy")
	pf.StringVar(&g.helmDriver, "helm-driver", "", "Helm's release storage: secrets or memory (default: $HELM_DRIVER, else secrets; configmaps is refused)")
	pf.StringVar(&g.plansNS, "plans-namespace", "", "keep plans waiting for approval, the decisions on them and the record of applied plans as ConfigMaps in this namespace, so that every process sharing a plan key sees them and applies each plan once (needed with a shared plan key; in a pod: its own namespace)")
	pf.StringArrayVar(&g.charts, "chart-source", nil, "where Helm charts may come from, repeatable: a local directory, a repository name from Helm's repositories file, or an oci:// or https:// prefix (default: the working directory)")
	pf.StringVar(&g.changes, "changes", "", "what happens to changes: read-only (all refused), plan (dry runs, applied on approval; the default) or apply")
	pf.StringVar(&g.policy, "policy", "", "a YAML file of the safety policy (see README: Safety)")
	pf.DurationVar(&g.cpuLimit, "cpu-limit", 10*time.Second, "CPU time one script may use in its worker process, to the second")
	pf.StringVar(&g.upstreams, "upstreams", "", "a YAML file of upstream MCP servers whose pinned tools scripts call as tools.<upstream>.<tool>, behind the same gate (see docs/upstreams.md)")
	pf.StringVar(&g.runbooks, "runbooks", "", "a folder of runbooks (NAME.ts, kept in git): scripts agents call as tools.runbooks.<name>, run without a plan within the standard change a person approves for each (see docs/runbooks.md)")
	pf.DurationVar(&g.holdCheck, "hold-check", 5*time.Second, "how long after an execution that changed an object something else will undo (an autoscaler, a GitOps controller, an owner, as its plan foresaw) kubecode reads it again to say whether the change held; 0: never")
	root.AddCommand(newServeCommand(g), newDemoCommand(g), newSearchCommand(g), newExecCommand(g), newBenchCommand(), newAuditCommand(g),
		newPlansCommand(), newDecideCommand(true), newDecideCommand(false), newRevertCommand(g), newUpstreamsCommand(g), newRunbooksCommand())
	return root
}

func (g *globalFlags) logger() *slog.Logger {
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	// Logs go to stderr: stdout carries the MCP stdio transport.
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// jsonLogger logs JSON lines to stderr, as a server behind a log
// collector should.
func (g *globalFlags) jsonLogger() *slog.Logger {
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// restConfig loads credentials with kubectl's rules: --kubeconfig,
// $KUBECONFIG, ~/.kube/config, then the in-cluster service account.
func (g *globalFlags) restConfig() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: g.context}
	overrides.Context.Namespace = g.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("load Kubernetes credentials: %w (pass --kubeconfig, set KUBECONFIG, or try `kubecode demo`)", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		ns = "default"
	}
	return cfg, ns, nil
}

// wired is a broker with the parts of it other commands reach: the
// Kubernetes adapter (it authenticates HTTP callers) and the metrics.
type wired struct {
	*broker.Broker
	k8s      *kubernetes.Adapter // the default cluster's
	clusters int
	metrics  *prometheus.Registry
	// upstreams without a token exchange act as the operator for every
	// user: serve warns about them under --auth.
	sharedIdentity []string
}

// people authenticates a person's own token with the default cluster
// (a TokenReview): on a server without --auth, how two people approve a
// plan that needs two, each as themselves.
func (w *wired) people(ctx context.Context, token string) (*catalog.Caller, error) {
	return w.k8s.Authenticate(ctx, token, false)
}

// broker connects with the connection flags and wires a broker on it.
func (g *globalFlags) broker(log *slog.Logger) (*wired, io.Closer, error) {
	if len(g.contexts) > 0 {
		clusters, err := g.contextConfigs()
		if err != nil {
			return nil, nil, err
		}
		return g.newBrokerClusters(clusters, log)
	}
	cfg, ns, err := g.restConfig()
	if err != nil {
		return nil, nil, err
	}
	return g.newBroker(cfg, ns, log)
}

// contextConfig is one kubeconfig context to serve.
type contextConfig struct {
	name string
	cfg  *rest.Config
	ns   string
}

// contextConfigs loads the credentials of each context --contexts names
// ("*": every context of the kubeconfig, the current one first).
func (g *globalFlags) contextConfigs() ([]contextConfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig: %w", err)
	}
	names := g.contexts
	if len(names) == 1 && names[0] == "*" {
		names = nil
		for n := range raw.Contexts {
			names = append(names, n)
		}
		slices.Sort(names)
		if i := slices.Index(names, raw.CurrentContext); i > 0 {
			names = append(append([]string{raw.CurrentContext}, names[:i]...), names[i+1:]...)
		}
	}
	var out []contextConfig
	for _, n := range names {
		if _, ok := raw.Contexts[n]; !ok {
			return nil, fmt.Errorf("--contexts: the kubeconfig has no context %q", n)
		}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: n}
		overrides.Context.Namespace = g.namespace
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
		cfg, err := cc.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", n, err)
		}
		ns, _, err := cc.Namespace()
		if err != nil {
			ns = "default"
		}
		out = append(out, contextConfig{name: n, cfg: cfg, ns: ns})
	}
	return out, nil
}

// inClusterNamespace is where a server running in a pod finds its own
// namespace.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// planUses returns the shared record of used plans in --plans-namespace
// (in a pod: its own namespace, when a plan key is shared), or nil for a
// record in this process's memory. A shared plan key without a shared
// record is refused: replicas (or kubecode exec runs) would each apply
// the same approval once.
func (g *globalFlags) planUses(cfg *rest.Config, key []byte) (*kubernetes.PlanUses, error) {
	ns := g.plansNS
	if ns == "" && len(key) > 0 {
		if b, err := os.ReadFile(inClusterNamespace); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	if ns == "" {
		if len(key) > 0 {
			return nil, fmt.Errorf("a shared plan key (%s or the policy's planKey) lets other processes approve this one's plans, so they must share the record of plans already applied (each applies once): add --plans-namespace NS, a namespace the server may create ConfigMaps in", PlanKeyEnv)
		}
		return nil, nil
	}
	return kubernetes.NewPlanUses(cfg, ns)
}

// newBroker wires the chain explicitly: adapter → bridge → broker.
func (g *globalFlags) newBroker(cfg *rest.Config, ns string, log *slog.Logger) (*wired, io.Closer, error) {
	return g.newBrokerClusters([]contextConfig{{cfg: cfg, ns: ns}}, log)
}

// newBrokerClusters wires one broker over several clusters (one: the
// plain case), each with its adapters, the first the default.
func (g *globalFlags) newBrokerClusters(contexts []contextConfig, log *slog.Logger) (*wired, io.Closer, error) {
	policy, key, err := g.loadPolicy()
	if err != nil {
		return nil, nil, err
	}
	policies, err := g.contextPolicies(policy)
	if err != nil {
		return nil, nil, err
	}
	// The secret boundary: one registry of every value no script may
	// see, fed by each cluster's watch of its Secrets, the credentials the
	// adapters hold and the upstreams' credentials; every result passes
	// it in the bridge.
	secretReg := secrets.New(nil)
	var watches closeAll
	done := false
	defer func() {
		if !done {
			_ = watches.Close()
		}
	}()
	ups, err := g.loadUpstreams(log, secretReg)
	if err != nil {
		return nil, nil, err
	}
	var clusters []bridge.Cluster
	var k8s *kubernetes.Adapter
	for _, c := range contexts {
		watch, err := kubernetes.WatchSecrets(c.cfg, secretReg, &kubernetes.SecretWatchOptions{Log: log})
		if err != nil {
			return nil, nil, err
		}
		watches = append(watches, watch)
		a, err := kubernetes.New(c.cfg, &kubernetes.Options{Namespace: c.ns, Secrets: secretReg, SecretWatch: watch})
		if err != nil {
			return nil, nil, err
		}
		hlm, err := helm.New(c.cfg, &helm.Options{Namespace: c.ns, Driver: g.helmDriver, ChartSources: g.charts, Secrets: secretReg})
		if err != nil {
			return nil, nil, err
		}
		cl := bridge.Cluster{Name: c.name, Providers: []bridge.Provider{a, hlm}, Scope: c.cfg.Host}
		if p, ok := policies[c.name]; ok {
			cl.Policy = &p
		}
		clusters = append(clusters, cl)
		if k8s == nil {
			k8s = a
		}
	}
	// Runbooks belong to no cluster either: each call their scripts make
	// names its own.
	rbs, err := broker.NewRunbooks(&broker.RunbooksOptions{Dir: g.runbooks, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	// Upstreams belong to no cluster: whichever a script names, their
	// changes pass the base policy.
	bopts := &bridge.Options{Policy: policy, PlanKey: key, Clusters: clusters, Shared: append(ups.providers(), rbs), Secrets: secretReg}
	if uses, err := g.planUses(contexts[0].cfg, key); err != nil {
		return nil, nil, err
	} else if uses != nil {
		// Where used plans are recorded, pending ones and their decisions
		// are kept too: every replica sees them, and a restart loses none.
		bopts.PlanUses = uses
		if bopts.Approvals, err = kubernetes.NewApprovals(contexts[0].cfg, uses.Namespace()); err != nil {
			return nil, nil, err
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var ledger io.Closer
	if g.ledger != "" {
		f, err := os.OpenFile(g.ledger, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open ledger: %w", err)
		}
		bopts.Ledger, ledger = f, f
	}
	// The bridge comes before the metrics (they need the pool): its calls
	// reach them through observe, set below.
	var observe func(context.Context, *bridge.Entry)
	bopts.Observe = func(ctx context.Context, e *bridge.Entry) {
		if len(e.Hidden) > 0 {
			// A provider returned a value the server knows is secret (an
			// upstream echoing its credentials, a pod printing its
			// password): the script never saw it, the operator should know.
			log.Warn("secret boundary: a result carried known secret values, hidden before the script saw them", "operation", e.Operation, "auditID", e.AuditID, "hidden", e.Hidden)
		}
		if observe != nil {
			observe(ctx, e)
		}
	}
	b := bridge.New(nil, bopts)
	// The bridge stops its background work before the ledger closes, and
	// before the upstreams stop.
	closers := append(closeAll{b, ups}, watches...)
	if ledger != nil {
		closers = append(closers, ledger)
	}
	mode := broker.ModeCode
	if g.mode != "" {
		if mode, err = broker.ParseMode(g.mode); err != nil {
			_ = closers.Close()
			return nil, nil, err
		}
	}
	ropts := &runtime.Options{Timeout: g.timeout}
	var pool *runtime.Pool
	switch g.isolation {
	case "process", "":
		if g.memoryMB <= 0 {
			_ = closers.Close()
			return nil, nil, fmt.Errorf("--memory-limit must be a positive number of MB")
		}
		if g.cpuLimit < time.Second {
			_ = closers.Close()
			return nil, nil, fmt.Errorf("--cpu-limit must be at least 1s (it counts whole seconds)")
		}
		if g.maxWorkers < 0 {
			_ = closers.Close()
			return nil, nil, fmt.Errorf("--max-workers must be positive")
		}
		bin, err := workerBinary(g.workerBin)
		if err != nil {
			_ = closers.Close()
			return nil, nil, err
		}
		pool = runtime.NewPool(&runtime.PoolOptions{Command: workerCommand(bin, log), Runtime: ropts, MemoryLimit: int64(g.memoryMB) << 20, CPULimit: g.cpuLimit, Max: g.maxWorkers})
		closers = append(closeAll{pool}, closers...)
	case "none":
	default:
		_ = closers.Close()
		return nil, nil, fmt.Errorf("unknown --isolation %q: use process or none", g.isolation)
	}
	tc, err := broker.ParseTypecheckMode(g.typecheck)
	if err != nil {
		_ = closers.Close()
		return nil, nil, err
	}
	tsgo := g.tsgo
	if tsgo == "" {
		tsgo = os.Getenv("KUBECODE_TSGO")
	}
	if tsgo == "" {
		tsgo, _ = controlplane.TsgoPath()
	}
	metrics := broker.NewMetrics(reg, pool)
	tp, err := tracerProvider(log)
	if err != nil {
		_ = closers.Close()
		return nil, nil, err
	}
	ps, err := prompts()
	if err != nil {
		_ = closers.Close()
		return nil, nil, err
	}
	bro := &broker.Options{Version: versionString(), Logger: log, Mode: mode, Runtime: ropts, Pool: pool, Typecheck: tc, Tsgo: tsgo, Metrics: metrics, Prompts: ps, Runbooks: rbs, HoldCheck: g.holdCheck}
	if g.holdCheck == 0 {
		bro.HoldCheck = -1
	}
	if tp != nil { // a nil *TracerProvider is not a nil interface
		bro.TracerProvider = tp
	}
	br := broker.New(b, bro)
	observe = br.Observe
	closers = append(closeAll{br}, closers...)
	if tp != nil {
		closers = append(closeAll{shutdown{tp}}, closers...)
	}
	w := &wired{Broker: br, k8s: k8s, clusters: len(clusters), metrics: reg}
	if ups.file != nil {
		for _, u := range ups.file.Upstreams {
			if u.TokenExchange == nil {
				w.sharedIdentity = append(w.sharedIdentity, u.Name)
			}
		}
	}
	done = true
	return w, closers, nil
}

// closeAll closes each in order and returns the first error.
type closeAll []io.Closer

func (c closeAll) Close() error {
	var first error
	for _, x := range c {
		if err := x.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// tracerProvider exports traces over OTLP (HTTP) when the standard
// OpenTelemetry environment asks for it: OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, and OTEL_TRACES_EXPORTER unset
// or "otlp"; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the
// service. Nil means no traces.
func tracerProvider(log *slog.Logger) (*sdktrace.TracerProvider, error) {
	if e := os.Getenv("OTEL_TRACES_EXPORTER"); e != "" && e != "otlp" {
		return nil, nil
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(context.Background())
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.version", versionString())))
	if err != nil {
		res = resource.Default()
	}
	log.Info("exporting traces over OTLP")
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// shutdown flushes and stops a tracer provider as an io.Closer.
type shutdown struct{ tp *sdktrace.TracerProvider }

func (s shutdown) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.tp.Shutdown(ctx)
}
