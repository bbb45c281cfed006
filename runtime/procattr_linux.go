package runtime

import "syscall"

// workerProcAttr starts a worker in its own process group (so it can be
// demoted as a whole) with SIGKILL as its parent-death signal.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// limitData caps the process's writable memory (RLIMIT_DATA).
func limitData(bytes uint64) {
	_ = syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: bytes, Max: bytes})
}
