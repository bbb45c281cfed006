//go:build race

package runtime

// slowdown is how much slower scripts run in this test binary: the race
// detector instruments every memory access (goja's interpreter most).
const slowdown = 8

// memoryFactor is how much more memory a worker of this test binary
// holds for the same script: the race runtime's shadow memory and larger
// objects count against the worker's limits.
const memoryFactor = 4
