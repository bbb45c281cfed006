//go:build race

package runtime

// slowdown is how much slower scripts run in this test binary: the race
// detector instruments every memory access (goja's interpreter most).
const slowdown = 8
