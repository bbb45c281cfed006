//go:build !race

package controlplane

// raceSlowdown scales real-time bounds under the race detector: none here.
const raceSlowdown = 1
