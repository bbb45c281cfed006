package broker_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/kubecode/kubecode/broker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reportP50 records per-call latencies and reports their median and p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkSearchTools is search_tools over the full live catalog (every
// served resource, CRDs included) through a real MCP client. Target: p50 ≤ 1 ms.
func BenchmarkSearchTools(b *testing.B) {
	cs := connect(b, newBroker(b, cp.Admin))
	queries := []string{"why is my pod crashing", "scale a deployment", "which services have no endpoints", "pod logs", "widgets"}
	ctx := context.Background()
	// Warm: the first call builds the catalog.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "pods"}}); err != nil {
		b.Fatal(err)
	}
	var lat latencies
	i := 0
	for b.Loop() {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": queries[i%len(queries)]}})
		lat = append(lat, time.Since(start))
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		i++
	}
	lat.report(b)
}

// benchExecute calls execute_code with code in a loop and reports latency.
func benchExecute(b *testing.B, code string) {
	benchExecuteOn(b, newBroker(b, cp.Admin), code)
}

func benchExecuteOn(b *testing.B, br *broker.Broker, code string) {
	cs := connect(b, br)
	ctx := context.Background()
	args := map[string]any{"code": code}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: args}); err != nil {
		b.Fatal(err) // warm: the first call builds the catalog
	}
	var lat latencies
	for b.Loop() {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: args})
		lat = append(lat, time.Since(start))
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	lat.report(b)
}

// BenchmarkExecuteCode is execute_code of a trivial script with one awaited
// operation call (a namespace get against the real API server) through a
// real MCP client. Target: p50 ≤ 2 ms.
func BenchmarkExecuteCode(b *testing.B) {
	benchExecute(b, "const ns = await tools.kubernetes.namespaces.get({ name: 'default' })\nns.metadata.name")
}

// BenchmarkExecuteCodeNoCall is execute_code of a script that calls no
// operation: the broker + MCP + runtime overhead alone.
func BenchmarkExecuteCodeNoCall(b *testing.B) {
	benchExecute(b, "[1, 2, 3].map(x => x * 2)")
}

// BenchmarkSearch is the broker's search alone (Bleve query plus
// declarations), without the MCP round trip.
func BenchmarkSearch(b *testing.B) {
	br := newBroker(b, cp.Admin)
	ctx := context.Background()
	queries := []string{"why is my pod crashing", "scale a deployment", "which services have no endpoints", "pod logs", "widgets"}
	if _, _, err := br.Search(ctx, "pods", 0); err != nil {
		b.Fatal(err)
	}
	var lat latencies
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, _, err := br.Search(ctx, queries[i%len(queries)], 0); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	lat.report(b)
}

// BenchmarkExecuteCodeWorker is BenchmarkExecuteCode with the script in a
// worker process of a warm pool (--isolation process). Target: p50 ≤ 2 ms.
func BenchmarkExecuteCodeWorker(b *testing.B) {
	benchExecuteOn(b, newBrokerPool(b), "const ns = await tools.kubernetes.namespaces.get({ name: 'default' })\nns.metadata.name")
}

// BenchmarkExecuteCodeNoCallWorker is BenchmarkExecuteCodeNoCall in a
// worker process.
func BenchmarkExecuteCodeNoCallWorker(b *testing.B) {
	benchExecuteOn(b, newBrokerPool(b), "[1, 2, 3].map(x => x * 2)")
}
