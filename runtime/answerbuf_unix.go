//go:build unix

package runtime

import "syscall"

// mapAnswer returns n bytes of memory outside the Go heap for a large
// answer, or nil when the system gives none (then the heap is used).
func mapAnswer(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil
	}
	return b
}

// unmapAnswer gives back what mapAnswer returned.
func unmapAnswer(b []byte) { _ = syscall.Munmap(b) }
