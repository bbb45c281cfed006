package controlplane

import "syscall"

// childProcAttr gives a child its own process group and SIGKILL as its
// parent-death signal.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
