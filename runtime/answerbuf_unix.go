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

// reserveAnswer returns n bytes of address space outside the Go heap for
// an answer arriving in parts, none of it usable until commitAnswer (so
// none counts as memory), or nil when the system gives none.
func reserveAnswer(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil
	}
	return b
}

// commitAnswer makes the first n bytes of a reservation usable.
func commitAnswer(b []byte, n int) bool {
	return syscall.Mprotect(b[:n], syscall.PROT_READ|syscall.PROT_WRITE) == nil
}
