//go:build !race

package broker_test

// raceEnabled says the tests run under the race detector.
const raceEnabled = false
