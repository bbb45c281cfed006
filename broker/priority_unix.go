//go:build unix

package broker

import "syscall"

// lowerPriority moves process pid to CPU priority nice 10: full speed on an
// idle machine, second to others on a busy one.
func lowerPriority(pid int) {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, 10)
}
