package runtime

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sjson "github.com/segmentio/encoding/json"
)

// Scripts can run in worker processes: the server re-executes its own
// binary with WorkerEnv set, and the child serves executions over its
// stdin and stdout until stdin closes. Parent and worker speak JSON-RPC
// 2.0, one message a line: the parent asks "runtime/execute"; while the
// script runs the worker asks the parent "tools/call" for every operation
// call (the parent's Host answers, and with it the bridge); the answer to
// "runtime/execute" is the Result. The worker holds no credentials: all it
// can reach is what its parent answers.

// WorkerEnv, set in a process's environment, makes it a script worker:
// its main calls ServeWorker (explicitly, in cmd/).
const WorkerEnv = "KUBECODE_WORKER"

// Methods of the worker protocol.
const (
	methodExecute  = "runtime/execute"
	methodToolCall = "tools/call"
	// methodConsole notifies the parent of a console line (params:
	// consoleParams), as the script logs it.
	methodConsole = "runtime/console"
	// methodReady is the worker's first message: it has started, is
	// contained, and takes executions. The pool hands out only workers
	// that said it.
	methodReady = "runtime/ready"
	// methodComputing notifies the parent that the execution (params:
	// computingParams) computes most of the time: half of a window of
	// executeParams.ComputingNs or more, and again while it goes on (see
	// computeWatch).
	methodComputing = "runtime/computing"
)

// workerProtocol is the version of the worker protocol, told in
// runtime/ready: a worker binary built from other sources than its server
// (kubecode-worker beside an upgraded kubecode) is refused at its start
// with a message saying so. Change it with any change to the messages.
const workerProtocol = 5

// readyParams are the params of runtime/ready.
type readyParams struct {
	Protocol int `json:"protocol"`
}

// computingParams are the params of runtime/computing.
type computingParams struct {
	Exec string `json:"exec"`
}

// consoleParams are the params of runtime/console.
type consoleParams struct {
	Exec  string `json:"exec"`
	Level string `json:"level"`
	Text  string `json:"text"`
}

// rpcMessage is a JSON-RPC 2.0 request or response.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
	// ResultBytes, in an answer to tools/call, says the result follows the
	// line as that many bytes of JSON and a line break: read into a buffer
	// of its size, with no copy and no line to grow (an answer can be a
	// 100 MB list).
	ResultBytes int `json:"resultBytes,omitempty"`
	// Part, in an answer to tools/call, says the ResultBytes that follow
	// are the items of one part of the answer (parts.go); Parts says the
	// answer is the array of every part's items, sent before.
	Part  bool `json:"part,omitempty"`
	Parts bool `json:"parts,omitempty"`
}

type rpcError struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *CallError `json:"data,omitempty"`
}

// executeParams are the params of runtime/execute.
type executeParams struct {
	Code      string `json:"code"`
	TimeoutNs int64  `json:"timeoutNs"`
	// Deadline is when the script must end, in Unix nanoseconds: parent
	// and worker share the machine's clock, so a message the worker reads
	// late (it was starved of CPU) does not move the deadline past the
	// parent's kill; the time spent waiting for a worker counts. Zero means
	// the whole timeout from when the worker reads it.
	Deadline int64 `json:"deadline,omitempty"`
	// CPULimitNs bounds the CPU time the execution may use; zero means
	// no bound but the deadline.
	CPULimitNs int64 `json:"cpuLimitNs,omitempty"`
	// ComputingNs asks for a runtime/computing note when the script
	// computes half of a window this long or more; zero means none.
	ComputingNs int64 `json:"computingNs,omitempty"`
	// OpsKey names the operations and options; Ops and Options come only
	// when the worker has not seen that key.
	OpsKey string `json:"opsKey"`
	// Console asks for each console line as a runtime/console
	// notification, as the script logs it.
	Console bool        `json:"console,omitempty"`
	Ops     []Operation `json:"ops,omitempty"`
	Options *Options    `json:"options,omitempty"`
}

// callParams are the params of tools/call.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// MarshalJSON and UnmarshalJSON let CallError travel as JSON-RPC error
// data.
func (e *CallError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name    string          `json:"name,omitempty"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code,omitempty"`
		Reason  string          `json:"reason,omitempty"`
	}{e.Name, e.Message, e.Code, e.Reason})
}

func (e *CallError) UnmarshalJSON(b []byte) error {
	var v struct {
		Name    string          `json:"name"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
		Reason  string          `json:"reason"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = CallError{Name: v.Name, Message: v.Message, Code: v.Code, Reason: v.Reason}
	return nil
}

// WorkerOptions configure ServeWorker. A nil *WorkerOptions means
// defaults.
type WorkerOptions struct {
	// MemoryLimit is the worker's memory limit in bytes: the Go runtime's
	// soft limit, and the process's data limit (RLIMIT_DATA) at twice
	// that. Zero means 256 MiB; negative means none.
	MemoryLimit int64
	// Uncontained skips the seccomp filter that denies the worker files,
	// sockets, new programs and other processes (see deniedSyscalls).
	// Zero means contained.
	Uncontained bool
}

// errContainUnsupported: the platform offers no seccomp.
var errContainUnsupported = errors.New("seccomp is not available here")

// ServeWorker serves executions read from in, writing to out, until in
// ends. It returns nil when in ends cleanly.
func ServeWorker(in io.Reader, out io.Writer, opts *WorkerOptions) error {
	limit := int64(256 << 20)
	if opts != nil && opts.MemoryLimit != 0 {
		limit = opts.MemoryLimit
	}
	if limit > 0 {
		// The Go runtime collects hard as the heap nears the limit; the
		// kernel refuses writable memory past twice the limit (RLIMIT_DATA:
		// the runtime's address-space reservations, over 1 GB, are not
		// counted), and the worker dies out of memory instead of growing.
		debug.SetMemoryLimit(limit)
		limitData(uint64(limit) * 2)
	}
	if opts == nil || !opts.Uncontained {
		if err := contain(); err != nil && !errors.Is(err, errContainUnsupported) {
			return fmt.Errorf("runtime worker: contain: %w", err)
		}
	}
	warmUp()
	w := &workerConn{out: out, waiting: map[string]chan rpcMessage{}}
	ready, _ := json.Marshal(readyParams{Protocol: workerProtocol})
	w.send(rpcMessage{JSONRPC: "2.0", Method: methodReady, Params: ready})
	s := &workerServer{conn: w, in: bufio.NewReaderSize(in, 64<<10), runtimes: map[string]*Runtime{}, done: make(chan error, 1), memoryLimit: max(limit, 0), reading: true}
	w.needAnswers = s.readAnswers
	go s.read()
	err := <-s.done
	s.jobMu.Lock() // the execution under way, if any, ends first
	defer s.jobMu.Unlock()
	return err
}

// warmUp runs a small script once, before the worker says it is ready:
// the first transpile and run of a process (esbuild's and goja's lazy
// set-up, the heap's first growth) cost milliseconds of CPU that would
// otherwise fall on the worker's first script, which on a loaded machine
// stretched a trivial script's answer to hundreds of milliseconds.
func warmUp() {
	r, err := New(nil, nil)
	if err != nil {
		return
	}
	_ = r.Execute(context.Background(), "const xs: number[] = [1, 2, 3]\nawait Promise.resolve()\nreturn JSON.stringify(xs.map(x => ({ x })))", nil)
}

// workerServer serves a worker's executions.
type workerServer struct {
	conn *workerConn
	in   *bufio.Reader
	done chan error // the input's end
	// reading says a goroutine reads the input (one at a time): a job
	// runs on the goroutine that read it, which reads on after it unless a
	// reader started meanwhile, for the answers to the job's calls.
	readMu   sync.Mutex
	reading  bool
	jobMu    sync.Mutex // one execution at a time: one goroutine per runtime
	runtimes map[string]*Runtime
	// memoryLimit stops a script whose heap grows past it (watchMemory);
	// zero means none.
	memoryLimit int64
	// answers are the execution's large answers, outside the heap.
	answers answers
}

// read reads every message: responses to the worker's calls, and jobs.
// A job runs on the goroutine that read it (the request wakes it, with no
// hand-over), which then reads on, unless the job's calls started another
// reader for their answers (readAnswers): a script that calls no
// operation costs no goroutine and no thread's wake-up.
func (s *workerServer) read() {
	for {
		m, err := s.message()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			s.done <- err
			return
		}
		if m.Method == "" {
			if !s.conn.deliver(m) {
				s.answers.release(m.Result) // nobody waits for it any more
			}
			continue
		}
		s.readMu.Lock()
		s.reading = false
		s.readMu.Unlock()
		s.serve(m)
		s.readMu.Lock()
		another := s.reading
		s.reading = true
		s.readMu.Unlock()
		if another {
			return // the reader the job's calls started reads on
		}
	}
}

// maxLine bounds a message line from the parent.
const maxLine = 256 << 20

// message reads the next message, and the result that follows it when it
// says one does (ResultBytes).
func (s *workerServer) message() (rpcMessage, error) {
	for {
		m, err := s.next()
		if err != nil || !m.Part {
			return m, err
		}
	}
}

// next reads the next message, or the next part of an answer.
func (s *workerServer) next() (rpcMessage, error) {
	var m rpcMessage
	line, err := s.line()
	if err != nil {
		return m, err
	}
	// segmentio's decoder: a line can be large, which encoding/json
	// validates three times slower.
	if err := sjson.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("runtime worker: bad message: %w", err)
	}
	if m.Method == "" && (m.Part || m.Parts || m.Error != nil) {
		return s.partOf(m)
	}
	if m.ResultBytes <= 0 {
		return m, nil
	}
	n := m.ResultBytes
	m.ResultBytes = 0
	if s.memoryLimit > 0 && mappedBytes.Load()+int64(n) > s.memoryLimit/2 {
		// Not read into memory: the script gets an error it can act on,
		// and the worker stays far from its limit.
		if _, err := io.CopyN(io.Discard, s.in, int64(n)+1); err != nil {
			return m, fmt.Errorf("runtime worker: reading a result: %w", err)
		}
		m.Result = nil
		m.Error = &rpcError{Code: -32000, Message: tooLarge(n, s.memoryLimit), Data: &CallError{Name: "LimitError", Message: tooLarge(n, s.memoryLimit), Code: json.RawMessage(`"TooLarge"`)}}
		return m, nil
	}
	buf := s.answers.alloc(n + 1)
	if _, err := io.ReadFull(s.in, buf); err != nil {
		return m, fmt.Errorf("runtime worker: reading a result: %w", err)
	}
	if buf[n] != '\n' {
		return m, fmt.Errorf("runtime worker: a result of %d bytes is not followed by a line break", n)
	}
	m.Result = buf[:n:n]
	return m, nil
}

// partOf handles a message of an answer in parts: a part is gathered, the
// end gives the answer, an error drops what was gathered.
func (s *workerServer) partOf(m rpcMessage) (rpcMessage, error) {
	id := string(m.ID)
	switch {
	case m.Part && !s.conn.waits(id):
		// Its call gave up (the execution ended): not kept.
		if _, err := io.CopyN(io.Discard, s.in, int64(m.ResultBytes)+1); err != nil {
			return m, fmt.Errorf("runtime worker: reading a part of a result: %w", err)
		}
	case m.Part:
		limit := int64(gatherMax)
		if s.memoryLimit > 0 {
			limit = s.memoryLimit / 2
		}
		if err := s.answers.gather(id, s.in, m.ResultBytes, limit); err != nil {
			return m, fmt.Errorf("runtime worker: reading a part of a result: %w", err)
		}
	case m.Parts:
		out, n, invalid := s.answers.finish(id)
		switch {
		case invalid:
			m.Error = &rpcError{Code: -32000, Message: errInvalidPart.Error(), Data: &CallError{Name: "ToolError", Message: errInvalidPart.Error()}}
		case out == nil:
			msg := tooLarge(n, s.memoryLimit)
			m.Error = &rpcError{Code: -32000, Message: msg, Data: &CallError{Name: "LimitError", Message: msg, Code: json.RawMessage(`"TooLarge"`)}}
		}
		m.Result, m.Parts = out, false
	default:
		s.answers.drop(id)
	}
	return m, nil
}

// tooLarge says an answer is too large for the worker.
func tooLarge(n int, limit int64) string {
	if limit <= 0 {
		return fmt.Sprintf("the answer is %d MB, more than a worker keeps of one answer: ask for less (a namespace, a label or field selector, limit with continue for pages)", n>>20)
	}
	return fmt.Sprintf("the answer is %d MB, more than half the script's memory limit (%d MB): ask for less (a namespace, a label or field selector, limit with continue for pages)", n>>20, limit>>20)
}

// line reads one line, without its line break.
func (s *workerServer) line() ([]byte, error) {
	line, err := s.in.ReadSlice('\n')
	if err == nil {
		return line[:len(line)-1], nil
	}
	if err != bufio.ErrBufferFull {
		if err == io.EOF && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	long := append([]byte(nil), line...)
	for {
		line, err = s.in.ReadSlice('\n')
		long = append(long, line...)
		if len(long) > maxLine {
			return nil, fmt.Errorf("runtime worker: a message longer than %d MB", maxLine>>20)
		}
		switch err {
		case nil:
			return long[:len(long)-1], nil
		case bufio.ErrBufferFull:
		default:
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// serve runs one job.
func (s *workerServer) serve(m rpcMessage) {
	s.jobMu.Lock()
	defer s.jobMu.Unlock()
	w := s.conn
	if m.Method != methodExecute {
		w.send(rpcMessage{JSONRPC: "2.0", ID: m.ID, Error: &rpcError{Code: -32601, Message: "method not found: " + m.Method}})
		return
	}
	var p executeParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		w.send(rpcMessage{JSONRPC: "2.0", ID: m.ID, Error: &rpcError{Code: -32602, Message: err.Error()}})
		return
	}
	r := s.runtimes[p.OpsKey]
	if r == nil {
		if p.Options == nil {
			w.send(rpcMessage{JSONRPC: "2.0", ID: m.ID, Error: &rpcError{Code: -32602, Message: "unknown operations " + p.OpsKey}})
			return
		}
		var err error
		if r, err = New(p.Ops, p.Options); err != nil {
			w.send(rpcMessage{JSONRPC: "2.0", ID: m.ID, Error: &rpcError{Code: -32602, Message: err.Error()}})
			return
		}
		r.inline = true   // the parent stops this process at the deadline
		clear(s.runtimes) // one catalog at a time
		s.runtimes[p.OpsKey] = r
	}
	// Calls carry the execution's id: one a late goroutine of an
	// earlier execution makes is refused by the parent.
	var exec string
	_ = json.Unmarshal(m.ID, &exec)
	host := func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		return w.call(ctx, exec, name, args)
	}
	var console func(level, text string)
	if p.Console {
		console = func(level, text string) {
			b, _ := json.Marshal(consoleParams{Exec: exec, Level: level, Text: text})
			w.send(rpcMessage{JSONRPC: "2.0", Method: methodConsole, Params: b})
		}
	}
	var computing *computeWatch
	if p.ComputingNs > 0 {
		computing = newComputeWatch(time.Duration(p.ComputingNs), func() {
			b, _ := json.Marshal(computingParams{Exec: exec})
			w.send(rpcMessage{JSONRPC: "2.0", Method: methodComputing, Params: b})
		})
	}
	res := executeLimited(r, p, host, console, computing, s.memoryLimit)
	s.answers.releaseAll() // no value of the execution outlives it
	computing.stop()
	b, err := json.Marshal(res)
	if err != nil {
		w.send(rpcMessage{JSONRPC: "2.0", ID: m.ID, Error: &rpcError{Code: -32603, Message: "encode result: " + err.Error()}})
		return
	}
	w.send(rpcMessage{JSONRPC: "2.0", ID: m.ID, Result: b})
	r.prepare() // the next script's runtime, while the parent reads this answer
}

// executeLimited runs one execution of the worker under its CPU-time limit
// and its memory limit (zero: none): past either, the script is
// interrupted (at its current line) with a limit error, and the worker
// lives on. The wall deadline is the runtime's own, and the parent's kill.
func executeLimited(r *Runtime, p executeParams, host HostFunc, console func(level, text string), computing *computeWatch, memoryLimit int64) *Result {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var left time.Duration
	if p.Deadline > 0 {
		// Never past the parent's deadline, never longer than the timeout
		// (a clock that jumped), and at least a moment: a script read
		// after its deadline answers a timeout at once.
		left = min(max(time.Until(time.Unix(0, p.Deadline)), time.Microsecond), time.Duration(p.TimeoutNs))
	}
	if left > 0 && left < time.Duration(p.TimeoutNs) {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, left)
		defer stop()
	}
	if p.CPULimitNs > 0 {
		limit := time.Duration(p.CPULimitNs)
		defer limitCPU(limit, func() {
			cancel(&Error{Kind: KindLimit, Message: fmt.Sprintf("CPU time limit exceeded (%s)", limit),
				Hint: "the script computed too long: filter server-side with selectors, avoid nested loops over large lists and catastrophic regular expressions"})
		})()
	}
	var overMemory atomic.Bool
	if memoryLimit > 0 {
		stop := make(chan struct{})
		defer close(stop)
		watchMemory(memoryLimit, stop, func() { overMemory.Store(true); cancel(memoryError(memoryLimit)) })
	}
	res := r.Execute(ctx, p.Code, &ExecOptions{Timeout: time.Duration(p.TimeoutNs), Host: host, Console: console, computing: computing})
	if overMemory.Load() {
		// What the stopped script held is garbage now: collect it and give
		// the memory back, so the next script starts far from the data
		// limit that would kill the worker.
		debug.FreeOSMemory()
	}
	return res
}

// memoryError is the answer to a script past its memory limit, whether its
// worker stopped it (watchMemory) or died of it.
func memoryError(limit int64) *Error {
	return &Error{Kind: KindLimit, Message: fmt.Sprintf("memory limit exceeded (%d MB)", limit>>20),
		Hint: "hold less data at once: keep only the fields you need of each object (a large answer is read where the script reads it, but copies of whole objects, JSON.stringify of a whole list or spreading every object are held in full), or ask for a namespace or a selector"}
}

// watchMemory calls exceeded, once, when the worker's heap is past limit
// while a script runs: the heap still live after a collection is over the
// limit, or the heap's objects, collected or not, are half as much again
// (a script that allocates faster than the collector frees). It looks
// after each garbage collection, so a script that allocates nothing costs
// nothing (a worker waiting on a host call stays idle, as the pool's
// demotion expects), and one that allocates is looked at often: the
// worker's soft limit makes the collector run ever more often below the
// limit. Its data limit (twice the limit) kills the worker only when a
// single allocation jumps there.
//
// What an earlier script left is not this one's: a heap over the limit at
// the start is collected first, and only collections that end after the
// start count.
func watchMemory(limit int64, stop <-chan struct{}, exceeded func()) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(samples)
	if samples[1].Value.Uint64() > uint64(limit) {
		goruntime.GC()
		metrics.Read(samples)
	}
	start := samples[2].Value.Uint64()
	AfterEachGC(func() bool { // one check at a time: each arms the next
		select {
		case <-stop:
			return false
		default:
		}
		metrics.Read(samples)
		live, objects, cycles := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
		// Answers held outside the heap count as live.
		mapped := uint64(max(mappedBytes.Load(), 0))
		live, objects = live+mapped, objects+mapped
		if cycles > start && live > uint64(limit) || objects > uint64(limit)*3/2 {
			exceeded()
			return false
		}
		return true
	})
}

// opsKey names a set of operations and options.
func opsKey(ops []Operation, o Options) string {
	b, _ := json.Marshal(struct {
		Ops []Operation
		O   Options
	}{ops, o})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// readAnswers makes sure a goroutine reads the input while a job waits
// for answers to its calls.
func (s *workerServer) readAnswers() {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if !s.reading {
		s.reading = true
		go s.read()
	}
}

// workerConn is the worker's side of the pipe.
type workerConn struct {
	out io.Writer
	// needAnswers is called before a call is sent: someone must read its
	// answer.
	needAnswers func()
	writeMu     sync.Mutex
	mu          sync.Mutex
	next        int
	waiting     map[string]chan rpcMessage
}

func (w *workerConn) send(m rpcMessage) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	_, _ = w.out.Write(append(b, '\n'))
}

// waits says a call waits for the answer of id.
func (w *workerConn) waits(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting[id] != nil
}

// deliver hands an answer to the call waiting for it; false means none
// waits.
func (w *workerConn) deliver(m rpcMessage) bool {
	w.mu.Lock()
	ch := w.waiting[string(m.ID)]
	delete(w.waiting, string(m.ID))
	w.mu.Unlock()
	if ch != nil {
		ch <- m
	}
	return ch != nil
}

// call is the host of execution exec in the worker: it asks the parent.
func (w *workerConn) call(ctx context.Context, exec, name string, args json.RawMessage) (json.RawMessage, error) {
	params, err := json.Marshal(callParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.next++
	id := json.RawMessage(strconv.Quote(exec + "/" + strconv.Itoa(w.next)))
	ch := make(chan rpcMessage, 1)
	w.waiting[string(id)] = ch
	w.mu.Unlock()
	if w.needAnswers != nil {
		w.needAnswers()
	}
	w.send(rpcMessage{JSONRPC: "2.0", ID: id, Method: methodToolCall, Params: params})
	select {
	case m := <-ch:
		if m.Error != nil {
			if m.Error.Data != nil {
				return nil, m.Error.Data
			}
			return nil, &CallError{Message: m.Error.Message}
		}
		return m.Result, nil
	case <-ctx.Done():
		w.mu.Lock()
		delete(w.waiting, string(id))
		w.mu.Unlock()
		return nil, ctx.Err()
	}
}

// ErrWorkerDied marks an execution whose worker process ended before
// answering (out of memory, killed).
var ErrWorkerDied = errors.New("the script's worker process died")
