package runtime

import (
	"sync/atomic"
	"time"
)

// computeWatch tells when an execution computes most of the time: its
// JavaScript has run (not waited for an operation's answer, a timer or a
// promise) for at least half of a window of after or more, or the worker
// process has used that much CPU time in it (the collector's work for a
// script that allocates, which runs on other threads, decoding answers). The
// execution's loop says when it starts computing (begin) and when it
// waits (wait); a timer, armed only while the script has computed since
// the last look, looks every after: a script that computes half of the
// window is reported (and looked at again while it goes on, after after
// and then every twice after), one that waits now, having computed less,
// disarms it until its next begin. A script that waits (a sleep, an
// operation) costs at most one timer's wake per stretch of computing; a
// begin or wait costs a clock read and a few atomic operations. Stretches
// cut short by a zero-length sleep add up like one: a script cannot hide
// its computing behind short waits.
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
	base   time.Time // times are nanoseconds since base, on the monotonic clock

	since   atomic.Int64 // when the current stretch began; 0 while waiting
	busy    atomic.Int64 // ns computed in stretches that ended
	armed   atomic.Bool  // the timer is set
	stopped atomic.Bool
	// The last look: when, how much had been computed and how much CPU
	// time the process had used by then. Set as the timer is armed (by the
	// one that armed it) and by each look.
	lookAt, lookBusy, lookCPU atomic.Int64
	every                     atomic.Int64 // the next look's distance after a report (ns)
}

// newComputeWatch returns a watch that calls report (on a timer's
// goroutine) when the script computes most of the time; nil, which
// watches nothing, when after is not positive.
func newComputeWatch(after time.Duration, report func()) *computeWatch {
	if after <= 0 {
		return nil
	}
	c := &computeWatch{after: after, report: report, base: time.Now()}
	c.every.Store(int64(after))
	c.timer = time.AfterFunc(time.Hour, c.look)
	c.timer.Stop()
	return c
}

// begin says the script computes from now on.
func (c *computeWatch) begin() {
	if c == nil {
		return
	}
	now := c.now()
	c.since.Store(now)
	c.arm(now)
}

// now is the time in nanoseconds since base (never zero: since's zero
// means waiting).
func (c *computeWatch) now() int64 { return int64(time.Since(c.base)) + 1 }

// processCPU is the process's CPU time in nanoseconds, or 0 when
// unknown; one getrusage, as the timer is armed (once an execution at
// least) and at each look.
func processCPU() int64 {
	used, _ := selfCPU()
	return int64(used)
}

// arm sets the timer for a window from now, unless it is set.
func (c *computeWatch) arm(now int64) {
	if c.armed.CompareAndSwap(false, true) {
		c.lookAt.Store(now)
		c.lookBusy.Store(c.computed(now))
		c.lookCPU.Store(processCPU())
		c.timer.Reset(c.after)
	}
}

// wait says the script waits from now on.
func (c *computeWatch) wait() {
	if c == nil {
		return
	}
	if s := c.since.Swap(0); s != 0 {
		c.busy.Add(c.now() - s)
	}
}

// computed is how long the script has computed by now.
func (c *computeWatch) computed(now int64) int64 {
	b := c.busy.Load()
	if s := c.since.Load(); s != 0 && now > s {
		b += now - s
	}
	return b
}

// stop ends the watch: no report after it returns, but one under way.
func (c *computeWatch) stop() {
	if c != nil {
		c.stopped.Store(true)
		c.timer.Stop()
	}
}

// look is the timer's: it reports a script that computed (or a process
// that used CPU time) half of the window since the last look, and sets the
// timer again unless the script waits, having computed less.
func (c *computeWatch) look() {
	if c.stopped.Load() {
		return
	}
	now, used := c.now(), processCPU()
	done := c.computed(now)
	window, busy, burnt := now-c.lookAt.Load(), done-c.lookBusy.Load(), used-c.lookCPU.Load()
	c.lookAt.Store(now)
	c.lookBusy.Store(done)
	c.lookCPU.Store(used)
	if busy*2 >= window || burnt*2 >= window {
		c.report()
		every := time.Duration(c.every.Load())
		c.every.Store(int64(2 * c.after))
		c.timer.Reset(every)
		return
	}
	if c.since.Load() != 0 {
		c.timer.Reset(c.after) // computing now: look at the next window
		return
	}
	c.armed.Store(false)
	// A begin between the load and the store found the timer armed: arm
	// it for that stretch.
	if c.since.Load() != 0 {
		c.arm(c.now())
	}
}
