package runtime

import (
	"sync/atomic"
	"time"
)

// computeWatch tells when an execution's JavaScript has run for a while
// without waiting: no operation's answer, timer or promise to wait for in
// between. The execution's loop says when it starts computing (begin) and
// when it waits (wait); a timer, armed only while it computes, reports a
// stretch that reaches after, and again while it lasts (after, then twice
// as long each time, up to a second). A script that waits (a sleep, an
// operation) costs no timer's wake; a begin or wait costs a clock read and
// two atomic operations.
//
// In a worker, the report is a runtime/computing note to the pool, which
// demotes a worker that computes while other executions run (see
// PoolOptions.Demote): the worker knows when its script runs, where the
// pool could only guess from the outside (it used to read every thread's
// scheduler statistics in /proc every 10 ms of every long execution: half
// of the server's CPU while thirty scripts slept and thirty spun).
type computeWatch struct {
	after  time.Duration
	report func()
	timer  *time.Timer

	since   atomic.Int64 // when the current stretch began (Unix ns); 0 while waiting
	armed   atomic.Bool  // the timer is set
	stopped atomic.Bool
	every   time.Duration // the next report's distance; the timer's only
}

// maxReportEvery bounds the distance between reports of one stretch.
const maxReportEvery = time.Second

// newComputeWatch returns a watch that calls report (on a timer's
// goroutine) when a stretch of computing reaches after; nil, which watches
// nothing, when after is not positive.
func newComputeWatch(after time.Duration, report func()) *computeWatch {
	if after <= 0 {
		return nil
	}
	c := &computeWatch{after: after, report: report, every: after}
	c.timer = time.AfterFunc(time.Hour, c.check)
	c.timer.Stop()
	return c
}

// begin says the script computes from now on.
func (c *computeWatch) begin() {
	if c == nil {
		return
	}
	c.since.Store(time.Now().UnixNano())
	if c.armed.CompareAndSwap(false, true) {
		c.timer.Reset(c.after)
	}
}

// wait says the script waits from now on.
func (c *computeWatch) wait() {
	if c != nil {
		c.since.Store(0)
	}
}

// stop ends the watch: no report after it returns, but one under way.
func (c *computeWatch) stop() {
	if c != nil {
		c.stopped.Store(true)
		c.timer.Stop()
	}
}

// check is the timer's: it reports a stretch that reached after and sets
// the timer again while the script computes.
func (c *computeWatch) check() {
	if c.stopped.Load() {
		return
	}
	s := c.since.Load()
	if s == 0 {
		c.armed.Store(false)
		// A begin between the load and the store found the timer armed:
		// arm it for that stretch.
		if c.since.Load() != 0 && c.armed.CompareAndSwap(false, true) {
			c.timer.Reset(c.after)
		}
		return
	}
	if d := time.Duration(time.Now().UnixNano() - s); d < c.after {
		c.timer.Reset(c.after - d) // a new stretch began since the timer was set
		return
	}
	c.report()
	c.timer.Reset(c.every)
	c.every = min(c.every*2, maxReportEvery)
}
