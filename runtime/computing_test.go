package runtime

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestComputeWatch: a script that computes most of a window of after is
// reported (and again while it goes on), whether in one stretch or in
// short ones between short waits; one that mostly waits is not; nothing
// is reported once stopped.
func TestComputeWatch(t *testing.T) {
	const after = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		run  func(c *computeWatch)
		min  int64 // reports at least
		max  int64 // and at most
	}{
		{"computes", func(c *computeWatch) { c.begin(); time.Sleep(5 * after) }, 1, 3},
		{"waits", func(c *computeWatch) { c.begin(); c.wait(); time.Sleep(5 * after) }, 0, 0},
		{"short stretches between short waits", func(c *computeWatch) {
			for range 60 {
				c.begin()
				time.Sleep(after / 20)
				c.wait()
				time.Sleep(time.Millisecond / 10)
			}
		}, 1, 3},
		{"mostly waits", func(c *computeWatch) {
			for range 30 {
				c.begin()
				time.Sleep(time.Millisecond)
				c.wait()
				time.Sleep(after / 10)
			}
		}, 0, 0},
		{"waits, then computes", func(c *computeWatch) {
			c.begin()
			c.wait()
			time.Sleep(3 * after)
			c.begin()
			time.Sleep(3 * after)
		}, 1, 3},
		{"stopped", func(c *computeWatch) { c.begin(); c.stop(); time.Sleep(3 * after) }, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reports atomic.Int64
			c := newComputeWatch(after, func() { reports.Add(1) })
			tc.run(c)
			c.stop()
			if n := reports.Load(); n < tc.min || n > tc.max {
				t.Errorf("%d reports, want %d to %d", n, tc.min, tc.max)
			}
		})
	}
	if newComputeWatch(0, func() { t.Error("reported") }) != nil {
		t.Error("a watch for no duration")
	}
	var none *computeWatch // watches nothing, and costs nothing to call
	none.begin()
	none.wait()
	none.stop()
}
