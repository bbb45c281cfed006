//go:build race

package controlplane

// raceSlowdown scales real-time bounds under the race detector.
const raceSlowdown = 5
