package controlplane

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// process is one child program (etcd or kube-apiserver) with its output in a
// log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // Wait's result, valid after done
}

// startProcess starts path with args, output appended to logPath.
//
// The child gets its own process group (so Ctrl-C in a terminal reaches only
// the test binary, which then stops it) and SIGKILL as parent-death signal, so
// it dies with the test binary even on panic or os.Exit. Linux delivers the
// parent-death signal when the *thread* that forked exits, so the fork happens
// on a goroutine locked to its thread that stays blocked in Wait for the
// child's whole life.
func startProcess(name, path string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &process{name: name, logPath: logPath, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout = logFile
	p.cmd.Stderr = logFile
	p.cmd.SysProcAttr = childProcAttr()

	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine, after the child.
		if err := p.cmd.Start(); err != nil {
			logFile.Close()
			started <- err
			return
		}
		started <- nil
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// pid returns the child's process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the child has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the child's process group, then SIGKILL after grace,
// and waits for it to exit.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid())
	}
}

// logTail returns the last lines of the child's log for error messages.
func (p *process) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s", p.logPath, tail(b, 30))
}

// errExited is returned when a child exits while the control plane waits for
// it to become ready.
var errExited = errors.New("exited during start-up")
