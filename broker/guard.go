package broker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP endpoint's guards, in the order a request meets them:
//   - Origin and Host (DNS rebinding): a browser page on another site may
//     send requests to a server on the user's machine or network, under a
//     host name of its own that resolves to the server's address. Requests
//     whose Origin is not allowed, or whose Host is not one of the
//     server's, get 403 before anything else happens.
//   - The body: read whole before the handler runs, within a deadline and
//     a size limit, so a slow or endless body holds no handler.
//   - Sessions: a cap on open sessions, in all and for one caller, so that
//     opening sessions cannot exhaust the server; idle ones close.

// hostGuard checks the Origin and Host headers of requests.
type hostGuard struct {
	origins map[string]bool // scheme://host[:port], lower case
	hosts   map[string]bool // host names and addresses, lower case, no port
	anyHost bool
	// loopback allows the origins of loopback hosts (a local client's
	// web page, MCP Inspector).
	loopback bool
}

func newHostGuard(opts *HTTPOptions) *hostGuard {
	g := &hostGuard{origins: map[string]bool{}, hosts: map[string]bool{}, loopback: opts.LoopbackOrigins}
	for _, o := range opts.AllowedOrigins {
		g.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	hosts := opts.AllowedHosts
	if hosts == nil {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	for _, h := range hosts {
		if h == "*" {
			g.anyHost = true
		}
		g.hosts[strings.ToLower(hostOnly(h))] = true
	}
	return g
}

// check returns why r is refused, or "".
func (g *hostGuard) check(r *http.Request) string {
	if !g.anyHost && !g.hosts[strings.ToLower(hostOnly(r.Host))] {
		return fmt.Sprintf("Host %q is not this server's: a page may have reached it under another name (DNS rebinding); a client that reaches the server by this name needs --allowed-hosts %s", r.Host, hostOnly(r.Host))
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return "" // not a browser's cross-site request
	}
	if g.origins[strings.ToLower(origin)] {
		return ""
	}
	if u, err := url.Parse(origin); err == nil && g.loopback && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Hostname()) {
		return ""
	}
	return fmt.Sprintf("Origin %q is not allowed: browsers send it from pages of other sites; allow a web client's origin with --allowed-origins %s", origin, origin)
}

// checkPage checks a request to the approval page: a Host of this
// server's, and an Origin (browsers send one with a form's POST) that is
// the page's own — no other site's page may decide on a plan.
func (g *hostGuard) checkPage(r *http.Request) string {
	if !g.anyHost && !g.hosts[strings.ToLower(hostOnly(r.Host))] {
		return fmt.Sprintf("Host %q is not this server's: a page may have reached it under another name (DNS rebinding); a client that reaches the server by this name needs --allowed-hosts %s", r.Host, hostOnly(r.Host))
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	if u, err := url.Parse(origin); err == nil && strings.EqualFold(u.Host, r.Host) {
		return ""
	}
	return fmt.Sprintf("Origin %q is not the approval page's own: only the page itself may post decisions", origin)
}

// hostOnly returns the host of a Host header or address, without its port
// and brackets.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.Trim(h, "[]")
}

func isLoopbackHost(h string) bool {
	h = strings.ToLower(hostOnly(h))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ServerHosts returns the names and addresses a server listening on addr
// is reached by: for a loopback address, the loopback names; for one
// address, that address; for all addresses (":8080", "0.0.0.0:8080"), the
// machine's interface addresses, its host name and the loopback names.
// Other names (a DNS name, a Service's, an ingress's) must be allowed
// explicitly.
func ServerHosts(addr net.Addr) []string {
	host := hostOnly(addr.String())
	ip := net.ParseIP(host)
	loopback := []string{"localhost", "127.0.0.1", "::1"}
	switch {
	case ip == nil:
		return append([]string{host}, loopback...)
	case ip.IsLoopback():
		return loopback
	case !ip.IsUnspecified():
		return []string{ip.String()}
	}
	out := loopback
	if name, err := os.Hostname(); err == nil {
		out = append(out, name)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				out = append(out, n.IP.String())
			}
		}
	}
	return out
}

// readBody reads r's body whole within timeout and max bytes, so that the
// handler gets it from memory; it answers the request itself (413, 408)
// and returns false when the body is too big or too slow.
func readBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		// The rest of the body is not waited for: the connection closes
		// (a cleared deadline would let the server wait for it forever).
		w.Header().Set("Connection", "close")
	} else if deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		http.Error(w, fmt.Sprintf("request body too large: at most %d bytes; a script that needs more data should read it from the cluster", max), http.StatusRequestEntityTooLarge)
		return false
	case errors.As(err, &ne) && ne.Timeout():
		http.Error(w, fmt.Sprintf("request body not received within %s", timeout), http.StatusRequestTimeout)
		return false
	case err != nil:
		http.Error(w, "could not read the request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return true
}

// sessionLimiter caps the open sessions of a server, in all and by caller.
type sessionLimiter struct {
	srv       *mcp.Server
	max, each int
	reclaim   time.Duration // see HTTPOptions.ReclaimIdle
	log       *slog.Logger

	mu      sync.Mutex
	owner   map[string]string    // session id → caller
	pending map[string]int       // caller → sessions being opened
	used    map[string]time.Time // session id → when a request of it last ended (or it opened)
	busy    map[string]int       // session id → its requests under way
	// left are sessions whose client opened its stream (a GET) and
	// closed it again, with nothing under way since: what the TypeScript
	// SDK's close() leaves behind, since it aborts the stream and sends
	// no DELETE. A client still there reopens its stream.
	left map[string]bool
}

// admit serves a request that opens a session (one without a session
// id), when the caps allow another; it notes when other requests of a
// session begin and end.
func (l *sessionLimiter) admit(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		l.mu.Lock()
		l.busy[id]++
		delete(l.left, id)
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			if l.busy[id]--; l.busy[id] <= 0 {
				delete(l.busy, id)
			}
			if _, ok := l.owner[id]; ok {
				l.used[id] = time.Now()
				if r.Method == http.MethodGet && l.busy[id] == 0 {
					l.left[id] = true
				}
			}
			l.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		next.ServeHTTP(w, r)
		return
	}
	who := callerKeyOf(r)
	l.mu.Lock()
	live := map[string]*mcp.ServerSession{}
	for s := range l.srv.Sessions() {
		live[s.ID()] = s
	}
	total, mine := 0, l.pending[who]
	var idlest string
	for id, c := range l.owner {
		if live[id] == nil {
			delete(l.owner, id)
			delete(l.used, id)
			delete(l.left, id)
			continue
		}
		if c != who {
			continue
		}
		mine++
		if l.reclaim <= 0 || l.busy[id] > 0 || !l.left[id] && time.Since(l.used[id]) < l.reclaim {
			continue
		}
		// A session its client left goes before one merely idle; then
		// the least recently used.
		if idlest == "" || l.left[id] && !l.left[idlest] || l.left[id] == l.left[idlest] && l.used[id].Before(l.used[idlest]) {
			idlest = id
		}
	}
	total = len(l.owner)
	for _, n := range l.pending {
		total += n
	}
	if mine >= l.each && idlest != "" {
		// The caller's least recently used session, idle for a while with
		// nothing under way, makes room: most likely one its client left
		// without ending it.
		idle := time.Since(l.used[idlest])
		delete(l.owner, idlest)
		delete(l.used, idlest)
		delete(l.left, idlest)
		mine--
		total--
		go func(s *mcp.ServerSession) { _ = s.Close() }(live[idlest])
		if l.log != nil {
			l.log.Info("closed a caller's idlest session to open another", "caller", who, "idle", idle.Round(time.Second), "sessions", l.each)
		}
	}
	if mine >= l.each {
		l.mu.Unlock()
		w.Header().Set("Retry-After", "60")
		wait := fmt.Sprintf("wait: idle sessions close after %s", sessionTimeout)
		if l.reclaim > 0 {
			wait = fmt.Sprintf("wait: once one is idle for %s it makes room for the next", l.reclaim)
		}
		http.Error(w, fmt.Sprintf("too many sessions for one caller: you have %d open, at most %d, each in use; close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id) or %s", mine, l.each, wait), http.StatusTooManyRequests)
		return
	}
	if total >= l.max {
		l.mu.Unlock()
		w.Header().Set("Retry-After", "60")
		http.Error(w, fmt.Sprintf("too many sessions: %d are open, the most this server keeps; close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id) or wait: idle sessions close after %s", total, sessionTimeout), http.StatusServiceUnavailable)
		return
	}
	l.pending[who]++
	l.mu.Unlock()
	// The session counts as the caller's from the moment its id is sent
	// (the client may open the next one before this handler returns).
	var once sync.Once
	settle := func(id string) {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.pending[who]--; l.pending[who] <= 0 {
				delete(l.pending, who)
			}
			if id != "" {
				l.owner[id] = who
				l.used[id] = time.Now()
			}
		})
	}
	defer settle("")
	next.ServeHTTP(&sessionWriter{ResponseWriter: w, opened: settle}, r)
}

// callerKeyOf names whom a request is for: its bearer token's user, or,
// without authentication, its client's address.
func callerKeyOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "user:" + ti.UserID
	}
	// Without authentication a header says nothing of who sends it.
	return "addr:" + hostOnly(r.RemoteAddr)
}

// sessionWriter reports the session id a response opens, as it sends its
// headers.
type sessionWriter struct {
	http.ResponseWriter
	opened func(id string)
	sent   bool
}

func (w *sessionWriter) WriteHeader(code int) {
	if !w.sent {
		w.sent = true
		if code < 300 {
			w.opened(w.Header().Get("Mcp-Session-Id"))
		} else {
			w.opened("")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	if !w.sent {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *sessionWriter) Flush() {
	if !w.sent {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
