package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/catalog"
)

// fakeProvider stands in for an adapter: the bridge's dispatch, validation,
// shaping and ledger need no cluster.
type fakeProvider struct {
	mu        sync.Mutex
	calls     []string
	ops       []*catalog.Operation
	discovers int
}

var statusErr = &catalog.CallError{Status: 403, Reason: "Forbidden", Message: `secrets is forbidden: User "viewer" cannot list resource "secrets"`}

func (p *fakeProvider) Discover(context.Context) ([]*catalog.Operation, string, error) {
	p.mu.Lock()
	p.discovers++
	p.mu.Unlock()
	return p.ops, "v1", nil
}

func (p *fakeProvider) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	p.calls = append(p.calls, name+" "+string(args))
	p.mu.Unlock()
	switch name {
	case "kubernetes.secrets.list":
		return nil, statusErr
	case "kubernetes.secrets.get":
		return json.RawMessage(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"S0VZ\"}}"}},"data":{"password":"S0VZ","user":"YWRtaW4="}}`), nil
	}
	return json.RawMessage(`[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","managedFields":[{"manager":"kubectl"}],"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","team":"x"}}}]`), nil
}

// kubeRules are the Kubernetes adapters' result rules (adapters/kubeapi),
// as a provider declares them: the bridge itself knows none.
var kubeRules = catalog.ResultRules{
	Secrets: []catalog.SecretObject{{Field: "kind", Value: "Secret", Values: []string{"data", "stringData"},
		Drop: []catalog.Path{{"metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"}}}},
	Noise: []catalog.Path{{"metadata", "managedFields"}, {"metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"}},
}

func (p *fakeProvider) ResultRules() catalog.ResultRules { return kubeRules }

func newFake() (*fakeProvider, *Bridge, *bytes.Buffer) {
	list := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
		"namespace": {Type: "string"}, "limit": {Type: "integer", Minimum: ptr(1.0)}, "allNamespaces": {Type: "boolean"},
		"involvedObject": {Type: "object", Properties: map[string]*catalog.Schema{"name": {Type: "string"}}},
	}}
	get := &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{"name": {Type: "string"}, "namespace": {Type: "string"}}}
	p := &fakeProvider{ops: []*catalog.Operation{
		{Name: "kubernetes.pods.list", Aliases: []string{"kubernetes.po.list"}, Input: list, Annotations: readOnly},
		{Name: "kubernetes.secrets.list", Input: list, Annotations: readOnly},
		{Name: "kubernetes.secrets.get", Input: get, Annotations: readOnly},
	}}
	var ledger bytes.Buffer
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	b := New([]Provider{p}, &Options{Ledger: &ledger, Now: func() time.Time { return clock }})
	return p, b, &ledger
}

func ptr[T any](v T) *T { return &v }

var readOnly = catalog.Annotations{ReadOnly: true}

func TestHandle(t *testing.T) {
	tests := []struct {
		name string
		req  string
		want string
	}{
		{"call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"kubernetes.pods.list","arguments":{"namespace":"shop"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":[{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"team":"x"},"name":"a"}}]}`},
		{"alias", `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"kubernetes.po.list"}}`,
			`{"jsonrpc":"2.0","id":"x","result":[{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"team":"x"},"name":"a"}}]}`},
		{"secret values redacted, last-applied dropped", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kubernetes.secrets.get","arguments":{"name":"db"}}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"apiVersion":"v1","data":{"password":"[redacted]","user":"[redacted]"},"kind":"Secret","metadata":{"name":"db"}}}`},
		{"api error keeps status", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"kubernetes.secrets.list"}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"secrets is forbidden: User \"viewer\" cannot list resource \"secrets\"","data":{"tool":"kubernetes.secrets.list","status":403,"reason":"Forbidden"}}}`},
		{"unknown field named", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"kubernetes.pods.list","arguments":{"namespce":"x"}}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"kubernetes.pods.list: unknown field \"namespce\"; did you mean \"namespace\"? (known: allNamespaces, involvedObject, limit, namespace)","data":{"tool":"kubernetes.pods.list","reason":"Invalid","field":"namespce"}}}`},
		{"wrong type named", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"kubernetes.pods.list","arguments":{"limit":"10"}}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"kubernetes.pods.list: field \"limit\" must be a number, got a string","data":{"tool":"kubernetes.pods.list","reason":"Invalid","field":"limit"}}}`},
		{"nested field", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"kubernetes.pods.list","arguments":{"involvedObject":{"name":5}}}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"kubernetes.pods.list: field \"involvedObject.name\" must be a string, got a number","data":{"tool":"kubernetes.pods.list","reason":"Invalid","field":"involvedObject.name"}}}`},
		{"minimum", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"kubernetes.pods.list","arguments":{"limit":0}}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"kubernetes.pods.list: field \"limit\" must be at least 1, got 0","data":{"tool":"kubernetes.pods.list","reason":"Invalid","field":"limit"}}}`},
		{"required", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"kubernetes.secrets.get","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"kubernetes.secrets.get: missing required field \"name\"","data":{"tool":"kubernetes.secrets.get","reason":"Invalid","field":"name"}}}`},
		{"arguments not an object", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"kubernetes.pods.list","arguments":[1]}}`,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"kubernetes.pods.list: argument must be an object, got an array","data":{"tool":"kubernetes.pods.list","reason":"Invalid"}}}`},
		{"unknown operation suggests", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"kubernetes.pod.lst"}}`,
			`{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"unknown operation kubernetes.pod.lst","data":{"tool":"kubernetes.pod.lst","reason":"UnknownOperation","suggestions":["kubernetes.pods.list"]}}}`},
		{"list", `{"jsonrpc":"2.0","id":11,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":11,"result":["kubecode.revert","kubernetes.pods.list","kubernetes.secrets.get","kubernetes.secrets.list"]}`},
		{"parse error", `{"jsonrpc":`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: not valid JSON"}}`},
		{"wrong member type", `{"jsonrpc":"2.0","id":1,"method":1}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: need one JSON-RPC 2.0 request object (batches are not supported)"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: need one JSON-RPC 2.0 request object (batches are not supported)"}}`},
		{"notification gets no response", `{"jsonrpc":"2.0","method":"tools/list"}`, ``},
		{"not 2.0", `{"id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: need \"jsonrpc\":\"2.0\" and a method"}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"rm -rf"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: rm -rf"}}`},
		{"bad params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid params: need {\"name\": string, \"arguments\": object}"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, b, _ := newFake()
			got := b.Session("t").Handle(context.Background(), []byte(tc.req))
			if d := cmp.Diff(tc.want, string(got)); d != "" {
				t.Errorf("response (-want +got):\n%s", d)
			}
			if strings.Contains(tc.name, "named") || tc.name == "required" || tc.name == "minimum" {
				if len(p.calls) != 0 {
					t.Errorf("an invalid call reached the provider: %v", p.calls)
				}
			}
		})
	}
}

func TestLedger(t *testing.T) {
	_, b, out := newFake()
	s := b.Session("trace-7")
	ctx := context.Background()
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"kubernetes.pods.list","arguments":{"namespace":"shop"}}}`))
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kubernetes.secrets.list","arguments":{"namespace":"shop"}}}`))
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"kubernetes.secrets.get","arguments":{"name":"db","token":"hunter2"}}}`))
	got := s.Ledger()
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	want := []Entry{
		{Trace: "trace-7", Seq: 1, AuditID: "trace-7-1", Time: at, Operation: "kubernetes.pods.list", Arguments: json.RawMessage(`{"namespace":"shop"}`), Outcome: "ok", Bytes: len(`[{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"team":"x"},"name":"a"}}]`)},
		{Trace: "trace-7", Seq: 2, AuditID: "trace-7-2", Time: at, Operation: "kubernetes.secrets.list", Arguments: json.RawMessage(`{"namespace":"shop"}`), Outcome: "error", Status: 403, Reason: "Forbidden"},
		{Trace: "trace-7", Seq: 3, AuditID: "trace-7-3", Time: at, Operation: "kubernetes.secrets.get", Arguments: json.RawMessage(`{"name":"db","token":"[elided]"}`), Outcome: "invalid", Reason: "Invalid"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ledger (-want +got):\n%s", d)
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("JSON-lines ledger has %d lines, want 3:\n%s", n, out)
	}
	if strings.Contains(out.String(), "hunter2") {
		t.Error("the ledger file holds a secret-looking argument")
	}
}

func TestConcurrentCalls(t *testing.T) {
	p, b, _ := newFake()
	s := b.Session("c")
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"kubernetes.pods.list"}}`))
		}()
	}
	wg.Wait()
	if len(s.Ledger()) != 50 || len(p.calls) != 50 {
		t.Fatalf("ledger %d, calls %d, want 50 each", len(s.Ledger()), len(p.calls))
	}
}

func BenchmarkHandle(b *testing.B) {
	_, br, _ := newFake()
	br.opts.Ledger = nil
	s := br.Session("bench")
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"kubernetes.pods.list","arguments":{"namespace":"shop","limit":5}}}`)
	for b.Loop() {
		s.Handle(context.Background(), req)
	}
}

// TestCloseStopsRefresh: refreshes run in the background while the table
// is stale, Close waits for one under way, and none starts after it.
func TestCloseStopsRefresh(t *testing.T) {
	p := &fakeProvider{ops: []*catalog.Operation{{Name: "kubernetes.pods.list"}}}
	b := New([]Provider{p}, &Options{RefreshInterval: time.Nanosecond})
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, _, err := b.Operations(ctx); err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		n := p.discovers
		p.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d discoveries in 5s: no background refresh", n)
		}
		time.Sleep(time.Millisecond)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	closed := p.discovers
	p.mu.Unlock()
	for range 20 {
		if _, _, err := b.Operations(ctx); err != nil {
			t.Fatalf("Operations after Close: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.discovers != closed {
		t.Errorf("%d discoveries after Close, want none", p.discovers-closed)
	}
}
