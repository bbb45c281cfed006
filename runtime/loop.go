package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Sentinel values passed to goja's Interrupt.
var (
	errDeadline = errors.New("deadline")
	errLimit    = errors.New("limit")
)

// execution is one run of one script. Exactly one goroutine, the one in
// run, touches vm; host calls and timers finish elsewhere and re-enter
// through enqueue.
type execution struct {
	r       *Runtime
	prog    *program
	host    HostFunc // the way out of the sandbox
	timeout time.Duration
	vm      *goja.Runtime
	ctx     context.Context

	mu    sync.Mutex
	queue []func()
	wake  chan struct{}

	// Owned by the loop goroutine.
	pending   int // host calls and timers whose completion is still to run
	calls     int
	fatal     *Error
	nodes     map[*node]goja.Value
	failures  map[*goja.Object]*hostFailure
	timers    map[int64]*time.Timer
	nextTimer int64
	rejected  map[*goja.Promise]goja.Value
	console   consoleBuffer
	sem       chan struct{}
	computing *computeWatch // nil: nobody asks

	stringify goja.Callable
	errorCtor *goja.Object
}

func newExecution(r *Runtime) *execution {
	return &execution{
		r:        r,
		wake:     make(chan struct{}, 1),
		nodes:    map[*node]goja.Value{},
		failures: map[*goja.Object]*hostFailure{},
		timers:   map[int64]*time.Timer{},
		rejected: map[*goja.Promise]goja.Value{},
		console:  consoleBuffer{limit: r.opts.MaxConsoleBytes},
		sem:      make(chan struct{}, r.opts.Concurrency),
	}
}

// makeVM makes the execution's JavaScript runtime and installs its
// globals, unless prepare did.
func (e *execution) makeVM() error {
	if e.vm != nil {
		return nil
	}
	e.vm = goja.New()
	e.vm.SetMaxCallStackSize(e.r.opts.MaxCallStackSize)
	return e.installGlobals()
}

// asyncProgram is an async function expression: evaluating it (without a
// call) makes goja build what every script's async wrapper needs.
var asyncProgram = goja.MustCompile("prepare.js", "(async () => {})", false)

// prepare makes the next execution of an inline runtime ahead, in the
// worker's idle time after it answered: its JavaScript runtime, globals,
// and what goja builds lazily on a script's first steps (the promise and
// async function machinery), about half of a trivial script's CPU. Each
// execution still gets a runtime of its own, used once.
func (r *Runtime) prepare() {
	if !r.inline || r.spare != nil {
		return
	}
	e := newExecution(r)
	if e.makeVM() != nil {
		return
	}
	_ = e.vm.Get("Promise")
	if _, err := e.vm.RunProgram(asyncProgram); err != nil {
		return
	}
	r.spare = e
}

// enqueue schedules f on the loop goroutine. It never blocks, so it is safe
// after the execution has ended (the work is then dropped).
func (e *execution) enqueue(f func()) {
	e.mu.Lock()
	e.queue = append(e.queue, f)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *execution) take() []func() {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.queue
	e.queue = nil
	return q
}

// setFatal ends the run with err at the next JavaScript instruction; the
// script cannot catch it.
func (e *execution) setFatal(err *Error, why error) {
	if e.fatal == nil {
		e.fatal = err
	}
	e.vm.Interrupt(why)
}

func (e *execution) run(parent context.Context, res *Result) {
	ctx, cancel := context.WithTimeout(parent, e.timeout)
	defer cancel()
	e.ctx = ctx
	defer e.stopTimers()
	e.computing.begin()
	defer e.computing.wait()

	if err := e.makeVM(); err != nil {
		res.Error = &Error{Kind: KindRuntime, Message: "internal: " + err.Error()}
		return
	}
	stop := context.AfterFunc(ctx, func() { e.vm.Interrupt(errDeadline) })
	defer stop()

	v, err := e.vm.RunProgram(e.prog.prg)
	if err != nil {
		res.Error = e.failure(err)
		res.Calls = e.calls
		res.Console = e.console.String()
		return
	}
	main, _ := v.Export().(*goja.Promise)
	if main == nil {
		res.Error = &Error{Kind: KindRuntime, Message: "internal: wrapper did not return a promise"}
		return
	}
	delete(e.rejected, main)
	res.Error = e.loop(main)
	if res.Error == nil {
		// Converting the outcome can run user code (getters, toJSON,
		// toString): guard it like any job.
		if err := e.runJob(func() {
			switch main.State() {
			case goja.PromiseStateFulfilled:
				e.result(main.Result(), res)
			case goja.PromiseStateRejected:
				res.Error = e.rejection(main.Result())
			}
			if res.Error == nil {
				e.warnLeftovers()
			}
		}); err != nil {
			res.Value, res.Error = nil, err
		}
	}
	res.Calls = e.calls
	res.Console = e.console.String()
}

// loop runs queued work until main settles, the run fails, or its deadline
// passes.
func (e *execution) loop(main *goja.Promise) *Error {
	for {
		for main.State() == goja.PromiseStatePending {
			jobs := e.take()
			if len(jobs) == 0 {
				break
			}
			for _, job := range jobs {
				if err := e.runJob(job); err != nil {
					return err
				}
			}
		}
		if e.fatal != nil {
			return e.fatal
		}
		if main.State() != goja.PromiseStatePending {
			delete(e.rejected, main)
			return nil
		}
		if e.pending == 0 {
			return &Error{Kind: KindRuntime, Message: "the script is awaiting a promise that can never settle: no tool call or timer is pending",
				Hint: "make sure every Promise you create calls resolve or reject"}
		}
		e.computing.wait()
		select {
		case <-e.wake:
		case <-e.ctx.Done():
			return e.deadlineError(nil)
		}
		e.computing.begin()
	}
}

// runJob runs one piece of re-entering work, turning uncatchable JavaScript
// errors into a failed run.
func (e *execution) runJob(job func()) (out *Error) {
	defer func() {
		if p := recover(); p != nil {
			if err, ok := p.(error); ok {
				out = e.failure(err)
				return
			}
			out = &Error{Kind: KindRuntime, Message: fmt.Sprint(p)}
		}
	}()
	job()
	return e.fatal
}

// call invokes a JavaScript function from a job; an uncatchable error
// (interrupt, stack overflow) unwinds the job through runJob.
func (e *execution) call(f func(any) error, v goja.Value) {
	if err := f(v); err != nil {
		panic(err)
	}
}

// failure converts an error out of goja into an execution error.
func (e *execution) failure(err error) *Error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if e.fatal != nil {
			return e.fatal
		}
		if ie.Value() == errDeadline {
			return e.deadlineError(ie.Stack())
		}
		return &Error{Kind: KindRuntime, Message: fmt.Sprintf("interrupted: %v", ie.Value())}
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		out := &Error{Kind: KindLimit, Name: "RangeError", Message: fmt.Sprintf("maximum call stack size (%d) exceeded", e.r.opts.MaxCallStackSize),
			Hint: "look for unbounded recursion"}
		e.positionFrames(out, so.Stack())
		return out
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		out := e.rejection(ex.Value())
		if out.Line == 0 {
			e.positionFrames(out, ex.Stack())
		}
		return out
	}
	return &Error{Kind: KindRuntime, Message: err.Error()}
}

func (e *execution) deadlineError(stack []goja.StackFrame) *Error {
	if e.ctx.Err() != nil && !errors.Is(e.ctx.Err(), context.DeadlineExceeded) {
		var limit *Error // a limit enforced from outside, e.g. CPU time
		if errors.As(context.Cause(e.ctx), &limit) {
			out := *limit
			if stack != nil {
				e.positionFrames(&out, stack)
			}
			return &out
		}
		return &Error{Kind: KindRuntime, Message: "execution canceled: " + context.Cause(e.ctx).Error()}
	}
	out := &Error{Kind: KindTimeout, Message: fmt.Sprintf("script exceeded its %s timeout", e.timeout),
		Hint: fmt.Sprintf("narrow what the script fetches (selectors, limits, fewer calls), or pass a larger timeout (at most %s)", e.r.opts.MaxTimeout)}
	if stack != nil {
		e.positionFrames(out, stack)
	}
	return out
}

func (e *execution) stopTimers() {
	for id, t := range e.timers {
		if t != nil {
			t.Stop()
		}
		delete(e.timers, id)
	}
}

// warnLeftovers tells the agent about work its script started but did not
// wait for.
func (e *execution) warnLeftovers() {
	if n := len(e.rejected); n > 0 {
		for _, v := range e.rejected {
			e.console.add("warn", "unhandled promise rejection: "+e.describe(v))
		}
	}
	if n := e.pending - len(e.timers); n > 0 {
		e.console.add("warn", fmt.Sprintf("%d tool call(s) were still running when the script returned; did you forget await?", n))
	}
}
