package runtime

import (
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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

// limitCPU arms a limit of d more CPU time (user and system, to the
// second) for this process: past it the kernel signals SIGXCPU, which the
// returned channel receives. disarm lifts the limit.
func limitCPU(d time.Duration) (exceeded <-chan os.Signal, disarm func()) {
	var ru syscall.Rusage
	var old syscall.Rlimit
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil || syscall.Getrlimit(syscall.RLIMIT_CPU, &old) != nil {
		return nil, func() {}
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	secs := uint64((used + d + time.Second - 1) / time.Second)
	if secs >= old.Max {
		return nil, func() {}
	}
	xcpuOnce.Do(func() { // once: signal.Stop waits for the signal loop
		xcpu = make(chan os.Signal, 1)
		signal.Notify(xcpu, syscall.SIGXCPU)
	})
	select {
	case <-xcpu: // a late signal of an earlier execution
	default:
	}
	if syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: old.Max}) != nil {
		return nil, func() {}
	}
	return xcpu, func() { _ = syscall.Setrlimit(syscall.RLIMIT_CPU, &old) }
}

var (
	xcpuOnce sync.Once
	xcpu     chan os.Signal
)

// cpuTime is the CPU time (user and system) process pid has used.
func cpuTime(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command's closing parenthesis: state is field 3,
	// utime and stime are fields 14 and 15, in clock ticks (100 a second).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+k) * 10 * time.Millisecond, true
}

// demote lowers the CPU priority of every thread of process group pgid
// (a worker is its own group) to the lowest, nice 19: a script that keeps
// computing then yields the CPU to every other one. Only a privileged
// server can undo it (promote); otherwise a demoted worker is not reused.
func demote(pgid int) error {
	return syscall.Setpriority(syscall.PRIO_PGRP, pgid, 19)
}

// promote gives process group pgid back the normal priority, nice 0; it
// fails without the privilege to raise priorities (CAP_SYS_NICE).
func promote(pgid int) error {
	return syscall.Setpriority(syscall.PRIO_PGRP, pgid, 0)
}
