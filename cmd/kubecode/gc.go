package main

import (
	"os"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The server's garbage collector gets a fixed headroom rather than only
// GOGC's proportional one. Every MCP message the SDK decodes takes a 32 KB
// buffer (about 180 KB a call), and with GOGC=100 over the server's small
// live heap (15–30 MB) the collector ran every hundred calls or so: 22–40 %
// of the server's CPU per execute_code, on the cores the workers and the
// clients share. After each collection gcHeadroom sets GOGC so that the
// heap may grow by headroom (at least GOGC=100, at most 1,000): a small
// heap is collected a fifth as often, and a big one (a 5,000-pod scan) as
// it was, so the server's memory above idle stays what GOGC=100 gives.
// GOGC or GOMEMLIMIT in the environment leave the collector as they set it.

// gcHeadroomBytes is how much the heap may grow between collections when
// the live heap is small.
const gcHeadroomBytes = 32 << 20

// gcHeadroom starts tuning the collector (see above), for the life of the
// process.
func gcHeadroom(headroom uint64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var tune func()
	arm := func() {
		// An object with a pointer: the tiny allocator, whose objects'
		// cleanups may never run, takes none.
		sentinel := &struct{ _ *byte }{}
		goruntime.AddCleanup(sentinel, func(struct{}) { tune() }, struct{}{})
	}
	tune = func() { // after a collection, on the cleanup goroutine
		metrics.Read(samples)
		debug.SetGCPercent(gcPercent(samples[0].Value.Uint64(), headroom))
		arm()
	}
	arm()
}

// gcPercent is the GOGC that lets a heap of live bytes grow by headroom,
// from 100 to 1,000.
func gcPercent(live, headroom uint64) int {
	if live == 0 {
		return 1000
	}
	return int(min(max(headroom*100/live, 100), 1000))
}
