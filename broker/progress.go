package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress is how far an execution has come: the operation calls it made
// and the console lines it logged, the last of them.
type Progress struct {
	Calls   int
	Console int
	Last    string
}

// progressEvery is how often a long execution reports progress, at most.
const progressEvery = 500 * time.Millisecond

// reporter sends an execution's progress as MCP progress notifications
// for the request's progress token, when it has changed, every
// progressEvery until stopped.
type reporter struct {
	mu   sync.Mutex
	p    Progress
	sent Progress
	stop chan struct{}
	done chan struct{}
}

// report starts reporting for req, or returns nil when its client asked
// for no progress.
func report(ctx context.Context, req *mcp.CallToolRequest) *reporter {
	if req == nil || req.Session == nil || req.Params == nil || req.Params.GetProgressToken() == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	r := &reporter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			r.mu.Lock()
			p, changed := r.p, r.p != r.sent
			r.sent = r.p
			r.mu.Unlock()
			if !changed {
				continue
			}
			msg := fmt.Sprintf("%d operation calls, %d console lines", p.Calls, p.Console)
			if p.Last != "" {
				msg += "; last: " + p.Last
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(p.Calls + p.Console), Message: msg})
		}
	}()
	return r
}

// update records progress; it is an ExecuteOptions.Progress.
func (r *reporter) update(f func(p *Progress)) {
	r.mu.Lock()
	f(&r.p)
	r.mu.Unlock()
}

// close stops reporting.
func (r *reporter) close() {
	if r != nil {
		close(r.stop)
		<-r.done
	}
}

// lastLine shortens a console line or call for a progress message.
func lastLine(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
