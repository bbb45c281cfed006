//go:build !linux

package controlplane

import "syscall"

// childProcAttr gives a child its own process group. There is no
// parent-death signal here: children of a parent that crashed must be
// stopped by hand.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
