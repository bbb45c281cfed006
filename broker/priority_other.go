//go:build !unix

package broker

// lowerPriority does nothing where there are no nice values.
func lowerPriority(int) {}
