//go:build !linux

package runtime

import (
	"time"
)

// contain has no implementation off Linux: workers there are bounded by
// time and memory only.
func contain() error { return errContainUnsupported }

// totalMemory is unknown off Linux.
func totalMemory() int64 { return 0 }

// limitCPU has no implementation off Linux: the deadline bounds CPU time.
func limitCPU(time.Duration, func()) (disarm func()) { return func() {} }

// demote does nothing off Linux.
func demote(int) error { return nil }

// promote does nothing off Linux.
func promote(int) error { return nil }

func niceWorker(int) error { return nil }

// waitExit returns at once off Linux: the reap waits for the end.
func waitExit(int) {}

// selfCPU is unknown off Linux: the compute watch counts the script's
// loop alone.
func selfCPU() (time.Duration, bool) { return 0, false }
