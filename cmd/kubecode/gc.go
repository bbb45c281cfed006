package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"

	"github.com/kubecode/kubecode/runtime"
)

// The server's garbage collector gets a fixed headroom rather than only
// GOGC's proportional one. Every MCP message the SDK decodes takes a 32 KB
// buffer (about 180 KB a call), and with GOGC=100 over the server's small
// live heap (15–30 MB) the collector ran every hundred calls or so: 22–40 %
// of the server's CPU per execute_code, on the cores the workers and the
// clients share. After each collection gcHeadroom sets GOGC so that the
// heap may grow by headroom (at least GOGC=100, at most 1,000): the idle
// server's heap is collected about a third as often, and a heap of 32 MB
// or more (a 5,000-pod scan) as with GOGC=100; the scan's peak above idle
// grows by less than the headroom (140 MB, was 127).
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
	runtime.AfterEachGC(func() bool {
		metrics.Read(samples)
		debug.SetGCPercent(gcPercent(samples[0].Value.Uint64(), headroom))
		return true
	})
}

// gcPercent is the GOGC that lets a heap of live bytes grow by headroom,
// from 100 to 1,000.
func gcPercent(live, headroom uint64) int {
	if live == 0 {
		return 1000
	}
	return int(min(max(headroom*100/live, 100), 1000))
}
