package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests' own upstream: a real MCP server over real stdio, this test
// binary re-executed, whose tools a spec file says and a test rewrites
// while it runs (it lists them again and tells the client, as a server
// whose tools change would).

const serverEnv = "KUBECODE_TEST_UPSTREAM_SPEC"

func TestMain(m *testing.M) {
	if spec := os.Getenv(serverEnv); spec != "" {
		serveSpec(spec)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testTool is one tool of the spec: its declaration and what it does
// (echo its arguments, hang, crash the server, fail).
type testTool struct {
	Tool     *mcp.Tool `json:"tool"`
	Behavior string    `json:"behavior"`
}

type testSpec struct {
	Tools []testTool `json:"tools"`
	// Calls, when set, is a file each call appends a line to.
	Calls string `json:"calls,omitempty"`
}

func serveSpec(path string) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test-upstream", Version: "1"}, nil)
	var last []byte
	load := func() {
		raw, err := os.ReadFile(path)
		if err != nil || string(raw) == string(last) {
			return
		}
		var spec testSpec
		if json.Unmarshal(raw, &spec) != nil {
			return
		}
		if last != nil {
			var old testSpec
			_ = json.Unmarshal(last, &old)
			for _, t := range old.Tools {
				server.RemoveTools(t.Tool.Name)
			}
		}
		last = raw
		for _, t := range spec.Tools {
			server.AddTool(t.Tool, handler(t.Behavior, spec.Calls))
		}
	}
	load()
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			load()
		}
	}()
	_ = server.Run(context.Background(), &mcp.StdioTransport{})
}

func handler(behavior, calls string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if calls != "" {
			f, err := os.OpenFile(calls, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintf(f, "%s %s\n", req.Params.Name, req.Params.Arguments)
				f.Close()
			}
		}
		switch behavior {
		case "hang":
			time.Sleep(time.Hour) // deaf to cancellation, as a stuck server is
		case "crash":
			os.Exit(3)
		case "fail":
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such ticket: 42"}}}, nil
		case "environ": // a server that shows its environment
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil
		case "yaml":
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "kind: Kustomization\nmetadata:\n  name: apps\nstatus:\n  ready: true\n"}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	}
}

// specServer writes a spec and returns the upstream config that runs it.
func specServer(t testing.TB, name string, spec testSpec) (Config, func(testSpec)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.json")
	write := func(s testSpec) {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".tmp", raw, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write(spec)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: name, Command: []string{exe, "-test.run=^$"}, Env: map[string]Secret{serverEnv: {Value: path}}}
	return cfg, write
}

func objectSchema(props string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":` + props + `}`)
}
