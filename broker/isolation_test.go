package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWorkerIsolation: with a pool, execute_code runs scripts in worker
// processes: real operation calls go through the bridge, a memory bomb
// costs only its worker, and the next script answers at once.
func TestWorkerIsolation(t *testing.T) {
	cs := connect(t, newBrokerPool(t))
	var names []string
	execJSON(t, cs, "return (await tools.kubernetes.namespaces.list()).map(n => n.metadata.name).filter(n => n === 'shop' || n === 'payments').sort()", &names)
	if strings.Join(names, ",") != "payments,shop" {
		t.Errorf("namespaces through a worker = %v", names)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "const ns = await tools.kubernetes.namespaces.list()\nconst b = new ArrayBuffer(8 * 1024 ** 3)\nreturn b.byteLength + ns.length"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "memory limit exceeded") {
		t.Errorf("memory bomb: %q (error %v), want the memory limit", text, res.IsError)
	}
	// The worker stopped tells no count: the call that reached the bridge
	// counts.
	if st, _ := res.StructuredContent.(map[string]any); st == nil || st["calls"] != float64(1) {
		t.Errorf("the memory bomb's execution counts %v calls, want 1", res.StructuredContent)
	}
	var isErr bool
	start := time.Now()
	text, isErr = callText(t, cs, "execute_code", map[string]any{"code": "return 1 + 1"})
	if isErr || text != "2" {
		t.Errorf("next script: %q (error %v)", text, isErr)
	}
	t.Logf("the next script answered in %s", time.Since(start))
	text, _ = callText(t, cs, "execute_code", map[string]any{"code": "return JSON.stringify(await tools.kubernetes.secrets.list({ allNamespaces: true }))"})
	for _, c := range truth.Canaries {
		if strings.Contains(text, c) {
			t.Fatalf("a Secret value reached the model through a worker")
		}
	}
}
