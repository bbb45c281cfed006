package runtime

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Runtime runs scripts against a fixed set of host operations. It is safe
// for concurrent use; every Execute gets a fresh JavaScript runtime, and only
// immutable things (the name tree, compiled programs) are shared.
type Runtime struct {
	opts Options
	root *node

	runaway atomic.Int64 // abandoned executions still running
	// inline runs scripts on the caller's goroutine: in a worker process,
	// whose parent stops the whole process at the deadline, Execute need
	// not be able to abandon a run that overstays.
	inline bool
	// spare is the next execution, its JavaScript runtime made and its
	// globals installed ahead (prepare): inline only, where one execution
	// runs at a time. Each is used once.
	spare *execution

	mu    sync.Mutex
	cache map[[32]byte]*list.Element
	lru   *list.List
}

type cacheEntry struct {
	key  [32]byte
	prog *program
}

// New returns a Runtime exposing ops. It fails on duplicate or conflicting
// operation names. A nil opts means all defaults.
func New(ops []Operation, opts *Options) (*Runtime, error) {
	root, err := buildTree(ops)
	if err != nil {
		return nil, err
	}
	return &Runtime{
		opts:  opts.withDefaults(),
		root:  root,
		cache: map[[32]byte]*list.Element{},
		lru:   list.New(),
	}, nil
}

// ExecOptions adjusts one execution. A nil *ExecOptions means defaults.
type ExecOptions struct {
	// Timeout for this execution. Zero means the Runtime's default; values
	// above the Runtime's MaxTimeout are capped to it.
	Timeout time.Duration
	// Host carries out this execution's operation calls: it is the only
	// way out of the sandbox. Nil means every call fails with a tool error.
	Host HostFunc
	// Console, when set, is called with each console line the result
	// keeps (within MaxConsoleBytes) as the script logs it, for progress
	// reports. It runs on the script's way and must return quickly.
	Console func(level, text string)

	// computing hears when the script computes and when it waits (a
	// worker's report to its pool); nil means nobody asks.
	computing *computeWatch
}

// Result is the outcome of an execution. Exactly one of Value (possibly
// nil: the script produced undefined) and Error is meaningful.
type Result struct {
	// Value is the script's result as JSON; nil when it returned undefined.
	// When the result exceeded MaxResultBytes, Value is a JSON string holding
	// a prefix of the result and a marker, and Truncated is true.
	Value     json.RawMessage `json:"value,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
	// ResultBytes is the size of the full JSON result.
	ResultBytes int `json:"resultBytes,omitempty"`
	// Console is the captured console output, bounded by MaxConsoleBytes.
	Console string `json:"console,omitempty"`
	// Error is set when the execution failed.
	Error *Error `json:"error,omitempty"`
	// Calls counts host operation calls made.
	Calls    int           `json:"calls"`
	Duration time.Duration `json:"duration"`
}

// Execute transpiles and runs code. It never panics and always returns
// within the execution's deadline (plus the time to unwind a host call that
// ignores its context is not waited for); in a worker process the bound
// is the parent's, which stops the process.
func (r *Runtime) Execute(ctx context.Context, code string, opts *ExecOptions) (res *Result) {
	start := time.Now()
	res = &Result{}
	defer func() {
		if p := recover(); p != nil {
			res.Error = &Error{Kind: KindRuntime, Message: fmt.Sprintf("internal error: %v", p)}
		}
		res.Duration = time.Since(start)
	}()
	if len(code) > r.opts.MaxCodeBytes {
		res.Error = &Error{Kind: KindLimit, Message: fmt.Sprintf("script is %d bytes; the limit is %d", len(code), r.opts.MaxCodeBytes),
			Hint: "send a shorter script: filter and shape data in code instead of embedding it"}
		return res
	}
	prog, perr := r.compile(code)
	if perr != nil {
		res.Error = perr
		return res
	}
	timeout := r.opts.Timeout
	var host HostFunc
	if opts != nil {
		if opts.Timeout > 0 {
			timeout = min(opts.Timeout, r.opts.MaxTimeout)
		}
		host = opts.Host
	}
	if host == nil {
		host = noHost
	}
	if n := r.runaway.Load(); n >= maxRunaway {
		res.Error = &Error{Kind: KindLimit, Message: fmt.Sprintf("%d earlier scripts are still stuck in uninterruptible work", n),
			Hint: "avoid catastrophic regular expressions and huge JSON.stringify calls; retry shortly"}
		return res
	}
	// Interrupt stops JavaScript, not goja's Go-side work (a catastrophic
	// regular expression, JSON.stringify of a huge value). The run goes on
	// its own goroutine so Execute returns by the deadline plus a grace
	// whatever the script does; a run that overstays is abandoned.
	var e *execution
	if r.inline { // one execution at a time: the spare is this one's
		e, r.spare = r.spare, nil
	}
	if e == nil {
		e = newExecution(r)
	}
	e.prog, e.timeout, e.host = prog, timeout, host
	if opts != nil {
		e.console.stream = opts.Console
		e.computing = opts.computing
	}
	out := &Result{}
	run := func() {
		defer func() {
			if p := recover(); p != nil {
				out.Value = nil
				out.Error = &Error{Kind: KindRuntime, Message: fmt.Sprintf("internal error: %v", p)}
			}
		}()
		e.run(ctx, out)
	}
	if r.inline {
		run()
		*res = *out // Duration: set on return
		return res
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run()
	}()
	deadline := time.NewTimer(time.Until(start.Add(timeout)) + runawayGrace)
	defer deadline.Stop()
	select {
	case <-done:
		out.Duration = res.Duration
		*res = *out
	case <-deadline.C:
		r.runaway.Add(1)
		go func() { <-done; r.runaway.Add(-1) }()
		res.Error = &Error{Kind: KindTimeout, Message: fmt.Sprintf("script exceeded its %s timeout inside uninterruptible work (a regular expression or a huge JSON conversion)", timeout),
			Hint: "simplify the regular expression or convert less data at once"}
	}
	return res
}

// runawayGrace is how long past its deadline an execution may take to
// unwind before Execute gives up on it; maxRunaway caps abandoned runs.
const (
	runawayGrace = time.Second
	maxRunaway   = 4
)

// compile returns the cached program for code, transpiling on a miss.
func (r *Runtime) compile(code string) (*program, *Error) {
	if r.opts.CacheEntries < 0 {
		return transpile(code)
	}
	key := sha256.Sum256([]byte(code))
	r.mu.Lock()
	if el, ok := r.cache[key]; ok {
		r.lru.MoveToFront(el)
		r.mu.Unlock()
		return el.Value.(*cacheEntry).prog, nil
	}
	r.mu.Unlock()
	prog, err := transpile(code)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cache[key]; !ok {
		r.cache[key] = r.lru.PushFront(&cacheEntry{key, prog})
		for r.lru.Len() > r.opts.CacheEntries {
			old := r.lru.Back()
			r.lru.Remove(old)
			delete(r.cache, old.Value.(*cacheEntry).key)
		}
	}
	return prog, nil
}
