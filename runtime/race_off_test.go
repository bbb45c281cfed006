//go:build !race

package runtime

// slowdown is how much slower scripts run in this test binary than in
// kubecode: not at all without the race detector.
const slowdown = 1

// memoryFactor is how much more memory a worker of this test binary holds
// for the same script than kubecode's: none more without the race detector.
const memoryFactor = 1
