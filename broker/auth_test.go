package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// serviceAccount creates ServiceAccount name in ns, allowed to list pods
// in ns only, and returns a token for it from the TokenRequest API.
func serviceAccount(t *testing.T, cs *k8s.Clientset, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// TestCallersOwnIdentity: over HTTP with authentication, each request's
// bearer token is whom its calls act for — passed through, or
// impersonated by the server — so two ServiceAccounts with different
// RBAC see different answers from one server; a missing or bad token gets
// 401 with the protected resource metadata's address; the ledger names the
// user and never holds the token.
func TestCallersOwnIdentity(t *testing.T) {
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	nsA, nsB := cp.Namespace(t), cp.Namespace(t)
	alice, bob := serviceAccount(t, cs, nsA, "alice"), serviceAccount(t, cs, nsB, "bob")
	for _, passthrough := range []bool{true, false} {
		name := map[bool]string{true: "passthrough", false: "impersonate"}[passthrough]
		t.Run(name, func(t *testing.T) {
			a, err := kubernetes.New(cp.Admin, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ledger bytes.Buffer
			br := bridge.New([]bridge.Provider{a}, &bridge.Options{Ledger: &ledger})
			t.Cleanup(func() { _ = br.Close() })
			b := broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler)})
			srv := httptest.NewServer(b.HTTPHandler(&broker.HTTPOptions{
				Authenticate: func(ctx context.Context, token string) (*catalog.Caller, error) {
					return a.Authenticate(ctx, token, passthrough)
				}}))
			t.Cleanup(srv.Close) // after the clients close: cleanups run last first

			connect := func(token string) *mcp.ClientSession {
				t.Helper()
				c, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
					&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
				return c
			}
			list := func(c *mcp.ClientSession, ns string) (string, bool) {
				return callText(t, c, "execute_code", map[string]any{"code": "return (await tools.kubernetes.pods.list({namespace: '" + ns + "'})).length"})
			}
			ca, cb := connect(alice), connect(bob)
			for _, tc := range []struct {
				who    string
				c      *mcp.ClientSession
				ns     string
				denied bool
			}{{"alice", ca, nsA, false}, {"alice", ca, nsB, true}, {"bob", cb, nsB, false}, {"bob", cb, nsA, true}} {
				text, isErr := list(tc.c, tc.ns)
				if tc.denied != isErr || tc.denied && !strings.Contains(text, "forbidden") {
					t.Errorf("%s listing pods in %s: %v\n%s", tc.who, tc.ns, isErr, text)
				}
			}
			if l := ledger.String(); strings.Contains(l, alice) || strings.Contains(l, bob) ||
				!strings.Contains(l, `"user":"system:serviceaccount:`+nsA+`:alice"`) {
				t.Errorf("ledger holds a token or lacks the user:\n%s", l)
			}

			for _, tc := range []struct {
				name, auth, want string
			}{{"no token", "", "no bearer token"}, {"bad token", "Bearer not-a-token", "invalid token"}} {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), tc.want) ||
					resp.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource"` {
					t.Errorf("%s: %d %q, WWW-Authenticate %q", tc.name, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
				}
			}
			if !passthrough { // tokens meant for kubecode only
				aud := httptest.NewServer(b.HTTPHandler(&broker.HTTPOptions{
					Authenticate: func(ctx context.Context, token string) (*catalog.Caller, error) {
						return a.Authenticate(ctx, token, false, "kubecode")
					}}))
				t.Cleanup(aud.Close)
				tr, err := cs.CoreV1().ServiceAccounts(nsA).CreateToken(context.Background(), "alice",
					&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{"kubecode"}}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, tc := range []struct {
					token string
					want  int
				}{{tr.Status.Token, http.StatusOK}, {alice, http.StatusUnauthorized}} {
					req, _ := http.NewRequest(http.MethodPost, aud.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Authorization", "Bearer "+tc.token)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != tc.want {
						t.Errorf("audience kubecode: a token got %d, want %d", resp.StatusCode, tc.want)
					}
				}
			}
			resp, err := http.Get(srv.URL + "/.well-known/oauth-protected-resource")
			if err != nil {
				t.Fatal(err)
			}
			var md map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&md)
			resp.Body.Close()
			if md["resource"] != srv.URL+"/mcp" {
				t.Errorf("protected resource metadata: %v", md)
			}
		})
	}
}
