//go:build unix && !linux

package runtime

import "syscall"

// workerProcAttr starts a worker in its own process group. There is no
// parent-death signal here: a worker whose parent died ends when its stdin
// closes, once its script is done.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// limitData caps the process's writable memory (RLIMIT_DATA).
func limitData(bytes uint64) {
	_ = syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: bytes, Max: bytes})
}
