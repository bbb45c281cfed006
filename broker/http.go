package broker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/sync/singleflight"
)

// HTTPOptions configure the HTTP endpoint. A nil *HTTPOptions means no
// authentication and stateful sessions.
type HTTPOptions struct {
	// Authenticate, when set, makes every MCP request carry a bearer
	// token, and each session act for whom it is for: it returns the
	// caller (catalog.Caller) or an error, one wrapping
	// catalog.ErrUnauthenticated for a token nobody accepts. Requests
	// without a valid token get 401 with a WWW-Authenticate header
	// pointing at the protected resource metadata (RFC 9728), as the MCP
	// authorization spec says. Nil means no authentication: every session
	// acts with the server's identity.
	Authenticate func(ctx context.Context, token string) (*catalog.Caller, error)
	// AuthCacheTTL is how long an accepted token is trusted before it is
	// checked again. Zero means one minute.
	AuthCacheTTL time.Duration
	// ResourceURL is the endpoint's public URL, as clients reach it
	// ("https://kubecode.example.com"), for the protected resource
	// metadata. Zero means the scheme and host of each request.
	ResourceURL string
	// AuthorizationServers are the OAuth authorization servers (issuer
	// URLs) whose tokens the endpoint accepts, for the metadata.
	AuthorizationServers []string
	// Stateless serves every request on its own, without session state:
	// replicas behind one address can serve any request (plans are
	// stateless already; replicas need one plan key).
	Stateless bool
	// Metrics, when set, is served at /metrics, behind the same
	// authentication as /mcp when there is one.
	Metrics http.Handler

	// AllowedHosts are the names and addresses clients reach the server
	// by (Host headers, ports ignored); a request with another Host gets
	// 403, so a page that reaches the server under a name of its own (DNS
	// rebinding) is refused. "*" allows any. Nil means the loopback names
	// (localhost, 127.0.0.1, ::1); ServerHosts lists a listener's.
	AllowedHosts []string
	// AllowedOrigins are the origins ("https://app.example.com") whose web
	// pages may call the endpoint; a request with another Origin header
	// gets 403. Requests without one (clients that are not browsers) pass.
	// Nil means none.
	AllowedOrigins []string
	// LoopbackOrigins also allows origins on loopback hosts
	// (http://localhost:6274): for a server bound to loopback, whose
	// browser clients run on the same machine.
	LoopbackOrigins bool
	// MaxBodyBytes bounds a request body. Zero means 4 MiB.
	MaxBodyBytes int64
	// BodyTimeout is how long a request's body may take to arrive. Zero
	// means 30 s.
	BodyTimeout time.Duration
	// MaxSessions bounds the open sessions, MaxSessionsPerCaller those of
	// one caller (a token's user; without authentication, a client
	// address). Idle sessions close after 30 minutes. Zero means 1000 and
	// 100.
	MaxSessions, MaxSessionsPerCaller int
	// ReclaimIdle: a caller at MaxSessionsPerCaller who opens another
	// session has one of its sessions closed instead of being refused: a
	// session whose client closed its stream and made no request since
	// (as the TypeScript SDK's close() leaves it: it aborts the stream and
	// ends no session), else the least recently used one with no request
	// under way and none for this long. One client could otherwise lock
	// every client of its address out for half an hour. Zero means a
	// minute; negative means never.
	ReclaimIdle time.Duration
	// Approvals, when set, serves the approval page at its URL's path
	// (as ApprovalPageHandler does), behind the same Host checks; its
	// Authenticate defaults to this endpoint's.
	Approvals *ApprovalOptions
}

// HTTPHandler serves the MCP streamable HTTP transport at /mcp, with
// /healthz (the process serves), /readyz (the catalog is loaded: the
// cluster answered), /metrics (when HTTPOptions.Metrics is set) and, with
// authentication, /.well-known/oauth-protected-resource.
func (b *Broker) HTTPHandler(opts *HTTPOptions) http.Handler {
	if opts == nil {
		opts = &HTTPOptions{}
	}
	maxBody, bodyTimeout := opts.MaxBodyBytes, opts.BodyTimeout
	if maxBody <= 0 {
		maxBody = 4 << 20
	}
	if bodyTimeout <= 0 {
		bodyTimeout = 30 * time.Second
	}
	srv := b.Server()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: opts.Stateless, Logger: b.opts.Logger, SessionTimeout: sessionTimeout, MaxRequestBodyBytes: maxBody,
			// The guard below checks Host names, loopback ones included.
			DisableLocalhostProtection: true})
	if !opts.Stateless {
		l := &sessionLimiter{srv: srv, max: opts.MaxSessions, each: opts.MaxSessionsPerCaller, reclaim: opts.ReclaimIdle,
			owner: map[string]string{}, pending: map[string]int{}, used: map[string]time.Time{}, busy: map[string]int{}, left: map[string]bool{}, log: b.opts.Logger}
		if l.reclaim == 0 {
			l.reclaim = time.Minute
		}
		if l.max <= 0 {
			l.max = 1000
		}
		if l.each <= 0 {
			l.each = 100
		}
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.admit(w, r, next) })
	}
	// Bodies are read after authentication: an unauthenticated client
	// holds no buffer.
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if readBody(w, r, maxBody, bodyTimeout) {
			inner.ServeHTTP(w, r)
		}
	})
	var metrics http.Handler = opts.Metrics
	mux := http.NewServeMux()
	if opts.Authenticate != nil {
		v := &verifier{authenticate: opts.Authenticate, ttl: opts.AuthCacheTTL, seen: map[[32]byte]accepted{}, log: b.opts.Logger}
		if v.ttl <= 0 {
			v.ttl = time.Minute
		}
		authenticated := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth.RequireBearerToken(v.verify, &auth.RequireBearerTokenOptions{
					ResourceMetadataURL:    baseURL(opts.ResourceURL, r) + metadataPath,
					AllowMissingExpiration: true,
				})(next).ServeHTTP(w, r)
			})
		}
		h = authenticated(h)
		if metrics != nil {
			metrics = authenticated(metrics)
		}
		mux.HandleFunc(metadataPath, func(w http.ResponseWriter, r *http.Request) {
			auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
				Resource:               baseURL(opts.ResourceURL, r) + "/mcp",
				AuthorizationServers:   opts.AuthorizationServers,
				BearerMethodsSupported: []string{"header"},
				ResourceName:           "kubecode",
			}).ServeHTTP(w, r)
		})
	}
	guard := newHostGuard(opts)
	guarded := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if why := guard.check(r); why != "" {
				http.Error(w, "Forbidden: "+why, http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	mux.Handle("/mcp", guarded(h))
	if opts.Approvals != nil {
		ao := *opts.Approvals
		if ao.Authenticate == nil {
			ao.Authenticate = opts.Authenticate
		}
		if path, page, err := b.guardedPage(&ao, guard); err != nil {
			b.opts.Logger.Error("the approval page is not served", "error", err)
		} else {
			mux.Handle(path+"/", page)
		}
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	// The catalog loads in the background from the start; /readyz says
	// whether it has, and starts another load when the last failed.
	go b.warm()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.ready() {
			go b.warm()
			http.Error(w, "not ready: the catalog is not loaded yet (the cluster has not answered)", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if metrics != nil {
		mux.Handle("/metrics", guarded(metrics))
	}
	return mux
}

// sessionTimeout closes stateful sessions idle this long.
const sessionTimeout = 30 * time.Minute

// warmTimeout bounds one background load of the catalog.
const warmTimeout = 2 * time.Minute

// warm loads the catalog, once at a time, with a context of its own, and
// starts the idle script workers.
func (b *Broker) warm() {
	if !b.warming.CompareAndSwap(false, true) {
		return
	}
	defer b.warming.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), warmTimeout)
	defer cancel()
	if _, err := b.state(ctx); err != nil {
		b.opts.Logger.Warn("the catalog did not load", "error", err)
	}
	if b.opts.Pool != nil {
		b.opts.Pool.Prewarm()
	}
}

// Warm loads the catalog and starts the idle script workers in the
// background, so that the first execution finds both ready. The HTTP
// handler does it as it is made; a stdio server calls it as it starts.
func (b *Broker) Warm() { go b.warm() }

// ready says whether the catalog has loaded.
func (b *Broker) ready() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st != nil
}

// metadataPath is where the protected resource metadata is served.
const metadataPath = "/.well-known/oauth-protected-resource"

// baseURL is the endpoint's public URL: configured, or the request's.
func baseURL(configured string, r *http.Request) string {
	if configured != "" {
		return strings.TrimSuffix(configured, "/")
	}
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// verifier checks bearer tokens with the authenticate function, trusting
// an accepted token for ttl. Tokens are kept only as digests.
type verifier struct {
	authenticate func(ctx context.Context, token string) (*catalog.Caller, error)
	ttl          time.Duration
	log          *slog.Logger

	mu     sync.Mutex
	seen   map[[32]byte]accepted
	checks singleflight.Group
}

// accepted is a checked token: its caller, or nil for a rejected one.
type accepted struct {
	caller  *catalog.Caller
	expires time.Time
}

// rejectedTTL is how long a rejected token stays rejected without asking
// again, so junk tokens cost the API server little.
const rejectedTTL = 10 * time.Second

// maxCachedTokens bounds the verifier's cache.
const maxCachedTokens = 10000

func (v *verifier) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	v.mu.Lock()
	a, ok := v.seen[key]
	v.mu.Unlock()
	if !ok || now.After(a.expires) {
		// One check per token at a time, with a context of its own.
		res, err, _ := v.checks.Do(string(key[:]), func() (any, error) {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			c, err := v.authenticate(cctx, token)
			if errors.Is(err, catalog.ErrUnauthenticated) {
				return accepted{expires: time.Now().Add(rejectedTTL)}, nil
			}
			if err != nil {
				return nil, err
			}
			return accepted{caller: c, expires: time.Now().Add(v.ttl)}, nil
		})
		if err != nil {
			v.log.Error("authentication failed", "error", err)
			return nil, errors.New("authentication is unavailable: the server could not check the token (see its log)")
		}
		a = res.(accepted)
		v.mu.Lock()
		if len(v.seen) >= maxCachedTokens {
			for k, x := range v.seen {
				if now.After(x.expires) {
					delete(v.seen, k)
				}
			}
			if len(v.seen) >= maxCachedTokens {
				clear(v.seen)
			}
		}
		v.seen[key] = a
		v.mu.Unlock()
	}
	if a.caller == nil {
		return nil, fmt.Errorf("%w: the Kubernetes API server does not accept this token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: a.caller.User, Extra: map[string]any{callerKey: a.caller}}, nil
}

// callerKey is where a request's TokenInfo holds its caller.
const callerKey = "kubecode.caller"

// callerOf returns whom a tool call acts for: the caller its bearer token
// authenticated, or nil (the server's identity).
func callerOf(req *mcp.CallToolRequest) *catalog.Caller {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return nil
	}
	c, _ := req.Extra.TokenInfo.Extra[callerKey].(*catalog.Caller)
	return c
}

// ApprovalPageHandler serves only the approval page (a stdio server's, on
// a loopback port of its own), behind the Host checks of allowedHosts, at
// the path it returns.
func (b *Broker) ApprovalPageHandler(opts *ApprovalOptions, allowedHosts []string) (string, http.Handler, error) {
	return b.guardedPage(opts, newHostGuard(&HTTPOptions{AllowedHosts: allowedHosts}))
}

// guardedPage is the approval page behind guard's page checks.
func (b *Broker) guardedPage(opts *ApprovalOptions, guard *hostGuard) (string, http.Handler, error) {
	page, err := b.approvalHandler(opts)
	if err != nil {
		return "", nil, err
	}
	return page.path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := guard.checkPage(r); why != "" {
			http.Error(w, "Forbidden: "+why, http.StatusForbidden)
			return
		}
		page.ServeHTTP(w, r)
	}), nil
}
