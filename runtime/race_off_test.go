//go:build !race

package runtime

// slowdown is how much slower scripts run in this test binary than in
// kubecode: not at all without the race detector.
const slowdown = 1
