package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// PoolOptions configure a Pool. A nil *PoolOptions means defaults.
type PoolOptions struct {
	// Command makes the command of a new worker: a process that calls
	// ServeWorker. Nil means the running binary with WorkerEnv set.
	Command func() *exec.Cmd
	// Idle is how many idle workers are kept warm. Zero means 2.
	Idle int
	// Max bounds the workers running scripts at once; executions beyond it
	// wait for one to finish, within their own timeout. Zero means as many
	// as the machine's memory holds at twice MemoryLimit each, between 8
	// and 64 (48 on a 24 GiB machine).
	Max int
	// MaxExecutions replaces a worker after this many executions. Zero
	// means 100.
	MaxExecutions int
	// MemoryLimit is each worker's memory limit in bytes, told to the
	// worker in KUBECODE_WORKER_MEMORY. Zero means 256 MiB.
	MemoryLimit int64
	// Runtime are the limits of every execution (timeouts, sizes).
	Runtime *Options
}

// Pool runs executions in worker processes, so that no script can take the
// server down: at the deadline the worker is killed, whatever it is doing,
// and a worker that dies (out of memory) takes only its own script. It is
// safe for concurrent use; every execution has a worker of its own.
type Pool struct {
	opts    PoolOptions
	runtime Options
	idle    chan *worker
	slots   chan struct{} // one per running execution
	closed  atomic.Bool
	warming atomic.Bool  // a spare is starting
	started atomic.Int64 // workers started, for tests and metrics
	live    atomic.Int64 // worker processes alive
	peak    atomic.Int64 // most worker processes alive at once
	execs   atomic.Int64 // execution ids

	keyMu   sync.Mutex
	lastOps *Operation // the first of the last operations seen, and their key
	lastKey string
}

// key names ops (and the pool's options), remembering the last slice seen:
// the broker passes the same one until its catalog changes.
func (p *Pool) key(ops []Operation) string {
	p.keyMu.Lock()
	defer p.keyMu.Unlock()
	var first *Operation
	if len(ops) > 0 {
		first = &ops[0]
	}
	if first == nil || first != p.lastOps {
		p.lastOps, p.lastKey = first, opsKey(ops, p.runtime)
	}
	return p.lastKey
}

// NewPool returns a Pool; workers start on demand and are kept warm.
func NewPool(opts *PoolOptions) *Pool {
	p := &Pool{}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.Idle == 0 {
		p.opts.Idle = 2
	}
	if p.opts.MemoryLimit == 0 {
		p.opts.MemoryLimit = 256 << 20
	}
	if p.opts.Max == 0 {
		p.opts.Max = 16
		if mem := totalMemory(); mem > 0 {
			p.opts.Max = int(min(max(mem/(2*p.opts.MemoryLimit), 8), 64))
		}
	}
	p.slots = make(chan struct{}, p.opts.Max)
	if p.opts.MaxExecutions == 0 {
		p.opts.MaxExecutions = 100
	}
	if p.opts.Command == nil {
		p.opts.Command = selfCommand
	}
	p.runtime = p.opts.Runtime.withDefaults()
	p.idle = make(chan *worker, p.opts.Idle)
	return p
}

// killGrace is how long past its deadline a worker may take to answer
// (its own interrupt usually answers within milliseconds) before the pool
// kills it.
const killGrace = 250 * time.Millisecond

// WorkerMemoryEnv tells a worker its memory limit in bytes.
const WorkerMemoryEnv = "KUBECODE_WORKER_MEMORY"

func selfCommand() *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	return exec.Command(exe)
}

// Started is how many worker processes the pool has started.
func (p *Pool) Started() int64 { return p.started.Load() }

// Peak is the most worker processes alive at once so far.
func (p *Pool) Peak() int64 { return p.peak.Load() }

// Close stops the idle workers; busy ones stop when their execution ends.
func (p *Pool) Close() error {
	p.closed.Store(true)
	for {
		select {
		case w := <-p.idle:
			w.kill()
		default:
			return nil
		}
	}
}

// Execute runs code in a worker with ops as tools, calling host for every
// operation call. It always returns by the deadline plus a quarter second.
func (p *Pool) Execute(ctx context.Context, ops []Operation, code string, opts *ExecOptions) *Result {
	start := time.Now()
	timeout := p.runtime.Timeout
	var host HostFunc = noHost
	if opts != nil {
		if opts.Timeout > 0 {
			timeout = min(opts.Timeout, p.runtime.MaxTimeout)
		}
		if opts.Host != nil {
			host = opts.Host
		}
	}
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	case <-wait.C:
		return &Result{Error: &Error{Kind: KindLimit, Message: fmt.Sprintf("all %d script workers stayed busy for the script's whole %s timeout", p.opts.Max, timeout),
			Hint: "retry shortly; long or runaway scripts from other callers hold the workers"}, Duration: time.Since(start)}
	case <-ctx.Done():
		return &Result{Error: &Error{Kind: KindTimeout, Message: "the execution was canceled while it waited for a worker"}, Duration: time.Since(start)}
	}
	w, err := p.get()
	if err != nil {
		return &Result{Error: &Error{Kind: KindRuntime, Message: "no worker to run the script: " + err.Error()}, Duration: time.Since(start)}
	}
	id := "x" + strconv.FormatInt(p.execs.Add(1), 10)
	params := executeParams{Code: code, TimeoutNs: int64(timeout), OpsKey: p.key(ops)}
	if w.opsKey != params.OpsKey { // the worker learns the operations once
		params.Ops, params.Options = ops, &p.runtime
	}
	res, reusable := w.execute(ctx, id, params, host, time.Until(start.Add(timeout))+killGrace, p.opts.MemoryLimit)
	if reusable {
		w.opsKey = params.OpsKey
	}
	res.Duration = time.Since(start)
	if reusable && w.runs < p.opts.MaxExecutions && !p.closed.Load() {
		select {
		case p.idle <- w:
			if p.closed.Load() { // closed meanwhile: drain again
				_ = p.Close()
			}
			return res
		default:
		}
	}
	w.kill()
	return res
}

// get returns an idle worker, or starts one, and keeps a spare warming.
func (p *Pool) get() (*worker, error) {
	select {
	case w := <-p.idle:
		return w, nil
	default:
	}
	w, err := p.start()
	if err != nil {
		return nil, err
	}
	go p.warm()
	return w, nil
}

// warm starts a worker for the idle set if there is room, one at a time.
func (p *Pool) warm() {
	if p.closed.Load() || len(p.idle) >= cap(p.idle) || !p.warming.CompareAndSwap(false, true) {
		return
	}
	defer p.warming.Store(false)
	w, err := p.start()
	if err != nil {
		return
	}
	select {
	case p.idle <- w:
		if p.closed.Load() { // closed meanwhile: drain again
			_ = p.Close()
		}
	default:
		w.kill()
	}
}

func (p *Pool) start() (*worker, error) {
	cmd := p.opts.Command()
	cmd.Env = append(cmd.Environ(), WorkerEnv+"=1", WorkerMemoryEnv+"="+strconv.FormatInt(p.opts.MemoryLimit, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, in: stdin, exited: make(chan struct{})}
	cmd.Stderr = &w.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.started.Add(1)
	if n := p.live.Add(1); n > p.peak.Load() {
		p.peak.Store(n) // racy max: good enough for tests and metrics
	}
	w.out = bufio.NewScanner(stdout)
	w.out.Buffer(make([]byte, 64<<10), 256<<20)
	go func() { _ = cmd.Wait(); p.live.Add(-1); close(w.exited) }()
	return w, nil
}

// worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr lockedBuffer
	exited chan struct{}
	runs   int
	opsKey string // the operations the worker knows

	writeMu sync.Mutex
}

func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	_ = w.in.Close()
	<-w.exited
}

func (w *worker) send(m rpcMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	_, err = w.in.Write(append(b, '\n'))
	return err
}

// execute runs one script; reusable is false when the worker must go.
func (w *worker) execute(ctx context.Context, id string, p executeParams, host HostFunc, limit time.Duration, memory int64) (res *Result, reusable bool) {
	w.runs++
	params, err := json.Marshal(p)
	if err != nil {
		return &Result{Error: &Error{Kind: KindRuntime, Message: err.Error()}}, true
	}
	rawID := json.RawMessage(strconv.Quote(id))
	if err := w.send(rpcMessage{JSONRPC: "2.0", ID: rawID, Method: methodExecute, Params: params}); err != nil {
		return w.died(memory), false
	}
	var calls sync.WaitGroup
	defer calls.Wait() // after cancel below: calls in flight end with ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan rpcMessage)
	readDone := make(chan struct{})
	go func() { // reads until the answer; killing the worker ends it
		defer close(readDone)
		for w.out.Scan() {
			var m rpcMessage
			if json.Unmarshal(w.out.Bytes(), &m) != nil {
				continue
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
			if m.Method == "" && string(m.ID) == string(rawID) {
				return
			}
		}
	}()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		select {
		case m := <-msgs:
			if m.Method == methodToolCall {
				var callID string
				if json.Unmarshal(m.ID, &callID) != nil || !strings.HasPrefix(callID, id+"/") {
					_ = w.send(rpcMessage{JSONRPC: "2.0", ID: m.ID, Error: &rpcError{Code: -32600, Message: "the execution this call belongs to has ended"}})
					continue
				}
				calls.Add(1)
				go func() {
					defer calls.Done()
					w.answer(ctx, m, host)
				}()
				continue
			}
			if string(m.ID) != string(rawID) {
				continue // an answer to nothing we asked
			}
			var out Result
			if m.Error != nil || json.Unmarshal(m.Result, &out) != nil {
				msg := "the worker could not run the script"
				if m.Error != nil {
					msg += ": " + m.Error.Message
				}
				return &Result{Error: &Error{Kind: KindRuntime, Message: msg}}, false
			}
			<-readDone
			return &out, true
		case <-readDone:
			return w.died(memory), false
		case <-deadline.C:
			cancel()
			w.kill()
			return &Result{Error: &Error{Kind: KindTimeout, Message: fmt.Sprintf("script exceeded its %s timeout; its worker was stopped", time.Duration(p.TimeoutNs)),
				Hint: "do less work per execution: filter server-side with selectors, avoid catastrophic regular expressions"}}, false
		case <-ctx.Done():
			w.kill()
			return &Result{Error: &Error{Kind: KindTimeout, Message: "the execution was canceled"}}, false
		}
	}
}

// answer serves one tools/call of the worker with host.
func (w *worker) answer(ctx context.Context, m rpcMessage, host HostFunc) {
	var p callParams
	reply := rpcMessage{JSONRPC: "2.0", ID: m.ID}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		reply.Error = &rpcError{Code: -32602, Message: err.Error()}
	} else if out, err := safeCall(host, &Operation{Name: p.Name}, ctx, p.Arguments); err != nil {
		ce := &CallError{}
		if !errors.As(err, &ce) {
			ce = &CallError{Message: err.Error()}
		}
		reply.Error = &rpcError{Code: -32000, Message: ce.Message, Data: ce}
	} else {
		reply.Result = out
	}
	_ = w.send(reply)
}

// died reports a worker that ended before answering.
func (w *worker) died(memory int64) *Result {
	select {
	case <-w.exited:
	case <-time.After(time.Second):
		w.kill()
	}
	stderr := w.stderr.String()
	if strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") {
		return &Result{Error: &Error{Kind: KindLimit, Message: fmt.Sprintf("memory limit exceeded (%d MB)", memory>>20),
			Hint: "hold less data at once: list with selectors and limit, keep only the fields you need"}}
	}
	msg := ErrWorkerDied.Error()
	if st := w.cmd.ProcessState; st != nil {
		msg += " (" + st.String() + ")"
	}
	return &Result{Error: &Error{Kind: KindRuntime, Message: msg}}
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and our reads,
// keeping the last 64 KiB.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		l.b.Next(l.b.Len() - 32<<10)
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
