package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/catalog/secrets"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCredentialsNeverReachScripts (the red-team's U1): an upstream that
// echoes the request headers it got, or its environment, hands a script
// no credential kubecode configured for it: each is registered in the
// boundary's registry as it is read, and the bridge hides it (the ledger
// names what). Without the registration the same calls carry them, so
// the attack is real.
func TestCredentialsNeverReachScripts(t *testing.T) {
	const token, apiKey = "hdr-token-7f3a9c2e5b1d", "env-api-key-4c8e1f0a9d"
	server := mcp.NewServer(&mcp.Implementation{Name: "echo-headers", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "headers", InputSchema: objectSchema(`{}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h := map[string]any{}
			for k, v := range req.Extra.Header {
				h[k] = v
			}
			return &mcp.CallToolResult{StructuredContent: h, Content: []mcp.Content{&mcp.TextContent{Text: "headers"}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("Bearer "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECODE_TEST_API_KEY", apiKey)
	httpCfg := Config{Name: "remote", URL: srv.URL, TrustAnnotations: true, Headers: map[string]Secret{"Authorization": {FromFile: tokenFile}}}
	stdioCfg, _ := specServer(t, "local", testSpec{Tools: []testTool{{Tool: &mcp.Tool{Name: "environ", InputSchema: objectSchema(`{}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, Behavior: "environ"}}})
	stdioCfg.TrustAnnotations = true
	stdioCfg.Env["API_KEY"] = Secret{FromEnv: "KUBECODE_TEST_API_KEY"}

	run := func(reg *secrets.Registry) (string, []bridge.Entry) {
		var ups []bridge.Provider
		for _, cfg := range []Config{httpCfg, stdioCfg} {
			u := New(cfg, &Options{Pins: &Pins{}, Secrets: reg})
			t.Cleanup(func() { _ = u.Close() })
			pinAll(t, u, &Pins{})
			ups = append(ups, u)
		}
		var ledger strings.Builder
		b := bridge.New(ups, &bridge.Options{Secrets: reg, Ledger: &ledger})
		t.Cleanup(func() { _ = b.Close() })
		s := b.Session("t")
		var out strings.Builder
		for _, op := range []string{"remote.headers", "local.environ"} {
			res, rpcErr := s.Call(context.Background(), op, json.RawMessage(`{}`))
			if rpcErr != nil {
				t.Fatalf("%s: %v", op, rpcErr.Message)
			}
			out.Write(res)
		}
		var entries []bridge.Entry
		for _, line := range strings.Split(strings.TrimSpace(ledger.String()), "\n") {
			var e bridge.Entry
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		return out.String() + ledger.String(), entries
	}

	// The attack, without the registration: both credentials come back.
	if got, _ := run(nil); !strings.Contains(got, token) || !strings.Contains(got, apiKey) {
		t.Fatalf("the servers did not echo the credentials, so the test proves nothing:\n%s", got)
	}
	got, entries := run(secrets.New(nil))
	if strings.Contains(got, token) || strings.Contains(got, apiKey) {
		t.Fatalf("a credential reached the script or the ledger:\n%s", got)
	}
	if !strings.Contains(got, "[hidden: upstream remote header Authorization]") || !strings.Contains(got, "[hidden: upstream local env API_KEY]") {
		t.Errorf("the markers do not say what was hidden:\n%s", got)
	}
	want := map[string]string{"remote.headers": "upstream remote header Authorization", "local.environ": "upstream local env API_KEY"}
	for _, e := range entries {
		if w := want[e.Operation]; len(e.Hidden) != 1 || e.Hidden[0] != w {
			t.Errorf("ledger of %s: hidden %q, want %q", e.Operation, e.Hidden, w)
		}
	}
}
