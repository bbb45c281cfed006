package runtime

import (
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
)

// deniedSyscalls are what a worker never needs once it serves scripts
// over its pipes: files, sockets, new programs, other processes, kernel
// facilities. They fail with EPERM (a Go error, not a crash).
var deniedSyscalls = []string{
	// files
	"open", "openat", "openat2", "creat", "unlink", "unlinkat", "rename", "renameat", "renameat2",
	"mkdir", "mkdirat", "rmdir", "symlink", "symlinkat", "link", "linkat", "chmod", "fchmodat",
	"chown", "fchownat", "lchown", "truncate", "mknod", "mknodat",
	// network
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
	// programs and processes
	"execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "kill",
	// kernel facilities
	"mount", "umount2", "chroot", "pivot_root", "setns", "unshare", "bpf", "perf_event_open",
	"keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module", "kexec_load",
	"reboot", "swapon", "swapoff", "personality",
}

// contain restricts the calling process for good: no new privileges, and
// every system call in deniedSyscalls fails with EPERM, on every thread.
func contain() error {
	if !seccomp.Supported() {
		return errContainUnsupported
	}
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: deniedSyscalls}},
		},
	})
}

// totalMemory is the machine's memory in bytes, or 0 if unknown.
func totalMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
