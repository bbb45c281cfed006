package runtime

import "syscall"

// workerProcAttr has nothing to add on Windows.
func workerProcAttr() *syscall.SysProcAttr { return nil }

// limitData does nothing on Windows: Go's soft memory limit alone applies.
func limitData(uint64) {}
