package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
	"github.com/kubecode/kubecode/internal/tokencount"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure an Upstream. A nil *Options means defaults.
type Options struct {
	// Pins are the operator's pinned tool declarations. Nil means none:
	// every tool waits to be pinned (Status lists them).
	Pins *Pins
	// PinsPath, when set, is the file Pins came from: it is read again
	// whenever it changes, so a tool pinned by kubecode upstreams pin is
	// served (or one unpinned withdrawn) without a restart.
	PinsPath string
	// Version is kubecode's, as the upstream is told. Empty means "dev".
	Version string
	// Log receives connection failures. Nil means they are only kept for
	// Status.
	Log *slog.Logger
	// ConnectTimeout bounds connecting and listing tools. Zero means 15s.
	ConnectTimeout time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Secrets is the registry every result passes at the bridge
	// (bridge.Options.Secrets): each credential the upstream is given
	// (headers and env from files or the environment, a token service's
	// secret, exchanged tokens, a caller's token) is registered there as it
	// is read, so a server that echoes one hands it to no script. Nil means
	// they are not registered.
	Secrets *secrets.Registry
}

// Upstream is one upstream MCP server as a provider of operations: its
// pinned tools are tools.<name>.<tool>, reads only where the operator
// trusts the server's annotations (or says so per tool), every other call
// a change judged and planned like any other.
type Upstream struct {
	cfg    Config
	opts   Options
	client *mcp.Client
	slots  chan struct{} // Concurrency
	stderr *tail         // a stdio server's last words

	connSlot   chan struct{} // one connection attempt at a time
	refreshing atomic.Bool   // a background listing is under way

	mu      sync.Mutex
	cs      *mcp.ClientSession
	stale   bool // tools/list_changed since the last list
	listed  bool
	lastErr error
	retryAt time.Time
	backoff time.Duration
	// listRetry and listBackoff space out listings that fail.
	listRetry   time.Time
	listBackoff time.Duration
	pins        *Pins
	pinsMod     time.Time // PinsPath's modification time when read
	listing     []*mcp.Tool
	ops         []*catalog.Operation
	served      map[string]*servedTool // operation name → tool
	tools       []ToolStatus
	version     string
	breaker     breaker
	closed      bool
	cmd         *exec.Cmd               // a stdio server's, last started
	sessions    int                     // connections made, for Status
	users       map[string]*userSession // under a token exchange, by the caller's token's digest
	learnt      map[string]*LearntType  // result types learnt here, by tool, not served until pinned
}

// servedTool is a pinned tool kubecode serves.
type servedTool struct {
	name    string // the upstream's
	op      *catalog.Operation
	read    bool
	sha     string
	signals []catalog.Signal
	output  *outputValidator // nil: no outputSchema
	// inferred is the result type learnt from answers (no outputSchema),
	// lessons how many answers taught it.
	inferred *catalog.Schema
	lessons  int
}

// ToolStatus is one tool as kubecode upstreams shows it.
type ToolStatus struct {
	Tool string `json:"tool"`
	// Operation is the name scripts call it by.
	Operation string `json:"operation,omitempty"`
	// State is "served", "new" (not pinned yet), "changed" (its
	// declaration moved since it was pinned), "hidden" (by the operator),
	// "unservable" (Why says what is wrong) or "gone" (pinned, no longer
	// listed).
	State string `json:"state"`
	// Kind is "read" or "change", for a served tool.
	Kind string `json:"kind,omitempty"`
	// Why says how Kind was decided, or what keeps the tool out.
	Why string `json:"why,omitempty"`
	// Diff is what moved since the pin, field by field.
	Diff []string `json:"diff,omitempty"`
	// Description is its description as kubecode shows it (cleaned),
	// for the operator's review.
	Description string `json:"description,omitempty"`
	// Cleaned is what was taken out of its descriptions.
	Cleaned []string `json:"cleaned,omitempty"`
	// SHA256 fingerprints its current declaration; Declaration is it.
	SHA256      string          `json:"sha256"`
	Declaration json.RawMessage `json:"-"`
	// Learnt is the result type learnt from its answers that is not
	// pinned yet (the tool declares none): served to no session until
	// kubecode upstreams pin pins it.
	Learnt *catalog.Schema `json:"learnt,omitempty"`
	// LearntSHA256 fingerprints Learnt: pin TOOL@SHA pins the learnt type
	// only if it is still the one reviewed.
	LearntSHA256 string `json:"learntSha256,omitempty"`
}

// Status is an upstream as kubecode upstreams shows it.
type Status struct {
	Name      string       `json:"name"`
	Transport string       `json:"transport"`
	Connected bool         `json:"connected"`
	Error     string       `json:"error,omitempty"`
	Tools     []ToolStatus `json:"tools"`
	// Warnings are what the operator should fix: an override naming no
	// listed tool (a typo leaves the tool as the server says), a listing
	// cut at its limit.
	Warnings []string `json:"warnings,omitempty"`
}

// New returns the upstream cfg describes; it connects when first asked
// for its operations.
func New(cfg Config, opts *Options) *Upstream {
	u := &Upstream{cfg: cfg, stderr: &tail{max: 4096}}
	if opts != nil {
		u.opts = *opts
	}
	if u.cfg.Concurrency <= 0 {
		u.cfg.Concurrency = DefaultConcurrency
	}
	if u.cfg.Timeout <= 0 {
		u.cfg.Timeout = Duration(DefaultTimeout)
	}
	if u.opts.Version == "" {
		u.opts.Version = "dev"
	}
	if u.opts.ConnectTimeout == 0 {
		u.opts.ConnectTimeout = 15 * time.Second
	}
	if u.opts.Now == nil {
		u.opts.Now = time.Now
	}
	u.slots = make(chan struct{}, u.cfg.Concurrency)
	u.connSlot = make(chan struct{}, 1)
	u.pins = u.opts.Pins
	if u.opts.PinsPath != "" {
		if fi, err := os.Stat(u.opts.PinsPath); err == nil {
			u.pinsMod = fi.ModTime()
		}
	}
	u.client = mcp.NewClient(&mcp.Implementation{Name: "kubecode", Version: u.opts.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			u.mu.Lock()
			u.stale = true
			u.mu.Unlock()
		},
	})
	return u
}

// Name is the upstream's name: its operations' first segment.
func (u *Upstream) Name() string { return u.cfg.Name }

// transport describes where the upstream is, for people.
func (u *Upstream) transport() string {
	if u.cfg.URL != "" {
		return "streamable HTTP " + u.cfg.URL
	}
	return "stdio: " + strings.Join(u.cfg.Command, " ")
}

// Close ends the connection (a stdio server is stopped).
func (u *Upstream) Close() error {
	u.mu.Lock()
	cs, cmd := u.cs, u.cmd
	u.cs, u.closed = nil, true
	users := u.users
	u.users = nil
	u.mu.Unlock()
	for _, us := range users {
		us.mu.Lock()
		ucs := us.cs
		us.cs = nil
		us.mu.Unlock()
		if ucs != nil {
			_ = ucs.Close() // its last request reads the token: not under mu
		}
	}
	var err error
	if cs != nil {
		err = cs.Close()
	}
	killGroup(cmd) // what the server started, if it left anything
	return err
}

// Discover returns the pinned tools as operations. An upstream that
// cannot be reached serves what it served before (or nothing) and says
// why in Status: it never fails the registry of every other provider.
func (u *Upstream) Discover(ctx context.Context) ([]*catalog.Operation, string, error) {
	u.reloadPins()
	u.mu.Lock()
	need := u.cs == nil || u.stale || !u.listed
	listed, closed := u.listed, u.closed
	u.mu.Unlock()
	switch {
	case !need || closed:
	case !listed:
		// The first listing: the registry waits for it (a stdio server
		// started by npx may take seconds), bounded.
		_, _ = u.session(ctx)
	case u.refreshing.CompareAndSwap(false, true):
		// Afterwards the registry never waits: what was served stays
		// until the new listing is in.
		go func() {
			defer u.refreshing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 2*u.opts.ConnectTimeout)
			defer cancel()
			_, _ = u.session(ctx)
		}()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ops, u.version, nil
}

// Status says how the upstream is and what each of its tools is, after
// trying to connect.
func (u *Upstream) Status(ctx context.Context) Status {
	_, err := u.session(ctx)
	u.mu.Lock()
	defer u.mu.Unlock()
	st := Status{Name: u.cfg.Name, Transport: u.transport(), Connected: u.cs != nil, Tools: slices.Clone(u.tools)}
	// What was learnt and waits to be pinned: here, or by the server
	// (whose notebook is beside the pins).
	file := ReadLearnt(LearntPath(u.opts.PinsPath))
	for i, t := range st.Tools {
		learnt := file.of(u.cfg.Name, t.Tool, t.SHA256)
		if l := u.learnt[t.Tool]; l != nil && l.SHA256 == t.SHA256 {
			learnt = l.Type
		}
		if pin := u.pins.pinned(u.cfg.Name, t.Tool); learnt != nil && (pin == nil || !sameSchema(pin.Learnt, learnt)) {
			raw, _ := json.Marshal(learnt)
			sum := sha256.Sum256(raw)
			st.Tools[i].Learnt, st.Tools[i].LearntSHA256 = learnt, hex.EncodeToString(sum[:])
		}
	}
	if err != nil {
		st.Error = err.Error()
	}
	if u.listed {
		names := map[string]bool{}
		for _, t := range u.listing {
			names[t.Name] = true
		}
		var over []string
		for name := range u.cfg.Tools {
			if !names[name] {
				over = append(over, name)
			}
		}
		slices.Sort(over)
		for _, name := range over {
			st.Warnings = append(st.Warnings, fmt.Sprintf("tools.%s names no tool the server lists (tools are named as the server names them, e.g. get-env, not get_env): it changes nothing", name))
		}
		if len(u.listing) > maxTools {
			st.Warnings = append(st.Warnings, fmt.Sprintf("the server lists more than %d tools: the rest are not served", maxTools))
		}
	}
	return st
}

// session returns the connection, connecting (and listing the tools) when
// there is none, and listing them again after tools/list_changed.
func (u *Upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	select { // one connection attempt at a time, as long as ctx lets us wait
	case u.connSlot <- struct{}{}:
		defer func() { <-u.connSlot }()
	case <-ctx.Done():
		return nil, fmt.Errorf("upstream %s: still connecting when the deadline came", u.cfg.Name)
	}
	u.mu.Lock()
	cs, stale, closed := u.cs, u.stale || !u.listed, u.closed
	retryAt, lastErr := u.retryAt, u.lastErr
	u.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("upstream %s is closed", u.cfg.Name)
	}
	if cs == nil {
		if u.opts.Now().Before(retryAt) {
			return nil, fmt.Errorf("upstream %s cannot be reached (%v); the next try is at %s", u.cfg.Name, lastErr, retryAt.Format(time.TimeOnly))
		}
		var err error
		if cs, err = u.connect(ctx); err != nil {
			u.mu.Lock()
			u.lastErr = err
			u.backoff = min(max(2*u.backoff, 2*time.Second), time.Minute)
			u.retryAt = u.opts.Now().Add(u.backoff)
			u.mu.Unlock()
			if u.opts.Log != nil {
				u.opts.Log.Warn("upstream unreachable", "upstream", u.cfg.Name, "error", err)
			}
			return nil, err
		}
		stale = true
	}
	if stale && !u.opts.Now().Before(u.listRetryAt()) {
		if err := u.list(ctx, cs); err != nil {
			u.mu.Lock()
			u.lastErr = err
			// A server that connects but will not list is asked again
			// later, not by every call.
			u.listBackoff = min(max(2*u.listBackoff, 2*time.Second), time.Minute)
			u.listRetry = u.opts.Now().Add(u.listBackoff)
			u.mu.Unlock()
			return cs, err
		}
		u.mu.Lock()
		u.listBackoff = 0
		u.mu.Unlock()
	}
	return cs, nil
}

func (u *Upstream) listRetryAt() time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.listRetry
}

// connect starts or reaches the server and initializes a session.
func (u *Upstream) connect(ctx context.Context) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, u.opts.ConnectTimeout)
	defer cancel()
	var t mcp.Transport
	if u.cfg.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, MaxRetries: 1, HTTPClient: u.httpClient(nil)}
	} else {
		cmd := exec.Command(u.cfg.Command[0], u.cfg.Command[1:]...)
		env, err := u.env()
		if err != nil {
			return nil, err
		}
		cmd.Env = env
		cmd.Stderr = u.stderr
		cmd.WaitDelay = 3 * time.Second // a child holding stderr open does not hold Close
		ownGroup(cmd)
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		defer func() { u.mu.Lock(); u.cmd = cmd; u.mu.Unlock() }()
	}
	cs, err := u.client.Connect(ctx, t, nil)
	if err != nil {
		if s := u.stderr.String(); s != "" {
			return nil, fmt.Errorf("connect to %s: %w (its stderr: %s)", u.transport(), err, s)
		}
		return nil, fmt.Errorf("connect to %s: %w", u.transport(), err)
	}
	u.mu.Lock()
	if u.closed { // closed while connecting: no process outlives Close
		u.mu.Unlock()
		_ = cs.Close()
		return nil, fmt.Errorf("upstream %s is closed", u.cfg.Name)
	}
	u.cs, u.backoff, u.lastErr, u.sessions = cs, 0, nil, u.sessions+1
	u.mu.Unlock()
	go func() {
		err := cs.Wait()
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.cs == cs {
			u.cs = nil
			u.lastErr = fmt.Errorf("the connection ended: %v%s", err, u.stderrNote())
		}
	}()
	return cs, nil
}

// stderrNote is a stdio server's last stderr, for an error message.
func (u *Upstream) stderrNote() string {
	if s := u.stderr.String(); s != "" {
		return " (its stderr: " + s + ")"
	}
	return ""
}

// baseEnv are the variables a stdio server gets from kubecode's own
// environment; credentials and anything else only through cfg.Env.
var baseEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "SSL_CERT_FILE", "SSL_CERT_DIR"}

func (u *Upstream) env() ([]string, error) {
	var env []string
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(u.cfg.Env))
	for k := range u.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := u.cfg.Env[k].value()
		if err != nil {
			return nil, fmt.Errorf("upstream %s: env.%s: %w", u.cfg.Name, k, err)
		}
		u.cfg.Env[k].register(u.opts.Secrets, v, "upstream "+u.cfg.Name+" env "+k)
		env = append(env, k+"="+v)
	}
	return env, nil
}

// list lists the server's tools and decides which are served.
func (u *Upstream) list(ctx context.Context, cs *mcp.ClientSession) error {
	ctx, cancel := context.WithTimeout(ctx, u.opts.ConnectTimeout)
	defer cancel()
	u.mu.Lock()
	u.stale = false // a change announced while listing lists again
	u.mu.Unlock()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			u.mu.Lock()
			u.stale = true
			u.mu.Unlock()
			return fmt.Errorf("list the tools of %s: %w", u.cfg.Name, err)
		}
		tools = append(tools, t)
		if len(tools) > maxTools { // one more than served: Status says it was cut
			break
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.listing, u.listed = tools, true
	u.ops, u.served, u.tools, u.version = u.decide(tools, u.pins)
	return nil
}

// reloadPins reads PinsPath again when it changed, and decides again
// which of the listed tools are served.
func (u *Upstream) reloadPins() {
	if u.opts.PinsPath == "" {
		return
	}
	fi, err := os.Stat(u.opts.PinsPath)
	var mod time.Time
	if err == nil {
		mod = fi.ModTime()
	}
	u.mu.Lock()
	same := mod.Equal(u.pinsMod)
	u.mu.Unlock()
	if same {
		return
	}
	pins, err := ReadPins(u.opts.PinsPath)
	if err != nil {
		if u.opts.Log != nil {
			u.opts.Log.Warn("upstream pins unreadable; the pins before stay", "upstream", u.cfg.Name, "error", err)
		}
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pins, u.pinsMod = pins, mod
	if u.listed {
		u.ops, u.served, u.tools, u.version = u.decide(u.listing, pins)
	}
}

// maxTools bounds the tools kubecode takes from one server.
const maxTools = 1000

// decide turns the listed tools into operations: the pinned, unchanged,
// well-formed ones; the rest are quarantined with why.
func (u *Upstream) decide(tools []*mcp.Tool, pins *Pins) ([]*catalog.Operation, map[string]*servedTool, []ToolStatus, string) {
	if len(tools) > maxTools {
		tools = tools[:maxTools]
	}
	var ops []*catalog.Operation
	served := map[string]*servedTool{}
	var status []ToolStatus
	listed := map[string]bool{}
	// Two tools whose names make one operation name are both kept out,
	// whichever the server lists first: the name must not move from one
	// to the other when the server reorders its list.
	bySegment := map[string][]string{}
	for _, t := range tools {
		if plainName(t.Name) && !u.cfg.Tools[t.Name].Hidden {
			bySegment[segment(t.Name)] = append(bySegment[segment(t.Name)], t.Name)
		}
	}
	sum := sha256.New()
	for _, t := range tools {
		listed[t.Name] = true
		decl, sha, err := declaration(t)
		st := ToolStatus{Tool: t.Name, SHA256: sha, Declaration: decl}
		over := u.cfg.Tools[t.Name]
		seg := segment(t.Name)
		pin := pins.pinned(u.cfg.Name, t.Name)
		switch {
		case err != nil:
			st.State, st.Why = "unservable", "its declaration is no JSON kubecode can read"
		case !plainName(t.Name):
			st.State, st.Why = "unservable", "its name is not plain (letters, digits, _ - . and at most 64 characters): it could read as another or hide text"
		case over.Hidden:
			st.State, st.Why = "hidden", "the operator hides it (tools."+t.Name+".hidden)"
		case len(bySegment[seg]) > 1:
			st.State, st.Why = "unservable", fmt.Sprintf("tools %s all make the operation name %s.%s", strings.Join(bySegment[seg], ", "), u.cfg.Name, seg)
		case pin == nil:
			st.State, st.Why = "new", "not pinned yet: an operator reviews it and runs kubecode upstreams pin"
		case pin.SHA256 != sha:
			st.State, st.Why = "changed", "its declaration moved since it was pinned: an operator reviews the diff and runs kubecode upstreams pin"
			st.Diff = declDiff(pin.Declaration, decl)
		}
		if st.State == "" || st.State == "new" || st.State == "changed" {
			op, read, why, cleaned, err := u.operation(t, seg)
			st.Cleaned = cleaned
			kind := map[bool]string{true: "read", false: "change"}[read]
			switch {
			case err != nil:
				st.State, st.Why = "unservable", err.Error()
			case st.State != "":
				// What it would be once pinned, for the review.
				st.Kind, st.Description = kind, op.Description
				st.Why += "; once pinned, a " + kind + ": " + why
			default:
				op.Fingerprint = sha
				sv := &servedTool{name: t.Name, op: op, read: read, sha: sha, signals: u.signals(t)}
				if t.OutputSchema != nil {
					if raw, err := json.Marshal(t.OutputSchema); err == nil {
						sv.output = &outputValidator{raw: raw}
					}
				} else if pin.Learnt != nil {
					// The result type learnt and pinned: served to every
					// session, and learning goes on from it.
					op.Output = pin.Learnt
					op.Description = strings.TrimSpace(op.Description + " " + inferredNote)
					sv.inferred = pin.Learnt
				}
				st.State, st.Operation, st.Why, st.Description, st.Kind = "served", op.Name, why, op.Description, kind
				ops = append(ops, op)
				served[op.Name] = sv
				fmt.Fprintf(sum, "%s=%s\n", op.Name, sha)
				if sv.inferred != nil {
					raw, _ := json.Marshal(sv.inferred)
					fmt.Fprintf(sum, "%s learnt %s\n", op.Name, raw)
				}
			}
		}
		status = append(status, st)
	}
	if p := pins; p != nil && p.Upstreams[u.cfg.Name] != nil {
		for name, pin := range p.Upstreams[u.cfg.Name].Tools {
			if !listed[name] {
				status = append(status, ToolStatus{Tool: name, State: "gone", Why: "pinned, but the server no longer lists it", SHA256: pin.SHA256})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	sort.Slice(status, func(i, j int) bool { return status[i].Tool < status[j].Tool })
	return ops, served, status, hex.EncodeToString(sum.Sum(nil))[:16]
}

// segment is a tool's name as its operation's last segment: what is no
// letter, digit or "_" becomes "_" (tools.everything.get_env for
// get-env), so that scripts write it as an identifier.
func segment(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

// kindOf decides whether a tool is a read, and says why.
func (u *Upstream) kindOf(t *mcp.Tool) (bool, string) {
	switch u.cfg.Tools[t.Name].Kind {
	case "read":
		return true, "the operator says it is a read"
	case "change":
		return false, "the operator says it is a change"
	}
	ro := t.Annotations != nil && t.Annotations.ReadOnlyHint
	switch {
	case ro && u.cfg.TrustAnnotations:
		return true, "its readOnlyHint, from a server the operator trusts"
	case ro:
		return false, "it says readOnlyHint, but the operator does not trust this server's annotations (trustAnnotations)"
	case t.Annotations == nil:
		return false, "it has no annotations: a tool is a change unless it says otherwise"
	}
	return false, "it does not say readOnlyHint"
}

// signals are what the autopsy flags when the tool is called.
func (u *Upstream) signals(t *mcp.Tool) []catalog.Signal {
	var out []catalog.Signal
	for _, s := range u.cfg.Tools[t.Name].Signals {
		out = append(out, catalog.Signal{Name: s, Detail: fmt.Sprintf("the operator marks tool %s of upstream %s %s", t.Name, u.cfg.Name, s)})
	}
	if u.cfg.TrustAnnotations && t.Annotations != nil && t.Annotations.DestructiveHint != nil && *t.Annotations.DestructiveHint && !t.Annotations.ReadOnlyHint &&
		!slices.Contains(u.cfg.Tools[t.Name].Signals, SignalDestructive) {
		out = append(out, catalog.Signal{Name: SignalDestructive, Detail: fmt.Sprintf("%s.%s says destructiveHint", u.cfg.Name, t.Name)})
	}
	return out
}

// Signals are the signals upstream tools may raise, with what each means
// (bridge.Signaler).
func (u *Upstream) Signals() []catalog.SignalKind { return Signals() }

// Signals are the signals an operator may declare on upstream tools
// (tools.<tool>.signals), with what each flag means.
func Signals() []catalog.SignalKind {
	var out []catalog.SignalKind
	for _, n := range signalNames() {
		out = append(out, catalog.SignalKind{Name: n, Meaning: toolSignals[n]})
	}
	return out
}

// operation is a tool as an operation.
func (u *Upstream) operation(t *mcp.Tool, seg string) (*catalog.Operation, bool, string, []string, error) {
	var removed []string
	rawIn, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, false, "", nil, fmt.Errorf("its inputSchema is no JSON")
	}
	in, err := SchemaOf(rawIn)
	if err != nil {
		return nil, false, "", nil, fmt.Errorf("its inputSchema is no JSON")
	}
	if in.Type == "" {
		in.Type = "object"
	}
	if in.Type != "object" {
		return nil, false, "", nil, fmt.Errorf("its inputSchema is a %s, not an object", in.Type)
	}
	if why := unplain(in, 0); why != "" {
		return nil, false, "", nil, fmt.Errorf("its inputSchema has %s: it could hide text or speak to the model", why)
	}
	cleanSchema(in, "input", &removed, 0)
	var out *catalog.Schema
	if t.OutputSchema != nil {
		rawOut, err := json.Marshal(t.OutputSchema)
		if err == nil {
			out, err = SchemaOf(rawOut)
		}
		if err != nil {
			return nil, false, "", nil, fmt.Errorf("its outputSchema: %v", err)
		}
		if why := unplain(out, 0); why != "" {
			return nil, false, "", nil, fmt.Errorf("its outputSchema has %s: it could hide text or speak to the model", why)
		}
		cleanSchema(out, "output", &removed, 0)
	}
	desc := clean(t.Description, MaxDescription)
	for _, r := range desc.Removed {
		removed = append(removed, "description: "+r)
	}
	title := ""
	if t.Annotations != nil && t.Annotations.Title != "" {
		title = t.Annotations.Title
	} else if t.Title != "" {
		title = t.Title
	}
	titleC := clean(title, 80)
	for _, r := range titleC.Removed {
		removed = append(removed, "title: "+r)
	}
	if confusable(t.Description) || confusable(title) {
		return nil, false, "", nil, fmt.Errorf("its description or title has words in look-alike letters of another script: it could read one way to the operator and another to the model")
	}
	read, why := u.kindOf(t)
	text := desc.Text
	if text == "" {
		text = titleC.Text
	}
	if seg != t.Name {
		text = strings.TrimSpace(text + fmt.Sprintf(" (MCP tool %q)", t.Name))
	}
	kind := "a change: planned for a person's approval"
	if read {
		kind = "a read"
	}
	op := &catalog.Operation{
		Name:        u.cfg.Name + "." + seg,
		Provider:    u.cfg.Name,
		Group:       u.cfg.Name,
		Verb:        seg,
		Description: strings.TrimSpace(text + " [upstream " + u.cfg.Name + "; " + kind + "]"),
		Keywords:    append(nameWords(t.Name), strings.Fields(strings.ToLower(titleC.Text))...),
		Input:       in,
		Output:      out,
		Annotations: catalog.Annotations{ReadOnly: read, Sensitive: u.cfg.Tools[t.Name].Sensitive},
	}
	// An untrusted server's hints say nothing: its changes are
	// destructive and not idempotent, as the specification's defaults.
	op.Annotations.Destructive = !read
	if t.Annotations != nil && u.cfg.TrustAnnotations {
		op.Annotations.Idempotent = t.Annotations.IdempotentHint
		op.Annotations.Destructive = !read && (t.Annotations.DestructiveHint == nil || *t.Annotations.DestructiveHint)
	}
	// A search answer carries the declaration: one tool must not fill an
	// agent's context (a 5,000-property schema, a $ref fan-out).
	if n := tokencount.Count(catalog.Declaration(op)); n > MaxDeclarationTokens {
		return nil, false, "", nil, fmt.Errorf("its declaration is %d tokens, over the %d a tool may take in a search answer", n, MaxDeclarationTokens)
	}
	return op, read, why, removed, nil
}

// MaxDeclarationTokens bounds one upstream tool's TypeScript declaration,
// in o200k_base tokens: a larger one is unservable (kubecode upstreams
// says so). kubecode's own largest declarations are under 1,500.
const MaxDeclarationTokens = 3000

// nameWords splits a tool's name into words for search ("read_file",
// "getEnv" → read, file; get, env).
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			flush()
			prevLower = false
			continue
		case r >= 'A' && r <= 'Z' && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = r >= 'a' && r <= 'z'
	}
	flush()
	return words
}

// lookup returns the served tool behind an operation.
func (u *Upstream) lookup(name string) (*servedTool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.served[name]
	if t == nil {
		return nil, &catalog.CallError{Status: 404, Reason: "NotFound",
			Message: fmt.Sprintf("%s is no longer served: the upstream %s changed its tools since (kubecode upstreams shows why)", name, u.cfg.Name)}
	}
	return t, nil
}

// resolved returns the served tool a call goes to, refusing one whose
// declaration moved since the bridge resolved (and judged) the call: the
// server may have changed or reordered its tools in between.
func (u *Upstream) resolved(ctx context.Context, name string) (*servedTool, error) {
	t, err := u.lookup(name)
	if err != nil {
		return nil, err
	}
	if op := catalog.OperationFrom(ctx); op != nil && op.Fingerprint != t.sha {
		return nil, &catalog.CallError{Status: 409, Reason: "Conflict",
			Message: fmt.Sprintf("%s: upstream %s changed this tool since the call was checked; run the script again", name, u.cfg.Name)}
	}
	return t, nil
}

// Call calls the tool once, within the upstream's concurrency and
// timeout and the execution's deadline.
func (u *Upstream) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	t, err := u.resolved(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := u.breaker.allow(u.opts.Now()); err != nil {
		return nil, &catalog.CallError{Status: 503, Reason: "Unavailable", Message: fmt.Sprintf("%s: upstream %s %v", name, u.cfg.Name, err)}
	}
	defer u.breaker.release() // a trial call that ends unjudged lets the next try
	parent := ctx
	timeout := time.Duration(u.cfg.Timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case u.slots <- struct{}{}:
		defer func() { <-u.slots }()
	case <-ctx.Done():
		return nil, u.timedOut(parent, name, timeout, "waiting for one of its "+fmt.Sprint(u.cfg.Concurrency)+" call slots", false)
	}
	cs, err := u.sessionFor(ctx)
	if cs == nil {
		var ce *catalog.CallError
		if errors.As(err, &ce) {
			return nil, err // the caller's, not the upstream's failure
		}
		if u.opts.Log != nil {
			u.opts.Log.Warn("upstream unreachable", "upstream", u.cfg.Name, "error", err)
		}
		if parent.Err() == nil {
			u.breaker.fail(u.opts.Now(), errors.New("unreachable"))
		}
		// What failed (a command line, a server's stderr) may hold what
		// no script should see: the operator reads it in kubecode
		// upstreams and the server's log.
		return nil, &catalog.CallError{Status: 503, Reason: "Unavailable",
			Message: fmt.Sprintf("%s: upstream %s cannot be reached now (kubecode upstreams and the server's log say why)", name, u.cfg.Name)}
	}
	if t2, err := u.lookup(name); err != nil || t2.sha != t.sha {
		if err == nil {
			err = fmt.Errorf("%s: the upstream changed this tool's declaration since it was pinned; it is quarantined until an operator pins it again", name)
		}
		return nil, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: t.name, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			if parent.Err() == nil { // the upstream's timeout, not the execution's
				u.breaker.fail(u.opts.Now(), errors.New("timed out"))
			}
			return nil, u.timedOut(parent, name, timeout, "", true)
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			u.breaker.succeed() // it answered
			return nil, &catalog.CallError{Status: 400, Reason: "Invalid", Message: fmt.Sprintf("%s: the upstream refused the call: %s", name, cut(werr.Message, 1000))}
		}
		if u.opts.Log != nil {
			u.opts.Log.Warn("upstream call failed", "upstream", u.cfg.Name, "tool", t.name, "error", err, "stderr", u.stderr.String())
		}
		u.breaker.fail(u.opts.Now(), errors.New("the connection failed"))
		return nil, &catalog.CallError{Status: 502, Reason: "UpstreamFailed",
			Message: fmt.Sprintf("%s: the connection to upstream %s failed during the call (it may have run; kubecode upstreams and the server's log say why)", name, u.cfg.Name)}
	}
	u.breaker.succeed()
	if t.output != nil && res.StructuredContent != nil && !res.IsError {
		if err := t.output.validate(name, res.StructuredContent); err != nil {
			return nil, &catalog.CallError{Status: 502, Reason: "InvalidResult", Message: err.Error()}
		}
	}
	out, err := resultOf(name, res)
	if err == nil && t.output == nil {
		u.learn(name, t.sha, out)
	}
	return out, err
}

// learn merges an answer's shape into the tool's learnt result type. What
// is learnt is not served: it waits, shown by kubecode upstreams, until an
// operator pins it (the keys are answers' data, and every session reads a
// declaration); the pinned type is served from then on.
func (u *Upstream) learn(name, sha string, out json.RawMessage) {
	u.mu.Lock()
	t := u.served[name]
	if t == nil || t.sha != sha || t.lessons >= inferLessons {
		u.mu.Unlock()
		return
	}
	t.lessons++
	u.mu.Unlock()
	if u.opts.Secrets != nil {
		// A key that is a secret value must not become a property name
		// of a declaration: hidden, it is no field.
		out, _ = u.opts.Secrets.ScrubJSON(out)
	}
	var v any
	if json.Unmarshal(out, &v) != nil {
		return
	}
	learnt := inferSchema(v, 0)
	u.mu.Lock()
	if u.served[name] != t {
		u.mu.Unlock()
		return
	}
	merged := mergeSchema(t.inferred, learnt, 0)
	if sameSchema(t.inferred, merged) {
		u.mu.Unlock()
		return
	}
	t.inferred = merged
	if u.learnt == nil {
		u.learnt = map[string]*LearntType{}
	}
	u.learnt[t.name] = &LearntType{SHA256: sha, Type: merged}
	u.mu.Unlock()
	if path := LearntPath(u.opts.PinsPath); path != "" {
		if err := writeLearnt(path, u.cfg.Name, t.name, sha, merged); err != nil && u.opts.Log != nil {
			u.opts.Log.Warn("upstream: a learnt result type is not kept for kubecode upstreams to show", "upstream", u.cfg.Name, "tool", t.name, "error", err)
		}
	}
}

// inferredNote marks a declaration whose result type was learnt.
const inferredNote = "(Its result type was learnt from its answers and pinned by an operator: the tool declares none.)"

// timedOut says which deadline ended a call: the execution's (parent's)
// or the upstream's timeout; sent says the call had gone out, so it may
// have run.
func (u *Upstream) timedOut(parent context.Context, name string, timeout time.Duration, while string, sent bool) error {
	if while != "" {
		while = " (" + while + ")"
	}
	msg := fmt.Sprintf("%s did not answer within %s, the timeout of upstream %s%s", name, timeout, u.cfg.Name, while)
	if parent.Err() != nil {
		msg = name + ": the execution's deadline ended before the upstream answered" + while
	}
	if sent {
		msg += "; the call was sent, so it may have run"
	}
	return &catalog.CallError{Status: 504, Reason: "Timeout", Message: msg}
}

// Preview describes a call as a change: upstream, tool and the exact
// arguments, as a person approves them. An MCP tool has no dry run, so
// nothing is called; the plan binds the tool's pinned fingerprint (a tool
// that changes before the approval diverges). The result a planned call
// gives the script is an empty object.
func (u *Upstream) Preview(ctx context.Context, name string, args json.RawMessage) (*catalog.Change, json.RawMessage, error) {
	t, err := u.resolved(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, nil, fmt.Errorf("%s: arguments must be an object", name)
	}
	if u.cfg.Cluster != "" {
		// What it sends to the cluster passes none of kubecode's checks
		// (pod security, access, namespaces): no person could judge it
		// from an argument list.
		return nil, nil, &catalog.CallError{Status: http.StatusForbidden, Reason: "Forbidden",
			Message: fmt.Sprintf("refused: upstream %s acts on cluster %s, and its changes pass none of the checks kubecode's own operations do (pod security, access, namespaces): make this change with tools.kubernetes.* (search_tools), which plans it for a person", u.cfg.Name, u.cfg.Cluster)}
	}
	c := &catalog.Change{Action: "call", Kind: "MCP tool", Name: name, Upstream: u.cfg.Name, Existed: true,
		Validated:   "an MCP tool has no dry run: nothing was called; the approved run makes this call once",
		Diff:        []string{fmt.Sprintf("calls tool %s of upstream %s", t.name, u.cfg.Name)},
		Fingerprint: t.sha,
		Signals:     slices.Clone(t.signals),
		Call:        slices.Clone(args),
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sensitive := u.cfg.Tools[t.name].Sensitive
	for _, k := range keys {
		if sensitive || catalog.SecretName.MatchString(k) {
			// The plan binds the value; a person approves without reading it.
			c.Fields = append(c.Fields, catalog.Field{Path: k, Before: "(none)", After: "(value not shown)"})
			c.Diff = append(c.Diff, k+": (value not shown)")
			continue
		}
		m[k] = hideSecrets(m[k])
		v := string(m[k])
		var s string
		if json.Unmarshal(m[k], &s) == nil {
			v = s
		}
		c.Fields = append(c.Fields, catalog.Field{Path: k, Before: "(none)", After: v})
		// The line shows the argument as JSON, so a value's line breaks
		// read as \n and it stays one line; the field holds it whole.
		line := string(m[k])
		if len(line) > 200 {
			line = strings.ToValidUTF8(line[:200], "") + fmt.Sprintf("… (%d bytes; in full on the page and in kubecode plans ID)", len(m[k]))
		}
		c.Diff = append(c.Diff, k+": "+line)
	}
	if len(keys) == 0 {
		c.Diff = append(c.Diff, "with no arguments")
	}
	// What the call returns to the script passes the secret boundary; a
	// tool that runs a command where a Secret is can hand back what no
	// scrubber knows, and the reviewer should know that (an upstream's
	// own exec).
	c.Diff = append(c.Diff, "its answer passes the secret boundary: known forms of secret values hidden, not what the tool computes from them")
	return c, json.RawMessage("{}"), nil
}

// hideSecrets is a JSON value with the values of its secret-looking keys
// (catalog.SecretName), at any depth, shown as "(value not shown)".
func hideSecrets(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(v any, depth int) any
	walk = func(v any, depth int) any {
		if depth > 64 {
			return v
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if catalog.SecretName.MatchString(k) {
					x[k] = "(value not shown)"
				} else {
					x[k] = walk(e, depth+1)
				}
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e, depth+1)
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v, 0))
	if err != nil {
		return raw
	}
	if string(out) == string(raw) {
		return raw
	}
	return out
}

// Snapshot records a tool call for a revert: the call itself (a tool
// call changes no object kubecode can read back).
func (u *Upstream) Snapshot(_ context.Context, op string, c *catalog.Change, _ json.RawMessage) (*catalog.Snapshot, error) {
	if c.Upstream == "" {
		return nil, fmt.Errorf("%s: not a tool call", op)
	}
	u.mu.Lock()
	t := u.served[op]
	u.mu.Unlock()
	tool := strings.TrimPrefix(op, u.cfg.Name+".")
	if t != nil {
		tool = t.name
	}
	if u.cfg.Tools[tool].Inverse == nil {
		return nil, catalog.Irreversible(fmt.Sprintf("the call of upstream tool %s is not undone: the operator declares no inverse for it (tools.%s.inverse)", tool, tool))
	}
	return &catalog.Snapshot{Op: op, Kind: c.Kind, Name: c.Name, Exists: true, Content: c.Call}, nil
}

// Restore returns the operator's inverse of a tool call (tools.<tool>.inverse),
// its arguments filled from the undone call's; without one, it says the
// call is not undone.
func (u *Upstream) Restore(_ context.Context, before, _ *catalog.Snapshot) (string, json.RawMessage, error) {
	u.mu.Lock()
	t := u.served[before.Op]
	u.mu.Unlock()
	tool := strings.TrimPrefix(before.Op, u.cfg.Name+".")
	if t != nil {
		tool = t.name
	}
	inv := u.cfg.Tools[tool].Inverse
	if inv == nil {
		return "", nil, fmt.Errorf("a call of upstream tool %s is not undone: the operator declares no inverse for it (tools.%s.inverse); left alone", tool, tool)
	}
	var args map[string]any
	if err := json.Unmarshal(before.Content, &args); err != nil {
		return "", nil, fmt.Errorf("the call of %s was not recorded; left alone", tool)
	}
	out := map[string]any{}
	for k, v := range inv.Args {
		ref, ok := v.(string)
		if !ok || !strings.HasPrefix(ref, "$args.") {
			out[k] = v
			continue
		}
		val, found := lookupPath(args, strings.Split(strings.TrimPrefix(ref, "$args."), "."))
		if !found {
			return "", nil, fmt.Errorf("the inverse of %s needs argument %s, which the call did not give; left alone", tool, strings.TrimPrefix(ref, "$args."))
		}
		out[k] = val
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return "", nil, err
	}
	return u.cfg.Name + "." + segment(inv.Tool), raw, nil
}

// lookupPath is the value at a dotted path of v.
func lookupPath(v any, path []string) (any, bool) {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// Unserved says which of the server's tools are kept out and why: a script
// calling one is told at its type check, and search says so.
func (u *Upstream) Unserved() []catalog.Unserved {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []catalog.Unserved
	for _, t := range u.tools {
		if t.State == "served" || t.State == "hidden" || !plainName(t.Tool) {
			continue
		}
		out = append(out, catalog.Unserved{Name: u.cfg.Name + "." + segment(t.Tool), Words: []string{t.Tool, strings.Join(nameWords(t.Tool), " ")},
			Why: fmt.Sprintf("%s.%s is not served: tool %s of upstream %s is quarantined (%s)", u.cfg.Name, segment(t.Tool), t.Tool, u.cfg.Name, t.Why)})
	}
	return out
}

// headerTransport adds the upstream's headers to each request, read
// afresh (a rotated token is picked up).
type headerTransport struct {
	headers map[string]Secret
	base    http.RoundTripper
	// host is the configured URL's: credentials go to it only, never
	// along a redirect elsewhere.
	host string
	// bearer, when set, is a user's token (made by the token service):
	// it is the request's Authorization, whatever headers say.
	bearer func() string
	// reg and name: where the headers' credentials are registered as
	// they are read (Options.Secrets), and whose they are.
	reg  *secrets.Registry
	name string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != h.host {
		return nil, fmt.Errorf("upstream request to %s, not the configured host: refused (credentials go to %s only)", r.URL.Host, h.host)
	}
	if len(h.headers) > 0 || h.bearer != nil {
		r = r.Clone(r.Context())
		for k, s := range h.headers {
			v, err := s.value()
			if err != nil {
				return nil, fmt.Errorf("header %s: %w", k, err)
			}
			s.register(h.reg, v, "upstream "+h.name+" header "+k)
			r.Header.Set(k, v)
		}
		if h.bearer != nil {
			r.Header.Set("Authorization", "Bearer "+h.bearer())
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = &lineLimit{rc: resp.Body, max: maxLine}
	}
	return resp, err
}

// maxLine bounds one line of an upstream's HTTP answer (one JSON body,
// one event of a stream), as the stdio transport bounds one message.
const maxLine = 16 << 20

// lineLimit fails a body once a line runs past max bytes: a server cannot
// make kubecode hold an answer of any size.
type lineLimit struct {
	rc   io.ReadCloser
	max  int
	line int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			l.line = 0
		} else if l.line++; l.line > l.max {
			return 0, fmt.Errorf("the upstream's answer runs past %d MiB in one line", l.max>>20)
		}
	}
	return n, err
}

func (l *lineLimit) Close() error { return l.rc.Close() }

// httpClient is the client of a url upstream: its headers (or a user's
// bearer) on requests to its host only.
func (u *Upstream) httpClient(bearer func() string) *http.Client {
	host := ""
	if pu, err := url.Parse(u.cfg.URL); err == nil {
		host = pu.Host
	}
	return &http.Client{
		Transport: &headerTransport{headers: u.cfg.Headers, base: http.DefaultTransport, host: host, bearer: bearer, reg: u.opts.Secrets, name: u.cfg.Name},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Host != host {
				return fmt.Errorf("upstream %s redirects to another host (%s): not followed", u.cfg.Name, req.URL.Host)
			}
			return nil
		},
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.b), "?"))
}
