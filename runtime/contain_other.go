//go:build !linux

package runtime

// contain has no implementation off Linux: workers there are bounded by
// time and memory only.
func contain() error { return errContainUnsupported }

// totalMemory is unknown off Linux.
func totalMemory() int64 { return 0 }
