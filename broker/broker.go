package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/search"
	"github.com/kubecode/kubecode/runtime"
	"go.opentelemetry.io/otel/trace"
)

// Options configures a Broker. A nil *Options means defaults.
type Options struct {
	// Runtime configures the sandbox (timeouts, limits). Nil means the
	// runtime's defaults.
	Runtime *runtime.Options
	// Pool, when set, runs every execution in a worker process (whose
	// limits are the pool's); nil runs them in this process.
	Pool *runtime.Pool
	// SearchLimit is how many operations search_tools returns by default.
	// Zero or less means 5.
	SearchLimit int
	// TypeBudget is about how many characters a result type in a search
	// answer spends beyond its always-kept fields. Zero means 600.
	TypeBudget int
	// FullDeclarations is how many of the best matches search_tools
	// declares in full, result types included; the others get one-line
	// signatures. Zero or less means 2.
	FullDeclarations int
	// Version is reported to MCP clients. Zero means "dev".
	Version string
	// Mode selects the tools served. Zero means ModeCode.
	Mode ToolMode
	// DirectTools names the operations hybrid mode serves as tools of
	// their own. Nil means kubernetes.pods.list, kubernetes.pods.logs and
	// kubernetes.events.list.
	DirectTools []string
	// Logger receives diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// Typecheck says what a type check before each execution does. Zero
	// means TypecheckCalls when Tsgo is set, else TypecheckOff.
	Typecheck TypecheckMode
	// Tsgo is the path of the native TypeScript compiler that checks
	// scripts. Empty means no type check. A path where no program is
	// leaves scripts unchecked, as the log says once.
	Tsgo string
	// Metrics, when set, count executions (NewMetrics); the bridge's calls
	// are counted when the bridge's Options.Observe is Broker.Observe.
	Metrics *Metrics
	// TracerProvider, when set, traces MCP requests, executions and (with
	// Broker.Observe as the bridge's Options.Observe) bridge calls. Nil
	// means no traces.
	TracerProvider trace.TracerProvider
	// Prompts are the MCP prompts served (NewPrompt). Nil means none.
	Prompts []*Prompt
	// ApprovalWait is how long an execution with approve waits for people
	// to decide on its plan before it answers that the plan is still
	// pending. Zero means 2 minutes.
	ApprovalWait time.Duration
	// HoldCheck is how long after an execution that changed an object the
	// plan foresaw something would undo (an autoscaler, a GitOps
	// controller, an owner) the object is read again, to say whether the
	// change held. Zero means 5 seconds; negative, never.
	HoldCheck time.Duration
	// Runbooks, when set, are the runbooks scripts call (give the same to
	// the bridge as a provider): the broker runs them. Nil means none.
	Runbooks *Runbooks
}

// Broker serves the two tools over the operations of one bridge.
type Broker struct {
	bridge *bridge.Bridge
	opts   Options
	trace  atomic.Int64

	checker   *checker
	checkWarn sync.Once

	mu      sync.Mutex
	version string
	st      *state
	direct  []*directServer // servers with operation tools, kept in sync with st

	warming atomic.Bool // a background load of the catalog is under way

	pageMu sync.Mutex
	page   *approvalPage // where people approve plans, once served

	// sessions are what each MCP session's search answers declared, by a
	// weak pointer to the session (*sentDeclarations).
	sessions sync.Map
}

// state is everything derived from one version of the operation table. It
// is immutable and replaced whole when the operations change.
type state struct {
	ops    []*catalog.Operation
	index  *search.Index
	decl   *catalog.Declarer // compact result types, for search answers
	detail *catalog.Declarer // detailed result types, for exact lookups
	types  map[string]*catalog.Operation
	rt     *runtime.Runtime
	// hostOps are the operations scripts see, for a Pool's workers.
	hostOps []runtime.Operation
	// version names the catalog; checkDecls are its declarations for the
	// type checker, made on first use, and checkTypes their interfaces by
	// name ("PodStatus" → "{ ... }").
	version    string
	checkOnce  sync.Once
	checkDecls string
	checkTypes map[string]string
	// outlines are result types outlined for search answers, by
	// operation; typeNames the checkTypes' names by their lower case.
	outlineMu sync.Mutex
	outlines  map[string]outline
	typeNames map[string]string
}

// New returns a Broker over b.
func New(b *bridge.Bridge, opts *Options) *Broker {
	br := &Broker{bridge: b}
	if opts != nil {
		br.opts = *opts
	}
	if br.opts.SearchLimit <= 0 {
		br.opts.SearchLimit = 5
	}
	if br.opts.TypeBudget == 0 {
		br.opts.TypeBudget = 600
	}
	if br.opts.FullDeclarations <= 0 {
		br.opts.FullDeclarations = 2
	}
	if br.opts.Version == "" {
		br.opts.Version = "dev"
	}
	if br.opts.Mode == "" {
		br.opts.Mode = ModeCode
	}
	if br.opts.HoldCheck == 0 {
		br.opts.HoldCheck = 5 * time.Second
	}
	if br.opts.Logger == nil {
		br.opts.Logger = slog.Default()
	}
	if br.opts.Typecheck == "" {
		br.opts.Typecheck = TypecheckOff
		if br.opts.Tsgo != "" {
			br.opts.Typecheck = TypecheckCalls
		}
	}
	if br.opts.Typecheck != TypecheckOff && br.opts.Tsgo != "" {
		br.checker = &checker{bin: br.opts.Tsgo}
	}
	if br.opts.Runbooks != nil {
		br.opts.Runbooks.attach(br)
	}
	return br
}

// state returns the current operations, index and runtime, rebuilding them
// when the bridge reports a new version (a CRD appeared, say).
func (b *Broker) state(ctx context.Context) (*state, error) {
	// The first discovery runs in the request: bound it, since the script's
	// own timeout has not started yet.
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	ops, version, err := b.bridge.Operations(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.st != nil && version == b.version {
		return b.st, nil
	}
	if b.st != nil {
		// Another request may have installed a newer table while this one
		// waited for the lock: build from the bridge's current table, never
		// an older one.
		if ops, version, err = b.bridge.Operations(ctx); err != nil {
			return nil, err
		}
		if version == b.version {
			return b.st, nil
		}
	}
	start := time.Now()
	idx, err := search.NewIndex(ops, nil)
	if err != nil {
		return nil, fmt.Errorf("build search index: %w", err)
	}
	hostOps := make([]runtime.Operation, 0, len(ops))
	for _, op := range ops {
		hostOps = append(hostOps, runtime.Operation{Name: op.Name, Aliases: op.Aliases})
	}
	rt, err := runtime.New(hostOps, b.opts.Runtime)
	if err != nil {
		return nil, fmt.Errorf("build runtime: %w", err)
	}
	b.st, b.version = &state{ops: ops, index: idx, rt: rt, hostOps: hostOps, types: resultTypes(ops), version: version,
		decl:   catalog.NewDeclarer(&catalog.DeclarerOptions{TypeBudget: b.opts.TypeBudget}),
		detail: catalog.NewDeclarer(&catalog.DeclarerOptions{TypeBudget: detailBudget, Detailed: true}),
	}, version
	for _, ds := range b.direct {
		b.syncDirectTools(ds.s, ops, ds.served)
	}
	b.opts.Logger.Info("catalog ready", "operations", len(ops), "version", version, "took", time.Since(start))
	return b.st, nil
}

// detailBudget is the type budget of a declaration asked for by name:
// enough for the fields agents use (a container's probes, env, ports and
// securityContext), not every field of every type.
const detailBudget = 3000

// stateTimeout bounds discovery of the operations before a request.
const stateTimeout = 30 * time.Second
