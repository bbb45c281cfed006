package broker_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTraces: an execute_code request through a real MCP client is a
// span; its execution a span inside it whose trace id is the ledger's
// trace; each bridge call a span inside the execution, with the
// operation, outcome and bytes.
func TestTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b *broker.Broker
	br := bridge.New([]bridge.Provider{a}, &bridge.Options{Observe: func(ctx context.Context, e *bridge.Entry) { b.Observe(ctx, e) }})
	t.Cleanup(func() { _ = br.Close() })
	b = broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler), TracerProvider: tp})
	cs := connect(t, b)
	callText(t, cs, "execute_code", map[string]any{"code": `await Promise.all([tools.kubernetes.namespaces.list(), tools.kubernetes.pods.list({namespace: 'shop'})])
return 1`})
	ex, err := b.Execute(context.Background(), "return (await tools.kubernetes.nodes.list()).length", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Spans by name, the first of each trace.
	byName := map[string]sdktrace.ReadOnlySpan{}
	var req, exec sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "mcp tools/call" {
			req = s
		}
	}
	if req == nil {
		t.Fatal("no span of the tools/call request")
	}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == req.SpanContext().TraceID() || s.Name() == "kubernetes.nodes.list" {
			byName[s.Name()] = s
		}
	}
	if exec = byName["execute_code"]; exec == nil {
		t.Fatalf("spans: %v", byName)
	}
	if exec.Parent().SpanID() != req.SpanContext().SpanID() {
		t.Errorf("execution span's parent is not the request's")
	}
	for _, op := range []string{"kubernetes.namespaces.list", "kubernetes.pods.list"} {
		s := byName[op]
		if s == nil || s.Parent().SpanID() != exec.SpanContext().SpanID() || s.SpanContext().TraceID() != req.SpanContext().TraceID() {
			t.Errorf("span of %s: %v", op, s)
			continue
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		if attrs["kubecode.operation"] != op || attrs["kubecode.outcome"] != "ok" || attrs["kubecode.bytes"] == "0" {
			t.Errorf("attributes of %s: %v", op, attrs)
		}
	}
	nodes := byName["kubernetes.nodes.list"]
	if nodes == nil || nodes.SpanContext().TraceID().String() != ex.Trace || ex.Ledger[0].Trace != ex.Trace {
		t.Errorf("ledger trace %q, span trace %v", ex.Trace, nodes)
	}
}
