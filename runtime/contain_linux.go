package runtime

import (
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

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
// second) for this process: past it the kernel signals SIGXCPU and
// exceeded is called (on another goroutine), unless disarm was called
// first. Arming costs two system calls and no goroutine: one listener
// serves every execution of the process, and disarming only forgets
// exceeded (the limit stays where it is, above what an idle worker uses,
// until the next execution moves it).
func limitCPU(d time.Duration, exceeded func()) (disarm func()) {
	xcpuOnce.Do(func() { // once per process: the listener serves every execution
		var old syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_CPU, &old) != nil {
			return
		}
		xcpuMax = old.Max
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGXCPU)
		go func() {
			for range ch {
				a := xcpuArmed.Load()
				// A late signal of an earlier limit is not this one's.
				if used, ok := selfCPU(); a != nil && ok && used >= a.at {
					a.exceeded()
				}
			}
		}()
	})
	used, ok := selfCPU()
	if !ok || xcpuMax == 0 {
		return func() {}
	}
	secs := uint64((used + d + time.Second - 1) / time.Second)
	if secs >= xcpuMax {
		return func() {}
	}
	a := &cpuLimit{at: time.Duration(secs) * time.Second, exceeded: exceeded}
	xcpuArmed.Store(a)
	if syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: xcpuMax}) != nil {
		xcpuArmed.CompareAndSwap(a, nil)
		return func() {}
	}
	return func() { xcpuArmed.CompareAndSwap(a, nil) }
}

// cpuLimit is the CPU limit armed for the execution under way.
type cpuLimit struct {
	at       time.Duration // the process's CPU time the limit is at
	exceeded func()
}

var (
	xcpuOnce  sync.Once
	xcpuMax   uint64 // the hard limit; zero when it could not be read
	xcpuArmed atomic.Pointer[cpuLimit]
)

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// demote gives every thread of worker process pid (its own process group)
// the lowest CPU priority: the SCHED_IDLE policy (a weight of 3, against
// 15 for nice 19 and 1024 for nice 0: thirty spinning scripts together
// weigh a tenth of one normal process) and nice 19, which threads started
// later keep. A script that keeps computing then yields the CPU to every
// other one, and to the workers starting for them. Only a privileged
// server can undo it (promote); otherwise a demoted worker is not reused.
func demote(pid int) error {
	if err := syscall.Setpriority(syscall.PRIO_PGRP, pid, 19); err != nil {
		return err
	}
	// SCHED_IDLE is a further step down: a kernel that refuses it leaves
	// the worker at nice 19, demoted still.
	_ = setPolicy(pid, schedIdle)
	return nil
}

// promote gives worker process pid back a worker's priority: SCHED_OTHER
// and nice 10 (niceWorker); it fails without the privilege to raise
// priorities (CAP_SYS_NICE).
func promote(pid int) error {
	if err := setPolicy(pid, schedOther); err != nil {
		return err
	}
	return niceWorker(pid)
}

// niceWorker sets every thread of worker process pid (its own process
// group) to nice 10: below the server, which serves and watches it.
func niceWorker(pid int) error { return syscall.Setpriority(syscall.PRIO_PGRP, pid, 10) }

// Scheduling policies (sched(7)).
const (
	schedOther = 0
	schedIdle  = 5
)

// setPolicy sets the scheduling policy of every thread of process pid; it
// returns the first error, after trying every thread.
func setPolicy(pid int, policy int) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		var param struct{ priority int32 }
		if _, _, e := syscall.Syscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&param))); e != 0 && e != syscall.ESRCH && first == nil {
			first = e
		}
	}
	return first
}

// waitExit returns once process pid (a child) has ended, leaving it to be
// reaped (waitid with WNOWAIT); at once if it cannot wait.
func waitExit(pid int) {
	const pPID, wExited, wNoWait = 1, 4, 0x01000000
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}
