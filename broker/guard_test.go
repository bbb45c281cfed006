package broker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headers sets request headers on every request: what a browser page
// (Origin) or a rebinding host name (Host) would send.
type headers struct {
	host, origin, token string
}

func (h headers) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if h.host != "" {
		req.Host = h.host
	}
	if h.origin != "" {
		req.Header.Set("Origin", h.origin)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// guardedServer serves a read-only broker over HTTP with opts.
func guardedServer(t *testing.T, opts *broker.HTTPOptions) *httptest.Server {
	t.Helper()
	a, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	br := bridge.New([]bridge.Provider{a}, &bridge.Options{Policy: policy.Policy{Mode: policy.ModeReadOnly}})
	t.Cleanup(func() { _ = br.Close() })
	b := broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(b.HTTPHandler(opts))
	t.Cleanup(srv.Close)
	return srv
}

// connectHTTP connects a real MCP client to url/mcp through rt.
func connectHTTP(url string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "guard-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, nil)
}

// initialize sends a raw initialize request to url/mcp through rt and
// returns the answer and its body.
func initialize(t *testing.T, url string, rt http.RoundTripper) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// TestOriginAndHost: a web page cannot drive the server through the
// user's browser. A request under a host name that is not the server's (a
// DNS rebinding page's) or from another site's page (its Origin) is
// refused with 403 before any session starts; MCP clients, which send no
// Origin, and allowed origins connect and run scripts.
func TestOriginAndHost(t *testing.T) {
	lan := &net.TCPAddr{IP: net.IPv4zero, Port: 8080} // bound to every address, as on a LAN
	srv := guardedServer(t, &broker.HTTPOptions{
		AllowedHosts:    append(broker.ServerHosts(lan), "kubecode.internal"),
		AllowedOrigins:  []string{"https://console.example.com"},
		LoopbackOrigins: true,
	})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name    string
		h       headers
		refused string // the start of the 403's reason; empty: connects
	}{
		{name: "an MCP client", h: headers{}},
		{name: "a client by an allowed name", h: headers{host: fmt.Sprintf("kubecode.internal:%d", port)}},
		{name: "a page on an allowed origin", h: headers{origin: "https://console.example.com"}},
		{name: "a page on a loopback origin", h: headers{origin: "http://localhost:6274"}},
		{name: "a rebinding page", h: headers{host: fmt.Sprintf("rebind.attacker.example:%d", port), origin: fmt.Sprintf("http://rebind.attacker.example:%d", port)},
			refused: `Forbidden: Host "rebind.attacker.example:`},
		{name: "a rebinding page sending no Origin", h: headers{host: "rebind.attacker.example"}, refused: `Forbidden: Host "rebind.attacker.example"`},
		{name: "another site's page", h: headers{origin: "https://evil.example"}, refused: `Forbidden: Origin "https://evil.example" is not allowed`},
		{name: "a sandboxed page", h: headers{origin: "null"}, refused: `Forbidden: Origin "null" is not allowed`},
		{name: "a page on a look-alike origin", h: headers{origin: "https://console.example.com.evil.example"}, refused: "Forbidden: Origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := initialize(t, srv.URL, tc.h)
			if tc.refused != "" {
				if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(string(body), tc.refused) || resp.Header.Get("Mcp-Session-Id") != "" {
					t.Errorf("answered %d %q, want 403 %q", resp.StatusCode, body, tc.refused)
				}
				if _, err := connectHTTP(srv.URL, tc.h); err == nil {
					t.Errorf("an MCP client connected")
				}
				return
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("answered %d %q", resp.StatusCode, body)
			}
			cs, err := connectHTTP(srv.URL, tc.h)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got, isErr := callText(t, cs, "execute_code", map[string]any{"code": "return 1 + 1"}); got != "2" || isErr {
				t.Errorf("execute_code: %q", got)
			}
		})
	}
	// Without a configuration, only loopback names are the server's.
	def := guardedServer(t, nil)
	if _, err := connectHTTP(def.URL, headers{host: "rebind.attacker.example"}); err == nil {
		t.Errorf("the default allows any Host")
	}
	if _, err := connectHTTP(def.URL, headers{origin: fmt.Sprintf("http://127.0.0.1:%d", port)}); err == nil {
		t.Errorf("the default allows loopback origins")
	}
}

// TestHTTPBodyLimits: a body too big gets 413 and one too slow 408, each
// with a reason, and neither holds a handler.
func TestHTTPBodyLimits(t *testing.T) {
	srv := guardedServer(t, &broker.HTTPOptions{MaxBodyBytes: 1 << 20, BodyTimeout: 300 * time.Millisecond})
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`
	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "request body too large: at most 1048576 bytes") {
		t.Errorf("a 2 MiB body: %d %q", resp.StatusCode, body)
	}
	// A body that never finishes arriving.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	body, _ = io.ReadAll(r.Body)
	if r.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "request body not received within 300ms") {
		t.Errorf("a slow body: %d %q", r.StatusCode, body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("answered a slow body after %s", took)
	}
}

// TestIdleSessionsMakeRoom: a caller at its share of sessions who opens
// another has its idlest session closed when that one is idle past
// ReclaimIdle (a client that left sessions without ending them, as the
// TypeScript SDK's close() does, cannot lock its address out), never a
// session with a request under way, and is refused while every session is
// in use.
func TestIdleSessionsMakeRoom(t *testing.T) {
	srv := guardedServer(t, &broker.HTTPOptions{MaxSessionsPerCaller: 2, ReclaimIdle: 300 * time.Millisecond})
	// Left behind: initialized, never used again, never ended (no DELETE,
	// no stream open).
	resp, _ := initialize(t, srv.URL, headers{})
	left := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || left == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	busy, err := connectHTTP(srv.URL, headers{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Close() })
	done := make(chan string, 1)
	go func() {
		res, err := busy.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "await new Promise(r => setTimeout(r, 1500))\nreturn 'done'"}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- res.Content[0].(*mcp.TextContent).Text
	}()
	if resp, body := initialize(t, srv.URL, headers{}); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "once one is idle for 300ms it makes room") {
		t.Errorf("a third session while both are fresh: %d %q", resp.StatusCode, body)
	}
	time.Sleep(500 * time.Millisecond)
	third, err := connectHTTP(srv.URL, headers{}) // the left-behind session makes room, not the busy one
	if err != nil {
		t.Fatalf("a third session once one is idle: %v", err)
	}
	t.Cleanup(func() { _ = third.Close() })
	if got, isErr := callText(t, third, "execute_code", map[string]any{"code": "return 3"}); got != "3" || isErr {
		t.Errorf("the third session: %q", got)
	}
	if got := <-done; got != "done" {
		t.Errorf("the busy session's call: %q", got)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", left)
	resp, err = (headers{}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the left-behind session after it made room: %d, want 404", resp.StatusCode)
	}
}

// TestSessionCaps: one caller cannot open more sessions than its share,
// nor all callers together more than the server keeps; a closed session
// frees its place. /metrics needs the same authentication as /mcp.
func TestSessionCaps(t *testing.T) {
	users := map[string]string{"token-a": "alice", "token-b": "bob", "token-c": "carol"}
	srv := guardedServer(t, &broker.HTTPOptions{
		MaxSessions: 3, MaxSessionsPerCaller: 2,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "metrics") }),
		Authenticate: func(_ context.Context, token string) (*catalog.Caller, error) {
			if u, ok := users[token]; ok {
				return &catalog.Caller{User: u}, nil
			}
			return nil, catalog.ErrUnauthenticated
		},
	})
	open := func(token string) (*mcp.ClientSession, error) { return connectHTTP(srv.URL, headers{token: token}) }
	must := func(cs *mcp.ClientSession, err error) *mcp.ClientSession {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	a1 := must(open("token-a"))
	must(open("token-a"))
	if _, err := open("token-a"); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("alice's third session: %v", err)
	}
	must(open("token-b"))
	if _, err := open("token-c"); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("a fourth session: %v", err)
	}
	// The refusal says what to do.
	if resp, body := initialize(t, srv.URL, headers{token: "token-a"}); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "you have 2 open, at most 2, each in use; close sessions you no longer use") {
		t.Errorf("refusal: %d %q", resp.StatusCode, body)
	}
	// Sessions already open go on working.
	if got, isErr := callText(t, a1, "execute_code", map[string]any{"code": "return 'still here'"}); got != "still here" || isErr {
		t.Errorf("an open session: %q", got)
	}
	if err := a1.Close(); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("close: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		cs, err := open("token-a")
		if err == nil {
			_ = cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed session did not free its place: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Metrics with the same authentication.
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"wrong", http.StatusUnauthorized}, {"token-c", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		resp, err := headers{token: tc.token}.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("/metrics with token %q: %d, want %d", tc.token, resp.StatusCode, tc.want)
		}
	}
}
