package broker_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a ledger (or a log) the test reads while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) lines() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), "\n")
}

// TestProgressAndCancel: through worker processes and a real MCP client,
// a long execution reports progress (calls and console lines) when the
// client sent a progress token, and a client's cancellation stops it:
// no call is made after.
func TestProgressAndCancel(t *testing.T) {
	k8s, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ledger lockedBuffer
	br := bridge.New([]bridge.Provider{k8s}, &bridge.Options{Ledger: &ledger})
	pool := runtime.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close(); _ = br.Close() })
	b := broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler), Pool: pool})

	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, r.Params)
			mu.Unlock()
		}}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": `for (let i = 0; i < 6; i++) {
  await tools.kubernetes.namespaces.list()
  console.log('step ' + i)
  await sleep(300)
}
return 'done'`}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	mu.Lock()
	if len(got) < 2 {
		t.Errorf("%d progress notifications, want several", len(got))
	}
	for i, p := range got {
		if p.ProgressToken != "p1" || !strings.Contains(p.Message, "operation calls") || i > 0 && p.Progress <= got[i-1].Progress {
			t.Errorf("notification %d: %+v", i, p)
		}
	}
	// Which event a notification names last depends on where its tick
	// falls (a call, then a line 300 ms long); over three ticks one names
	// a console line.
	named := false
	for _, p := range got {
		named = named || strings.Contains(p.Message, "last: step ")
	}
	if !named {
		t.Errorf("no notification names a console line: %+v", got)
	}
	mu.Unlock()

	cctx, cancel := context.WithCancel(ctx)
	before := ledger.lines()
	start := time.Now()
	time.AfterFunc(500*time.Millisecond, cancel)
	_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"timeout": 30,
		"code": "while (true) { await tools.kubernetes.namespaces.list(); await sleep(50) }"}})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("canceled call: %v after %s", err, time.Since(start))
	}
	// The execution ends with its worker: once the pool holds no busy
	// worker, no call of the script can start any more.
	for deadline := time.Now().Add(5 * time.Second); pool.Busy() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still busy 5 s after the cancellation", pool.Busy())
		}
	}
	stopped := ledger.lines()
	time.Sleep(500 * time.Millisecond) // not synchronization: a window in which nothing may happen
	if after := ledger.lines(); after != stopped || stopped == before {
		t.Errorf("calls: %d before, %d when canceled, %d half a second later", before, stopped, after)
	}
}
