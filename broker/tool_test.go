package broker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAddToolAsTheSDKDoes: a tool added with addTool lists the same input
// schema as with mcp.AddTool and answers bad arguments as it does (an
// error result saying what to fix); good arguments reach the handler.
func TestAddToolAsTheSDKDoes(t *testing.T) {
	ctx := context.Background()
	var got []executeInput
	handler := func(_ context.Context, _ *mcp.CallToolRequest, in executeInput) (*mcp.CallToolResult, any, error) {
		got = append(got, in)
		return textResult("ran "+in.Code, false), nil, nil
	}
	connect := func(add func(*mcp.Server)) *mcp.ClientSession {
		s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		add(s)
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close(); ss.Wait() })
		return cs
	}
	tool := &mcp.Tool{Name: "execute_code", Description: "d"}
	ours := connect(func(s *mcp.Server) { addTool(s, tool, handler) })
	sdk := connect(func(s *mcp.Server) { mcp.AddTool(s, tool, handler) })

	schemaOf := func(cs *mcp.ClientSession) string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != 1 {
			t.Fatalf("ListTools: %v %v", res, err)
		}
		b, _ := json.Marshal(res.Tools[0])
		return string(b)
	}
	if d := cmp.Diff(schemaOf(sdk), schemaOf(ours)); d != "" {
		t.Errorf("tools/list (-mcp.AddTool +addTool):\n%s", d)
	}
	for _, tc := range []struct {
		name string
		args string
		ok   bool
		want string // in the error result
	}{
		{"good", `{"code":"return 1","timeout":2}`, true, ""},
		{"no arguments", ``, false, `validating "arguments"`},
		{"code missing", `{"timeout":2}`, false, `validating "arguments"`},
		{"code of the wrong type", `{"code":7}`, false, `validating "arguments"`},
		{"an unknown field", `{"code":"x","codez":"y"}`, false, `validating "arguments"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cs := range []*mcp.ClientSession{sdk, ours} {
				params := &mcp.CallToolParams{Name: "execute_code"}
				if tc.args != "" {
					params.Arguments = json.RawMessage(tc.args)
				}
				res, err := cs.CallTool(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if res.IsError == tc.ok || !strings.Contains(text, tc.want) {
					t.Errorf("answer (error %v): %s", res.IsError, text)
				}
			}
		})
	}
	if len(got) != 2 || got[0] != got[1] || got[1].Code != "return 1" || got[1].Timeout != 2 {
		t.Errorf("the handlers got %+v", got)
	}
}
