package broker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/runtime"
)

// The type checker is resident: one tsgo language server (tsgo --lsp) per
// catalog version, with the catalog's declarations loaded once, and a few
// script slots. A check writes the script into a free slot and asks for
// that file's diagnostics: the server re-checks only what changed (the
// script), in milliseconds, where a fresh tsgo over the whole catalog took
// tens of them. The server is bounded like script workers: checks at once
// (the slots; others wait within their deadline), memory (it is killed
// above memoryLimit), time (a check past its deadline is refused and the
// server replaced). A server that dies is replaced at the next check.

//
// Scripts that compute with types (aliases, conditional and mapped types,
// interfaces, big scripts) are checked by a second server of their own,
// at a lower CPU priority (nice 10): hostile types, which take a check its
// whole time and memory, then never slow the checks of ordinary scripts,
// nor take them down with their server.

// Checker limits.
const (
	checkSlots       = 4
	checkMemoryLimit = 1 << 30 // bytes of resident memory
	checkTimeout     = 2 * time.Second
)

// lane is one of the checker's servers.
type lane int

const (
	laneOrdinary lane = iota // scripts that only use the catalog's types
	laneTypes                // scripts that compute with types of their own
	lanes
)

// typesRE finds type-level code that can make a check slow: declared
// types, conditional and inferred types, type operators, template
// literal types.
var typesRE = regexp.MustCompile(`\b(type|interface)\s+[A-Za-z_$]|\b(extends|infer|keyof|satisfies)\b|(:|\bas\b|<|\|)\s*` + "`[^`]*\\$\\{")

// laneOf says which server checks code: big scripts and those with
// type-level code are checked apart from the others.
func laneOf(code string) lane {
	if len(code) > 16<<10 || typesRE.MatchString(code) {
		return laneTypes
	}
	return laneOrdinary
}

// errCheckUnfinished is a check that could not finish (time or memory):
// the script is refused, never run unchecked.
var errCheckUnfinished = errors.New("the type check did not finish")

// checker type-checks scripts against the declarations of one catalog
// version at a time.
type checker struct {
	bin string

	mu  sync.Mutex
	srv [lanes]*lspServer // nil until the lane's first check, or after one died
}

// diagnostic is one tsgo diagnostic in the agent's own source.
type diagnostic struct {
	Line, Column int
	Code         int
	Message      string
}

func (d diagnostic) String() string {
	return fmt.Sprintf("user.ts:%d:%d: type error: %s (TS%d)", d.Line, d.Column, d.Message, d.Code)
}

// check returns the diagnostics of code against decls (the catalog of
// version). It fails with errCheckUnfinished when the check ran out of
// time (checkTimeout, or ctx's deadline if sooner) or memory, and with
// another error when tsgo could not run at all.
func (c *checker) check(ctx context.Context, version, decls, code string) ([]diagnostic, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	var diags []diagnostic
	ln := laneOf(code)
	for attempt := 0; ; attempt++ {
		srv, err := c.server(version, decls, ln)
		if err != nil {
			return nil, err
		}
		var failed bool
		diags, failed, err = srv.check(ctx, runtime.WrapPrefix+code+runtime.WrapSuffix+";\nexport {};\n")
		if failed {
			c.drop(srv) // a server that failed a check (its time, memory, life) is replaced
		}
		if err == nil {
			break
		}
		// The server ended under this check though its time is not up:
		// another script's types took it down. Check again on a new one.
		if attempt > 0 || ctx.Err() != nil || !errors.Is(err, errCheckUnfinished) {
			return nil, err
		}
	}
	for i := range diags {
		if diags[i].Line == 1 {
			diags[i].Column = max(diags[i].Column-len(runtime.WrapPrefix), 1)
		}
	}
	return diags, nil
}

// server returns the running server of version in lane ln, starting one
// (and stopping another version's) when there is none.
func (c *checker) server(version, decls string, ln lane) (*lspServer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if srv := c.srv[ln]; srv != nil && srv.version == version && !srv.dead() {
		return srv, nil
	}
	if c.srv[ln] != nil {
		c.srv[ln].stop()
		c.srv[ln] = nil
	}
	srv, err := startServer(c.bin, version, prelude+decls, ln)
	if err != nil {
		return nil, err
	}
	c.srv[ln] = srv
	return srv, nil
}

// drop stops srv, if it is still a current server.
func (c *checker) drop(srv *lspServer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	srv.stop()
	for i := range c.srv {
		if c.srv[i] == srv {
			c.srv[i] = nil
		}
	}
}

// close stops the servers and removes their files.
func (c *checker) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, srv := range c.srv {
		if srv != nil {
			srv.stop()
			c.srv[i] = nil
		}
	}
}

// lspServer is one tsgo language server and its files.
type lspServer struct {
	version string
	dir     string
	cmd     *exec.Cmd
	in      io.WriteCloser
	slots   chan int
	opened  [checkSlots]bool
	edits   [checkSlots]int // document versions

	writeMu sync.Mutex
	mu      sync.Mutex
	nextID  int
	pending map[int]chan lspReply
	done    chan struct{} // closed when the process ended
	why     atomic.Value  // string: why it ended, when killed
}

type lspReply struct {
	result json.RawMessage
	err    error
}

// tsconfig holds the compiler options scripts are checked with and names
// every file of the program: the declarations and the slots.
func tsconfig() string {
	files := []string{`"tools.d.ts"`}
	for i := range checkSlots {
		files = append(files, strconv.Quote(slotName(i)))
	}
	return `{"compilerOptions":{"noEmit":true,"target":"es2022","lib":["es2023"],"types":[],"skipLibCheck":true,"strict":false,"noImplicitAny":false},"files":[` + strings.Join(files, ",") + `]}`
}

func slotName(i int) string { return "user-" + strconv.Itoa(i) + ".ts" }

func startServer(bin, version, decls string, ln lane) (*lspServer, error) {
	dir, err := os.MkdirTemp("", "kubecode-typecheck-")
	if err != nil {
		return nil, err
	}
	files := map[string]string{"tools.d.ts": decls, "tsconfig.json": tsconfig()}
	for i := range checkSlots {
		files[slotName(i)] = "export {};\n"
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	cmd := exec.Command(bin, "--lsp", "--stdio")
	cmd.Dir = dir
	// Go's own soft limit first; the watchdog kills it above the hard one.
	cmd.Env = append(os.Environ(), fmt.Sprintf("GOMEMLIMIT=%dMiB", checkMemoryLimit*3/4>>20))

	in, err := cmd.StdinPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("type checker: %w", err)
	}
	if ln == laneTypes {
		// Full speed when the machine is idle, second to the ordinary
		// checks and scripts when it is not.
		lowerPriority(cmd.Process.Pid)
	}
	s := &lspServer{version: version, dir: dir, cmd: cmd, in: in, slots: make(chan int, checkSlots),
		pending: map[int]chan lspReply{}, done: make(chan struct{})}
	for i := range checkSlots {
		s.slots <- i
	}
	go s.read(bufio.NewReaderSize(out, 1<<20))
	go s.watch()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root := "file://" + dir
	// Errors only in its log, no diagnostics pushed (checks pull them), and
	// no auto-import index warmed after each change: a checker does not
	// complete code, and the warming costs more CPU than the check.
	if _, err := s.call(ctx, "initialize", map[string]any{"processId": os.Getpid(), "rootUri": root,
		"capabilities": map[string]any{"textDocument": map[string]any{"diagnostic": map[string]any{}}},
		"initializationOptions": map[string]any{"logVerbosity": 5, "disablePushDiagnostics": true,
			"userPreferences": map[string]any{"includeCompletionsForModuleExports": false, "includeCompletionsForImportStatements": false}}}); err != nil {
		s.stop()
		return nil, fmt.Errorf("type checker: initialize: %w", err)
	}
	if err := s.notify("initialized", map[string]any{}); err != nil {
		s.stop()
		return nil, err
	}
	// Load the program (the declarations) within the start's time, not
	// within a script's check: the first check is then as quick as any.
	if _, _, err := s.check(ctx, "export {};\n"); err != nil {
		s.stop()
		return nil, fmt.Errorf("type checker: loading the declarations: %w", err)
	}
	return s, nil
}

// check puts text in a free slot and returns the slot's diagnostics;
// failed says the server failed it (its time, memory or life ran out) and
// is to be replaced. Every error is errCheckUnfinished or ctx's.
func (s *lspServer) check(ctx context.Context, text string) (diags []diagnostic, failed bool, err error) {
	var slot int
	select {
	case slot = <-s.slots:
	case <-ctx.Done():
		return nil, false, s.unfinished(ctx, "all checkers stayed busy")
	case <-s.done:
		return nil, true, s.ended()
	}
	defer func() { s.slots <- slot }()
	uri := "file://" + filepath.Join(s.dir, slotName(slot))
	s.edits[slot]++
	if !s.opened[slot] {
		s.opened[slot] = true
		err = s.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "typescript", "version": s.edits[slot], "text": text}})
	} else {
		err = s.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": s.edits[slot]},
			"contentChanges": []any{map[string]any{"text": text}}})
	}
	if err != nil {
		return nil, true, fmt.Errorf("%w: %v", errCheckUnfinished, err)
	}
	res, err := s.call(ctx, "textDocument/diagnostic", map[string]any{"textDocument": map[string]any{"uri": uri}})
	if err != nil {
		return nil, true, err
	}
	var report struct {
		Items []struct {
			Range struct {
				Start struct{ Line, Character int }
			}
			Severity int
			Code     json.RawMessage
			Message  string
		}
	}
	if err := json.Unmarshal(res, &report); err != nil {
		return nil, true, fmt.Errorf("%w: its answer: %v", errCheckUnfinished, err)
	}
	for _, it := range report.Items {
		if it.Severity != 0 && it.Severity != 1 { // errors only
			continue
		}
		code, _ := strconv.Atoi(strings.Trim(string(it.Code), `"`))
		msg, _, _ := strings.Cut(it.Message, "\n")
		diags = append(diags, diagnostic{Line: it.Range.Start.Line + 1, Column: it.Range.Start.Character + 1, Code: code, Message: shortenTypes(msg)})
	}
	return diags, false, nil
}

// unfinished is the error of a check that ran out of time (or whose
// caller went away).
func (s *lspServer) unfinished(ctx context.Context, what string) error {
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%w in time: %s", errCheckUnfinished, what)
	}
	return fmt.Errorf("%w: %w", errCheckUnfinished, ctx.Err())
}

// ended is the error of a check whose server ended.
func (s *lspServer) ended() error {
	why, _ := s.why.Load().(string)
	if why == "" {
		why = "the checker ended"
	}
	return fmt.Errorf("%w: %s", errCheckUnfinished, why)
}

func (s *lspServer) dead() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// call sends a request and waits for its reply, ctx's end or the
// server's.
func (s *lspServer) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan lspReply, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	if err := s.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		_ = s.notify("$/cancelRequest", map[string]any{"id": id})
		return nil, s.unfinished(ctx, "the script's types took too long to check")
	case <-s.done:
		return nil, s.ended()
	}
}

func (s *lspServer) notify(method string, params any) error {
	return s.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (s *lspServer) write(msg map[string]any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		return fmt.Errorf("type checker: %w", err)
	}
	return nil
}

// read dispatches the server's messages until it ends: replies to their
// callers; requests of its own are answered with nothing.
func (s *lspServer) read(r *bufio.Reader) {
	defer close(s.done)
	for {
		n := -1
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSpace(line)
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				n, _ = strconv.Atoi(v)
			}
		}
		if n < 0 || n > 256<<20 {
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(buf, &m) != nil {
			continue
		}
		if m.Method != "" {
			if len(m.ID) > 0 {
				_ = s.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": nil})
			}
			continue
		}
		id, err := strconv.Atoi(string(m.ID))
		if err != nil {
			continue
		}
		s.mu.Lock()
		ch := s.pending[id]
		s.mu.Unlock()
		if ch == nil {
			continue
		}
		if m.Error != nil {
			ch <- lspReply{err: fmt.Errorf("type checker: %s", m.Error.Message)}
		} else {
			ch <- lspReply{result: m.Result}
		}
	}
}

// watch kills the server when its resident memory passes the limit.
func (s *lspServer) watch() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			if rss := residentBytes(s.cmd.Process.Pid); rss > checkMemoryLimit {
				s.why.Store(fmt.Sprintf("it used more than %d MiB of memory", checkMemoryLimit>>20))
				_ = s.cmd.Process.Kill()
			}
		}
	}
}

// residentBytes reads a process's resident memory (0 when unknown).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// stop ends the server and removes its files.
func (s *lspServer) stop() {
	_ = s.in.Close()
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	<-s.done
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}
