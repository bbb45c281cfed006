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
// for the request's progress token: every progressEvery while it runs or
// waits (a silent sleep, a person's approval), so that a client that
// resets its timeout on progress keeps waiting, with the seconds since
// the execution began as the progress value, which the spec requires to
// increase, and what it did in the message.
type reporter struct {
	mu   sync.Mutex
	p    Progress
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
	start := time.Now()
	go func() {
		defer close(r.done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		last := 0.0
		for {
			select {
			case <-r.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			r.mu.Lock()
			p := r.p
			r.mu.Unlock()
			elapsed := time.Since(start)
			at := max(elapsed.Seconds(), last+0.001) // strictly increasing, whatever the clock
			last = at
			msg := fmt.Sprintf("%s: %d operation calls, %d console lines", elapsed.Round(100*time.Millisecond), p.Calls, p.Console)
			if p.Last != "" {
				msg += "; last: " + p.Last
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: at, Message: msg})
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
