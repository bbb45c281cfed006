package upstream

import (
	"fmt"
	"sync"
	"time"
)

// A failing upstream (down, hung, crashing) should cost a script one clear
// error per call, not a timeout per call: after breakAfter failures in a
// row its calls fail at once for breakFor, then one call tries again.
const (
	breakAfter = 3
	breakFor   = 30 * time.Second
)

// breaker is one upstream's circuit breaker.
type breaker struct {
	mu       sync.Mutex
	failures int
	openTill time.Time
	last     error
	trial    bool // a call is trying the upstream again
}

// allow says whether a call may go to the upstream now.
func (b *breaker) allow(now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures < breakAfter {
		return nil
	}
	if now.Before(b.openTill) {
		return fmt.Errorf("failed %d calls in a row (the last: %v), so its calls fail at once until %s", b.failures, b.last, b.openTill.Format(time.TimeOnly))
	}
	if b.trial {
		return fmt.Errorf("failed %d calls in a row (the last: %v); one call is trying it again", b.failures, b.last)
	}
	b.trial = true
	return nil
}

// fail counts a failure of the upstream (not a tool's own error).
func (b *breaker) fail(now time.Time, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	b.last = err
	b.trial = false
	if b.failures >= breakAfter {
		b.openTill = now.Add(breakFor)
	}
}

// succeed closes the breaker.
func (b *breaker) succeed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures, b.trial, b.last = 0, false, nil
}

// release ends a trial call that was neither a failure nor a success (it
// never reached the upstream): the next call may try.
func (b *breaker) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trial = false
}
