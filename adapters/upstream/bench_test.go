package upstream

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallStdio times one read of a pinned upstream tool over stdio
// (the tests' own Go server echoing its arguments): the adapter's share of
// an upstream call, slots, breaker and result decoding included.
func BenchmarkCallStdio(b *testing.B) {
	cfg, _ := specServer(b, "svc", testSpec{Tools: []testTool{{Tool: &mcp.Tool{Name: "echo", InputSchema: objectSchema(`{"msg":{"type":"string"}}`)}}}})
	cfg.Tools = map[string]Tool{"echo": {Kind: "read"}}
	u := New(cfg, &Options{Pins: &Pins{}})
	defer u.Close()
	pinAll(b, u, &Pins{})
	args := json.RawMessage(`{"msg":"hello"}`)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := u.Call(ctx, "svc.echo", args); err != nil {
			b.Fatal(err)
		}
	}
}
