package broker

import (
	"context"
	"net/http"

	"github.com/kubecode/kubecode/bridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Traces: with Options.TracerProvider, every MCP request is a span (a new
// trace, linked to the caller's W3C trace context when the HTTP request
// carries one), every execution a span inside it whose trace id is the
// ledger's trace, and every bridge call a span inside that (Observe).

const tracerName = "github.com/kubecode/kubecode/broker"

func (b *Broker) tracer() trace.Tracer {
	if b.opts.TracerProvider == nil {
		return nil
	}
	return b.opts.TracerProvider.Tracer(tracerName)
}

// traceRequests is the server middleware that makes each MCP request a
// span.
func (b *Broker) traceRequests(next mcp.MethodHandler) mcp.MethodHandler {
	t := b.tracer()
	if t == nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		attrs := []attribute.KeyValue{attribute.String("mcp.method", method)}
		// The caller's trace context is a link, not the parent: trace ids
		// are the server's own (the ledger's trace and the call ids the
		// API audit log records), never chosen by a client.
		var opts []trace.SpanStartOption
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			remote := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(http.Header(extra.Header)))
			if sc := trace.SpanContextFromContext(remote); sc.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
		}
		if ctr, ok := req.(*mcp.CallToolRequest); ok && ctr.Params != nil {
			attrs = append(attrs, attribute.String("mcp.tool", ctr.Params.Name))
		}
		opts = append(opts, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		ctx, span := t.Start(ctx, "mcp "+method, opts...)
		defer span.End()
		res, err := next(ctx, method, req)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		} else if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			span.SetStatus(codes.Error, "tool error")
		}
		return res, err
	}
}

// Observe records one bridge call, as a bridge.Options.Observe: in the
// metrics, and as a span of the execution that made it.
func (b *Broker) Observe(ctx context.Context, e *bridge.Entry) {
	if b.opts.Metrics != nil {
		b.opts.Metrics.ObserveCall(ctx, e)
	}
	t := b.tracer()
	if t == nil {
		return
	}
	_, span := t.Start(ctx, e.Operation, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(e.Time),
		trace.WithAttributes(
			attribute.String("kubecode.operation", e.Operation),
			attribute.String("kubecode.outcome", e.Outcome),
			attribute.Int("http.response.status_code", e.Status),
			attribute.Int("kubecode.bytes", e.Bytes),
			attribute.String("kubecode.audit_id", e.AuditID),
			attribute.Bool("kubecode.dry_run", e.DryRun),
			attribute.String("kubecode.decision", e.Decision)))
	if e.Outcome != "ok" {
		span.SetStatus(codes.Error, e.Reason)
	}
	span.End(trace.WithTimestamp(e.Time.Add(e.Duration)))
}
