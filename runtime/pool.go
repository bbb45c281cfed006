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
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// PoolOptions configure a Pool. A nil *PoolOptions means defaults.
type PoolOptions struct {
	// Command makes the command of a new worker: a process that calls
	// ServeWorker. Nil means the running binary with WorkerEnv set.
	Command func() *exec.Cmd
	// Idle is how many idle workers are kept warm at all times. Zero means
	// 2. After a burst, up to Max workers stay warm for IdleTimeout.
	Idle int
	// IdleTimeout is how long a worker beyond Idle stays warm unused. Zero
	// means a minute.
	IdleTimeout time.Duration
	// Max bounds the workers running scripts at once; executions beyond it
	// wait for one to finish, within their own timeout. Zero means as many
	// as the machine's memory holds at MemoryLimit each, between 8 and 128
	// (96 on a 24 GiB machine). Most scripts use a small part of the limit.
	Max int
	// MaxExecutions replaces a worker after this many executions. Zero
	// means 10,000 (a start costs tens of milliseconds of CPU: after 1,000
	// executions that was a quarter of a trivial execution's CPU).
	MaxExecutions int
	// MemoryLimit is each worker's memory limit in bytes, told to the
	// worker in KUBECODE_WORKER_MEMORY. Zero means 256 MiB.
	MemoryLimit int64
	// CPULimit bounds the CPU time of each execution (to the second): past
	// it the script stops with a limit error, even when its wall-clock
	// timeout is longer. Zero means 10s; negative means none.
	CPULimit time.Duration
	// Demote is a window: a script that computes (rather than waits for
	// an operation's answer, a timer, a promise) at least half of a window
	// this long while other executions run has its worker demoted to the
	// lowest CPU priority (SCHED_IDLE, nice 19), so that scripts that
	// answer quickly keep their latency while others spin; a demoted worker
	// is replaced afterwards unless the server may raise priorities. The
	// worker tells when (its script's loop knows it computes); a script
	// computing alone keeps its priority and its warm worker. Zero means
	// 20ms; negative means never.
	Demote time.Duration
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
	idleMu  sync.Mutex
	idle    []*worker      // warm workers, the longest idle first
	waiters []chan handoff // executions waiting for a worker, the longest first
	// spawning counts the workers starting for waiting executions.
	spawning int
	reaper   *time.Timer   // stops workers idle past IdleTimeout
	slots    chan struct{} // one per running execution
	closed   atomic.Bool
	warming  atomic.Bool  // a spare is starting
	started  atomic.Int64 // workers started, for tests and metrics
	live     atomic.Int64 // worker processes alive
	peak     atomic.Int64 // most worker processes alive at once
	execs    atomic.Int64 // execution ids

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
			p.opts.Max = int(min(max(mem/p.opts.MemoryLimit, 8), 128))
		}
	}
	// More idle workers than Max would never all be kept: warming would
	// start and stop workers without end.
	p.opts.Idle = min(p.opts.Idle, p.opts.Max)
	p.slots = make(chan struct{}, p.opts.Max)
	if p.opts.MaxExecutions == 0 {
		p.opts.MaxExecutions = 10000
	}
	if p.opts.Command == nil {
		p.opts.Command = selfCommand
	}
	if p.opts.CPULimit == 0 {
		p.opts.CPULimit = 10 * time.Second
	}
	if p.opts.Demote == 0 {
		p.opts.Demote = 20 * time.Millisecond
	}
	p.runtime = p.opts.Runtime.withDefaults()
	if p.opts.IdleTimeout == 0 {
		p.opts.IdleTimeout = time.Minute
	}
	p.reaper = time.AfterFunc(time.Hour, p.reap)
	p.reaper.Stop()
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
	p.idleMu.Lock()
	p.closed.Store(true)
	idle := p.idle
	p.idle = nil
	p.reaper.Stop()
	p.idleMu.Unlock()
	for _, w := range idle {
		w.kill()
	}
	return nil
}

// put hands w to the longest waiting execution, or keeps it warm, or
// stops it if the pool is closed or full; false means it stopped w.
func (p *Pool) put(w *worker) bool {
	p.idleMu.Lock()
	if len(p.waiters) > 0 && !p.closed.Load() {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.idleMu.Unlock()
		ch <- handoff{w: w}
		return true
	}
	if p.closed.Load() || len(p.idle) >= p.opts.Max {
		p.idleMu.Unlock()
		w.kill()
		return false
	}
	w.idleSince = time.Now()
	p.idle = append(p.idle, w)
	if len(p.idle) == p.opts.Idle+1 {
		p.reaper.Reset(p.opts.IdleTimeout)
	}
	p.idleMu.Unlock()
	return true
}

// take returns the most recently used warm worker, or nil.
func (p *Pool) take() *worker {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	w := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return w
}

// reap stops the workers beyond Idle that stayed unused for IdleTimeout.
func (p *Pool) reap() {
	p.idleMu.Lock()
	var old []*worker
	for len(p.idle) > p.opts.Idle && time.Since(p.idle[0].idleSince) >= p.opts.IdleTimeout {
		old = append(old, p.idle[0])
		p.idle[0] = nil
		p.idle = p.idle[1:]
	}
	if len(p.idle) > p.opts.Idle && !p.closed.Load() {
		p.reaper.Reset(time.Until(p.idle[0].idleSince.Add(p.opts.IdleTimeout)))
	}
	p.idleMu.Unlock()
	for _, w := range old {
		w.kill()
	}
}

// Warm is how many workers are warm and idle.
func (p *Pool) Warm() int {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	return len(p.idle)
}

// Execute runs code in a worker with ops as tools, calling host for every
// operation call. It always returns by the deadline plus a quarter second.
func (p *Pool) Execute(ctx context.Context, ops []Operation, code string, opts *ExecOptions) *Result {
	start := time.Now()
	timeout := p.runtime.Timeout
	var host HostFunc = noHost
	var console func(level, text string)
	if opts != nil {
		if opts.Timeout > 0 {
			timeout = min(opts.Timeout, p.runtime.MaxTimeout)
		}
		if opts.Host != nil {
			host = opts.Host
		}
		console = opts.Console
	}
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	select {
	case p.slots <- struct{}{}: // a free slot is taken, however late this goroutine ran
	default:
		select {
		case p.slots <- struct{}{}:
		case <-wait.C:
			return &Result{Error: &Error{Kind: KindLimit, Message: fmt.Sprintf("all %d script workers stayed busy for the script's whole %s timeout", p.opts.Max, timeout),
				Hint: "retry shortly; long or runaway scripts from other callers hold the workers"}, Duration: time.Since(start)}
		case <-ctx.Done():
			return &Result{Error: &Error{Kind: KindTimeout, Message: "the execution was canceled while it waited for a worker"}, Duration: time.Since(start)}
		}
	}
	defer func() { <-p.slots }()
	w, err := p.get(ctx, wait.C)
	switch {
	case errors.Is(err, errWaited):
		return &Result{Error: &Error{Kind: KindLimit, Message: fmt.Sprintf("no script worker came free or started within the script's %s timeout", timeout),
			Hint: "retry shortly; many scripts from other callers hold the workers"}, Duration: time.Since(start)}
	case err != nil && ctx.Err() != nil:
		return &Result{Error: &Error{Kind: KindTimeout, Message: "the execution was canceled while it waited for a worker"}, Duration: time.Since(start)}
	case err != nil:
		return &Result{Error: &Error{Kind: KindRuntime, Message: "no worker to run the script: " + err.Error()}, Duration: time.Since(start)}
	}
	id := "x" + strconv.FormatInt(p.execs.Add(1), 10)
	// The worker stops the script at the script's deadline, not a full
	// timeout after a wait for a worker: it answers (and stays warm)
	// before the pool would kill it.
	params := executeParams{Code: code, TimeoutNs: int64(timeout), Deadline: start.Add(timeout).UnixNano(),
		CPULimitNs: int64(max(p.opts.CPULimit, 0)), ComputingNs: int64(max(p.opts.Demote, 0)), OpsKey: p.key(ops), Console: console != nil}
	if w.opsKey != params.OpsKey { // the worker learns the operations once
		params.Ops, params.Options = ops, &p.runtime
	}
	w.contended = func() bool { return p.Busy() > 1 }
	res, reusable := w.execute(ctx, id, params, host, console, time.Until(start.Add(timeout))+killGrace, p.opts.MemoryLimit)
	if reusable {
		w.opsKey = params.OpsKey
	}
	res.Duration = time.Since(start)
	if reusable && w.runs < p.opts.MaxExecutions {
		p.put(w)
	} else {
		w.kill()
		p.spawnForWaiters()
	}
	return res
}

// maxSpawning bounds the workers starting at once for waiting executions.
// A burst of executions waits for the first worker that comes free (a
// trivial script frees its own in milliseconds) or starts, rather than
// starting a process each: a start costs tens of milliseconds of CPU, and
// a hundred at once held a 2-core machine for seconds, past every
// script's timeout.
var maxSpawning = max(2, goruntime.NumCPU())

// errWaited: no worker came free or started before the wait ended.
var errWaited = errors.New("no worker in time")

// handoff is a worker, or why none could start, for a waiting execution.
type handoff struct {
	w   *worker
	err error
}

// get returns an idle worker, or waits for one to come free or start
// (until ctx ends or timeout fires), and keeps a spare warming.
func (p *Pool) get(ctx context.Context, timeout <-chan time.Time) (*worker, error) {
	if w := p.take(); w != nil {
		p.warmSoon()
		return w, nil
	}
	ch := make(chan handoff, 1)
	p.idleMu.Lock()
	p.waiters = append(p.waiters, ch)
	p.idleMu.Unlock()
	p.spawnForWaiters()
	var err error
	select {
	case h := <-ch:
		p.warmSoon()
		return h.w, h.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = errWaited
	}
	p.idleMu.Lock()
	for i, c := range p.waiters {
		if c == ch {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			break
		}
	}
	p.idleMu.Unlock()
	select {
	case h := <-ch: // handed over as it gave up: pass it on
		if h.w != nil {
			p.put(h.w)
		}
	default:
	}
	return nil, err
}

// spawnForWaiters starts workers for the executions waiting for one, at
// most maxSpawning at once; each goes to the longest waiting.
func (p *Pool) spawnForWaiters() {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	for p.spawning < len(p.waiters) && p.spawning < maxSpawning && !p.closed.Load() {
		p.spawning++
		go func() {
			w, err := p.start()
			p.idleMu.Lock()
			p.spawning--
			var failed chan handoff
			if err != nil && len(p.waiters) > 0 {
				failed, p.waiters = p.waiters[0], p.waiters[1:]
			}
			p.idleMu.Unlock()
			if failed != nil {
				failed <- handoff{err: err}
			}
			if w != nil {
				p.put(w)
			}
			p.spawnForWaiters()
		}()
	}
}

// warmSoon starts a spare warming when the idle set has room for one: no
// goroutine when it is full, as it is while a steady load finds workers.
func (p *Pool) warmSoon() {
	if !p.closed.Load() && p.Warm() < p.opts.Idle && !p.warming.Load() {
		go p.warm()
	}
}

// warm starts workers for the idle set, one at a time, until it is full.
func (p *Pool) warm() {
	for p.warming.CompareAndSwap(false, true) {
		filled := p.fill()
		p.warming.Store(false)
		// A take between fill's last look and the store saw a spare
		// warming and started none: look again.
		if !filled || p.closed.Load() || p.Warm() >= p.opts.Idle {
			return
		}
	}
}

// fill starts workers until the idle set is full; false when a start
// failed or the pool stopped a worker (closed, or full).
func (p *Pool) fill() bool {
	for !p.closed.Load() && p.Warm() < p.opts.Idle {
		w, err := p.start()
		if err != nil || !p.put(w) {
			return false
		}
	}
	return true
}

// Prewarm starts the idle workers (Idle) in the background now rather
// than at the first execution, which would otherwise wait for a worker's
// start (tens of milliseconds of CPU).
func (p *Pool) Prewarm() { p.warmSoon() }

func (p *Pool) start() (*worker, error) {
	cmd := p.opts.Command()
	// Workers hold no secret of the server's, environment included (a plan
	// key, exporter headers): they get the Go runtime's settings only.
	cmd.Env = append(workerEnv(cmd.Environ()), WorkerEnv+"=1", WorkerMemoryEnv+"="+strconv.FormatInt(p.opts.MemoryLimit, 10))
	cmd.SysProcAttr = workerProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, in: stdin, dead: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = &w.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	_ = niceWorker(cmd.Process.Pid)
	p.started.Add(1)
	if n := p.live.Add(1); n > p.peak.Load() {
		p.peak.Store(n) // racy max: good enough for tests and metrics
	}
	w.out = bufio.NewScanner(stdout)
	w.out.Buffer(make([]byte, 64<<10), 256<<20)
	go func() {
		// Reaped one at a time: releasing a worker that ended costs its
		// parent kernel time, which on this project's 2-core VM grew to
		// seconds of two cores spinning on the same lock when a burst's
		// workers were reaped at once; the worker is dead (its memory
		// given back) before it waits its turn.
		waitExit(cmd.Process.Pid)
		close(w.dead)
		reapMu.Lock()
		_ = cmd.Wait()
		reapMu.Unlock()
		p.live.Add(-1)
		close(w.exited)
	}()
	if err := w.ready(); err != nil {
		w.kill()
		return nil, err
	}
	return w, nil
}

// readyTimeout bounds a worker's start: past it, the worker is stopped and
// the start fails.
const readyTimeout = 30 * time.Second

// ready waits for the worker's first message, runtime/ready: a worker is
// handed to a script only once it can run one at once, so a script's time
// never goes to starting a process (which, on a loaded machine, can take
// longer than a trivial script's whole timeout).
func (w *worker) ready() error {
	stop := time.AfterFunc(readyTimeout, func() { _ = w.cmd.Process.Kill() })
	defer stop.Stop()
	if w.out.Scan() {
		var m rpcMessage
		if json.Unmarshal(w.out.Bytes(), &m) == nil && m.Method == methodReady {
			var p readyParams
			if err := json.Unmarshal(m.Params, &p); err != nil || p.Protocol != workerProtocol {
				return fmt.Errorf("the worker %s speaks protocol %d, this server %d: build the worker binary from the same sources as the server", w.cmd.Path, p.Protocol, workerProtocol)
			}
			return nil
		}
		return fmt.Errorf("the worker started with %.200q instead of %s", w.out.Bytes(), methodReady)
	}
	<-w.exited
	if s := strings.TrimSpace(w.stderr.String()); s != "" {
		return fmt.Errorf("the worker ended as it started: %s", s)
	}
	return fmt.Errorf("the worker ended as it started: %v", w.cmd.ProcessState)
}

// worker is one worker process.
type worker struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	stderr  lockedBuffer
	dead    chan struct{} // closed once the process has ended
	exited  chan struct{} // closed once it is reaped: its ProcessState is set
	runs    int
	opsKey  string      // the operations the worker knows
	demoted atomic.Bool // at nice 19 for good: not reused
	// contended says other executions are running: only then is a worker
	// that computes long demoted (alone, it slows nobody, and a demoted
	// worker is not reused: the next big script would start cold).
	contended func() bool
	// idleSince is when the worker last went idle.
	idleSince time.Time

	writeMu sync.Mutex
}

func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	_ = w.in.Close()
	<-w.dead
}

// reapMu makes the pool's processes reaped one at a time (see start).
var reapMu sync.Mutex

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
// The calling goroutine reads the worker's messages itself (the answer
// wakes it, with no hand-over between goroutines); a watcher ends the
// execution at its deadline or its context's end by killing the worker.
// A worker that says its script computes long is demoted while other
// executions run.
func (w *worker) execute(ctx context.Context, id string, p executeParams, host HostFunc, console func(level, text string), limit time.Duration, memory int64) (res *Result, reusable bool) {
	w.runs++
	params, err := json.Marshal(p)
	if err != nil {
		return &Result{Error: &Error{Kind: KindRuntime, Message: err.Error()}}, true
	}
	rawID := json.RawMessage(strconv.Quote(id))
	var calls sync.WaitGroup
	defer calls.Wait() // after cancel below: calls in flight end with ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wt := w.watch(ctx, time.Duration(p.TimeoutNs), limit)
	defer wt.finish()
	if err := w.send(rpcMessage{JSONRPC: "2.0", ID: rawID, Method: methodExecute, Params: params}); err != nil {
		return w.stopped(wt, memory), false
	}
	for w.out.Scan() {
		var m rpcMessage
		if json.Unmarshal(w.out.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == methodConsole:
			var c consoleParams
			if console != nil && json.Unmarshal(m.Params, &c) == nil && c.Exec == id {
				console(c.Level, c.Text)
			}
		case m.Method == methodComputing:
			var c computingParams
			if !w.isDemoted() && json.Unmarshal(m.Params, &c) == nil && c.Exec == id && w.contended() && demote(w.cmd.Process.Pid) == nil {
				w.demoted.Store(true)
			}
		case m.Method == methodToolCall:
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
		case m.Method != "" || string(m.ID) != string(rawID):
			// an answer to nothing we asked
		default:
			if !wt.finish() {
				return wt.ended, false // the answer came as the watcher stopped the worker
			}
			var out Result
			if m.Error != nil || json.Unmarshal(m.Result, &out) != nil {
				msg := "the worker could not run the script"
				if m.Error != nil {
					msg += ": " + m.Error.Message
				}
				return &Result{Error: &Error{Kind: KindRuntime, Message: msg}}, false
			}
			if w.isDemoted() && promote(w.cmd.Process.Pid) == nil {
				w.demoted.Store(false) // a privileged server undoes it: the warm worker serves on
			}
			return &out, !w.isDemoted()
		}
	}
	return w.stopped(wt, memory), false
}

// watch is what ends an execution from outside, by killing its worker:
// its deadline (limit from now: its timeout and the kill's grace) and its
// context's end. It holds no goroutine (a timer and context.AfterFunc call
// it), so an execution that ends in time costs no goroutine's start or
// wake-up.
func (w *worker) watch(ctx context.Context, timeout, limit time.Duration) *watch {
	wt := &watch{w: w, timeout: timeout}
	wt.mu.Lock() // the timer waits until both are set
	defer wt.mu.Unlock()
	wt.deadline = time.AfterFunc(limit, func() {
		wt.stop(&Result{Error: &Error{Kind: KindTimeout, Message: fmt.Sprintf("script exceeded its %s timeout; its worker was stopped", timeout),
			Hint: "do less work per execution: filter server-side with selectors, avoid catastrophic regular expressions"}})
	})
	wt.stopCtx = context.AfterFunc(ctx, func() {
		wt.stop(&Result{Error: &Error{Kind: KindTimeout, Message: "the execution was canceled"}})
	})
	return wt
}

// watch is one execution's watch (see worker.watch).
type watch struct {
	w       *worker
	timeout time.Duration

	mu sync.Mutex
	// over says the execution answered or was stopped: whichever says it
	// first decides, and nothing else happens to the worker after it.
	over  bool
	ended *Result // why the watch stopped the execution, set as over is

	deadline *time.Timer
	stopCtx  func() bool
}

// finish ends the watch as the execution ends; false means the watch
// stopped the execution first (ended says why).
func (wt *watch) finish() bool {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.over {
		return wt.ended == nil
	}
	wt.over = true
	wt.deadline.Stop()
	wt.stopCtx()
	return true
}

// stop ends the execution with r by killing its worker, unless it is over.
func (wt *watch) stop(r *Result) {
	wt.mu.Lock()
	if wt.over {
		wt.mu.Unlock()
		return
	}
	wt.over, wt.ended = true, r
	wt.mu.Unlock()
	wt.w.kill()
}

// stopped is the result of an execution whose worker stopped answering:
// stopped by the watch (its ended says why), or dead.
func (w *worker) stopped(wt *watch, memory int64) *Result {
	if !wt.finish() {
		return wt.ended
	}
	return w.died(memory)
}

func (w *worker) isDemoted() bool { return w.demoted.Load() }

// answer serves one tools/call of the worker with host.
func (w *worker) answer(ctx context.Context, m rpcMessage, host HostFunc) {
	var p callParams
	reply := rpcMessage{JSONRPC: "2.0", ID: m.ID}
	pw := &partsWriter{w: w, id: m.ID}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		reply.Error = &rpcError{Code: -32602, Message: err.Error()}
	} else if out, err := partsCall(host, &Operation{Name: p.Name}, withParts(ctx, pw.send), p.Arguments, pw); err != nil {
		ce := &CallError{}
		if !errors.As(err, &ce) {
			ce = &CallError{Message: err.Error()}
		}
		reply.Error = &rpcError{Code: -32000, Message: ce.Message, Data: ce}
	} else if len(out) > 0 {
		// The answer as it came, after a line saying its size: not
		// encoded again (an answer can be 100 MB), read by the worker
		// into a buffer of that size.
		w.writeMu.Lock()
		defer w.writeMu.Unlock()
		for _, part := range [][]byte{[]byte(`{"jsonrpc":"2.0","id":`), m.ID, []byte(`,"resultBytes":` + strconv.Itoa(len(out)) + "}\n"), out, []byte("\n")} {
			if _, err := w.in.Write(part); err != nil {
				return // the worker is gone; its execution ends with it
			}
		}
		return
	} else if out == nil && pw.wasSent() {
		reply.Parts = true
	} else {
		reply.Result = out // compacted by encoding
	}
	_ = w.send(reply)
}

// partsCall is safeCall for a host that may answer in parts through pw.
func partsCall(host HostFunc, op *Operation, ctx context.Context, args json.RawMessage, pw *partsWriter) (json.RawMessage, error) {
	out, err := safeCall(host, op, ctx, args)
	if err == nil && out != nil && pw.wasSent() {
		return nil, &CallError{Name: "ToolError", Message: fmt.Sprintf("operation %s failed internally: %v", op.Name, errPartsAndWhole), Code: json.RawMessage(`"panic"`)}
	}
	return out, err
}

// died reports a worker that ended before answering.
func (w *worker) died(memory int64) *Result {
	select {
	case <-w.exited:
	case <-time.After(time.Second):
		w.kill()
	}
	if outOfMemory(w.stderr.String()) {
		return &Result{Error: memoryError(memory)}
	}
	msg := ErrWorkerDied.Error()
	if st := w.cmd.ProcessState; st != nil {
		msg += " (" + st.String() + ")"
	}
	if why := fatalLine(w.stderr.String()); why != "" {
		msg += ": " + why
	}
	return &Result{Error: &Error{Kind: KindRuntime, Message: msg}}
}

// fatalLine is the line of a dead worker's stderr that says why the Go
// runtime stopped it, or "".
func fatalLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "runtime:") || strings.HasPrefix(l, "panic:") {
			return strings.TrimSpace(l[:min(len(l), 200)])
		}
	}
	return ""
}

// outOfMemory says whether a dead worker's stderr tells of memory it could
// not have: the Go runtime's "fatal error: runtime: out of memory", a
// refused mmap ("cannot allocate memory"), a thread it could not start
// for want of memory under the data limit ("errno=12", cgo's
// "pthread_create failed"), or, in a race-enabled build,
// ThreadSanitizer's "failed to allocate ... (errno: 12)".
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "failed to allocate", "errno=12", "pthread_create failed"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and our reads,
// keeping the first 4 KiB and the last 64 KiB: a Go runtime's fatal error
// ("fatal error: runtime: out of memory") comes first, before a dump of
// every goroutine that can be longer than the tail.
type lockedBuffer struct {
	mu   sync.Mutex
	head []byte
	b    bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := min(len(p), 4<<10-len(l.head)); n > 0 && l.b.Len() == 0 {
		l.head = append(l.head, p[:n]...)
		if n == len(p) {
			return n, nil
		}
		l.b.Write(p[n:])
		return len(p), nil
	}
	if l.b.Len() > 64<<10 {
		l.b.Next(l.b.Len() - 32<<10)
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.head) + l.b.String()
}

// Busy is how many workers are running an execution.
func (p *Pool) Busy() int { return len(p.slots) }

// workerEnv keeps of env what a worker may see: the Go runtime's settings
// and the locale; for coverage and race runs, GOCOVERDIR.
func workerEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOGC", "GOMAXPROCS", "GODEBUG", "GOTRACEBACK", "GORACE", "GOCOVERDIR", "LANG", "LC_ALL", "TZ":
			out = append(out, kv)
		}
	}
	return out
}
