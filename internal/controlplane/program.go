package controlplane

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// A simulated container runs its program in simulated time, at once: the
// result is the whole life of the process — what it printed and when,
// whether and when it exits, the ports it listens on and the files it
// writes (for exec probes). Shell scripts are interpreted by mvdan.cc/sh
// with every command, file and directory simulated: nothing touches the
// host. A script that keeps running past horizon (or runs more than
// maxCalls commands) runs until stopped.
const (
	horizon  = 24 * time.Hour
	maxCalls = 10_000
	maxLines = 1_000
	// scriptTimeout bounds the interpretation of one script in real time
	// (longer under the race detector, which slows the interpreter
	// several times over).
	scriptTimeout = 200 * time.Millisecond * raceSlowdown
	// maxScript and maxVars bound a script and its variables' bytes.
	maxScript = 64 << 10
	maxVars   = 1 << 20
	maxLine   = 64 << 10
	// tick is run before every statement of a script (guard).
	tick = "__kubecode_tick"
	// background prefixes a simple command the script ran with & (guard).
	background = "__kubecode_background"
)

// errForever stops the interpreter when the program serves until stopped.
var errForever = errors.New("runs until stopped")

// run is the simulated life of one container process.
type run struct {
	// startError is set when the process cannot start (exit code 128).
	startError string
	forever    bool
	exit       int
	after      time.Duration // when it exits (or, forever, when it settles)
	listens    []int32
	serves     map[int32]Program // the program listening on each port
	busy       bool              // it loops without sleeping: a core's worth of CPU
	memory     int64             // bytes it wrote into memory (dd), beside its image's need
	lines      []outLine
	// unknown says why some output is not simulated ("" if all of it is).
	unknown string
	fs      *simFS
	// network says whether the process reached the cluster (a Service, a
	// pod, DNS): its life depends on the cluster when it started.
	network bool
	// retry says the simulation ran out of time while the cluster
	// answered its network calls: it is not kept, and is made again.
	retry bool
}

type outLine struct {
	at   time.Duration
	text string
}

// process is what one container runs: its image, argv (after the
// kubelet's $(VAR) expansion), environment and the files its volumes
// mount.
type containerProc struct {
	image    *Image
	argv     []string
	env      map[string]string
	files    map[string]string
	hostname string
	started  time.Time
	// net is the cluster as the process reaches it when it starts (nil:
	// its network commands are not simulated, as when kubecode only asks
	// what a server listens on); netKey names that start (namespace, pod,
	// start time) for the cache of runs that reach it.
	net    network
	netKey string
}

// argvOf resolves a container's command and args against its image as the
// container runtime does, then expands $(VAR) references as the kubelet
// does.
func argvOf(img *Image, command, args []string, env map[string]string) []string {
	var argv []string
	switch {
	case len(command) > 0:
		argv = slices.Concat(command, args)
	case len(args) > 0:
		argv = slices.Concat(img.Entrypoint, args)
		// An entrypoint script that execs its arguments hands flags to the
		// main program (redis-server --port 6380).
		if len(img.Entrypoint) == 0 && strings.HasPrefix(args[0], "-") && len(img.Cmd) > 0 {
			argv = slices.Concat(img.Cmd[:1], args)
		}
	default:
		argv = slices.Concat(img.Entrypoint, img.Cmd)
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = expandVars(a, env)
	}
	return out
}

// expandVars expands $(NAME) from env; $$ is a literal $, and an unknown
// name stays as written (the kubelet's rules).
func expandVars(s string, env map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// simulate runs p in simulated time.
func simulate(p containerProc) run {
	s := &sim{p: p, fs: newSimFS(p.files)}
	var reached *startNet
	if p.net != nil {
		reached = &startNet{net: p.net}
		s.net = reached
	}
	r := run{fs: s.fs}
	if len(p.argv) == 0 {
		r.startError = "no command specified"
		return r
	}
	if !p.image.has(p.argv[0]) {
		r.startError = fmt.Sprintf(`exec: %q: executable file not found in $PATH`, p.argv[0])
		return r
	}
	out := &lineWriter{s: s}
	err := s.exec(context.Background(), p.argv, out, out)
	out.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	r.lines, r.listens, r.serves, r.unknown, r.after, r.busy, r.memory = s.lines, s.listens, s.serves, s.unknown, s.clock, s.busy, s.memory
	r.network = reached.used()
	if r.forever && r.busy && reached.slow() {
		// Out of time while the API server answered, not busy.
		r.busy, r.retry = false, true
		if r.unknown == "" {
			r.unknown = "its network calls took too long to simulate"
		}
	}
	switch {
	case errors.Is(err, errForever):
		r.forever = true
	case err == nil:
	default:
		var es interp.ExitStatus
		if errors.As(err, &es) {
			r.exit = int(es)
		} else {
			r.exit = 1
		}
	}
	return r
}

// probeExec runs an exec probe's command at offset at of the container's
// life: it sees the files the container wrote by then.
func probeExec(p containerProc, files *simFS, at time.Duration, argv []string) (int, string) {
	if len(argv) == 0 || !p.image.has(argv[0]) {
		return 126, fmt.Sprintf("exec: %q: executable file not found in $PATH", strings.Join(argv, " "))
	}
	s := &sim{p: p, fs: files.at(at)}
	var out bytes.Buffer
	err := s.exec(context.Background(), argv, &out, &out)
	var es interp.ExitStatus
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &es):
		return int(es), out.String()
	default: // runs until stopped: the probe times out
		return -1, "command timed out"
	}
}

// sim is the state of one simulated process; the interpreter may run
// background jobs on other goroutines, hence mu.
type sim struct {
	p containerProc

	// stdin is what cat without files reads (kubectl exec -i); net
	// reaches Services and pods: the cluster now for an exec, as it was
	// when the program started for a container's own program (nil:
	// network commands are not simulated).
	stdin io.Reader
	net   network
	// budget bounds a shell script in real time (zero: scriptTimeout).
	budget time.Duration

	mu      sync.Mutex
	clock   time.Duration
	calls   int
	lines   []outLine
	listens []int32
	serves  map[int32]Program
	busy    bool
	memory  int64
	unknown string
	fs      *simFS
}

func (s *sim) now() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock
}

func (s *sim) advance(d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock += d
	if s.clock > horizon {
		return errForever
	}
	return nil
}

func (s *sim) notSimulated(why string) {
	s.mu.Lock()
	if s.unknown == "" {
		s.unknown = why
	}
	s.mu.Unlock()
}

var shells = []string{"sh", "bash", "ash", "dash"}

// exec runs one command line of the process: the container's argv, or a
// command of its shell scripts.
func (s *sim) exec(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	name := baseName(argv[0])
	img := s.p.image
	if slices.Contains(shells, name) {
		return s.shell(ctx, argv, stdout, stderr)
	}
	if s.net != nil && (name == "curl" || name == "wget" || name == "nslookup") {
		// In an exec, a network client reaches the cluster, whatever the
		// image's index says its program does when it runs alone.
		return s.fetch(ctx, argv, stdout, stderr)
	}
	if isPython(name) {
		if ok, err := s.python(ctx, argv, stdout, stderr); ok {
			return err
		}
	}
	if prog, ok := img.program(name); ok {
		if prog.Exit == nil && img.RequireEnv != nil && !slices.ContainsFunc(img.RequireEnv.AnyOf, func(k string) bool { return s.p.env[k] != "" }) {
			fmt.Fprintln(stderr, img.RequireEnv.Message)
			return interp.ExitStatus(1)
		}
		for _, l := range prog.Logs {
			fmt.Fprintln(stdout, l)
		}
		if prog.Exit != nil {
			if err := s.advance(prog.After.Duration); err != nil {
				return err
			}
			if *prog.Exit != 0 {
				return interp.ExitStatus(*prog.Exit)
			}
			return nil
		}
		ports := prog.Listens
		if name == "nginx" {
			prog.accessLog = true
			if listens, locs, ok := s.nginxConfig(s.now()); ok {
				prog.locations = locs
				if len(listens) > 0 {
					ports = listens
				}
			}
		}
		if prog.PortFlag != "" {
			if p, ok := flagValue(argv[1:], prog.PortFlag); ok {
				p = p[strings.LastIndexByte(p, ':')+1:]
				if n, err := strconv.ParseInt(p, 10, 32); err == nil {
					ports = []int32{int32(n)}
				}
			}
		}
		s.mu.Lock()
		s.listens = append(s.listens, ports...)
		if s.serves == nil {
			s.serves = map[int32]Program{}
		}
		for _, port := range ports {
			s.serves[port] = prog
		}
		s.mu.Unlock()
		return errForever
	}
	switch name {
	case "sleep":
		var total time.Duration
		for _, a := range argv[1:] {
			if a == "infinity" || a == "inf" {
				return errForever
			}
			d, err := parseSleep(a)
			if err != nil {
				fmt.Fprintf(stderr, "sleep: invalid time interval '%s'\n", a)
				return interp.ExitStatus(1)
			}
			total += d
		}
		return s.advance(total)
	case "tail":
		if slices.ContainsFunc(argv[1:], func(a string) bool { return a == "-f" || a == "-F" || a == "--follow" }) {
			return errForever
		}
		return s.headTail(ctx, argv, stdout, stderr)
	case "top", "ping", "yes", "vi", "less", "more":
		return errForever
	case "nc":
		if slices.Contains(argv[1:], "-l") || slices.Contains(argv[1:], "-lk") {
			return errForever
		}
		if s.net != nil {
			return s.nc(ctx, argv, stdout, stderr)
		}
		s.notSimulated("network commands are not simulated")
		return nil
	case "wget", "curl", "nslookup":
		if s.net != nil {
			return s.fetch(ctx, argv, stdout, stderr)
		}
	case "ls":
		return s.ls(argv, stdout, stderr)
	case "dd":
		return s.dd(argv, stderr)
	case "env", "printenv":
		return s.printenv(argv, stdout)
	case "echo":
		args, nl := argv[1:], "\n"
		if len(args) > 0 && args[0] == "-n" {
			args, nl = args[1:], ""
		}
		fmt.Fprint(stdout, strings.Join(args, " ")+nl)
		return nil
	case "cat":
		return s.cat(ctx, argv, stdout, stderr)
	case "head":
		return s.headTail(ctx, argv, stdout, stderr)
	case "grep", "egrep", "fgrep":
		return s.grep(ctx, argv, stdout, stderr)
	case "wc":
		return s.wc(ctx, argv, stdout, stderr)
	case "touch":
		for _, f := range operands(argv) {
			s.fs.write(s.now(), f, s.fs.read(s.now(), f), true)
		}
		return nil
	case "rm":
		for _, f := range operands(argv) {
			if _, ok := s.fs.lookup(s.now(), f); !ok && !slices.ContainsFunc(argv[1:], func(a string) bool { return strings.HasPrefix(a, "-") && strings.Contains(a, "f") }) {
				fmt.Fprintf(stderr, "rm: can't remove '%s': No such file or directory\n", f)
				return interp.ExitStatus(1)
			}
			s.fs.remove(s.now(), f)
		}
		return nil
	case "hostname":
		fmt.Fprintln(stdout, s.p.hostname)
		return nil
	case "date":
		fmt.Fprintln(stdout, s.p.started.Add(s.now()).UTC().Format("Mon Jan _2 15:04:05 UTC 2006"))
		return nil
	case "timeout":
		if len(argv) > 2 {
			return s.exec(ctx, argv[2:], stdout, stderr)
		}
		return nil
	case "exec":
		if len(argv) > 1 {
			return s.exec(ctx, argv[1:], stdout, stderr)
		}
		return nil
	}
	s.notSimulated(fmt.Sprintf("the output of %s is not simulated", name))
	return nil
}

// shell interprets sh -c SCRIPT (or a script file from a volume); a shell
// with no script ends at once, as it does without a terminal.
func (s *sim) shell(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	args := argv[1:]
	var opts []string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-c" && !strings.Contains(args[0], "c") {
		opts = append(opts, args[0])
		args = args[1:]
	}
	var script, name string
	switch {
	case len(args) == 0:
		return nil
	case strings.HasPrefix(args[0], "-") && strings.Contains(args[0], "c"):
		if len(args) < 2 {
			fmt.Fprintf(stderr, "%s: -c requires an argument\n", baseName(argv[0]))
			return interp.ExitStatus(2)
		}
		if strings.Contains(args[0], "e") {
			opts = append(opts, "-e")
		}
		script, name, args = args[1], argv[0], args[2:]
	default:
		f, ok := s.fs.lookup(s.now(), args[0])
		if !ok {
			fmt.Fprintf(stderr, "%s: can't open '%s': No such file or directory\n", baseName(argv[0]), args[0])
			return interp.ExitStatus(127)
		}
		script, name, args = f, args[0], args[1:]
	}
	if len(script) > maxScript {
		s.notSimulated("the script is too long to simulate")
		return errForever
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(script), name)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", baseName(argv[0]), err)
		return interp.ExitStatus(2)
	}
	guard(file)
	var env []string
	for k, v := range s.p.env {
		env = append(env, k+"="+v)
	}
	env = append(env, "HOSTNAME="+s.p.hostname, "HOME=/root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	slices.Sort(env)
	r, err := interp.New(
		interp.Env(expand.ListEnviron(env...)),
		interp.Params(slices.Concat(opts, []string{"--"}, args)...),
		interp.StdIO(s.stdin, stdout, stderr),
		interp.CallHandler(func(ctx context.Context, args []string) ([]string, error) {
			s.mu.Lock()
			s.calls++
			n := s.calls
			s.mu.Unlock()
			if n > maxCalls {
				return nil, errForever
			}
			return args, nil
		}),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(ctx context.Context, args []string) error {
				hc := interp.HandlerCtx(ctx)
				if args[0] == tick {
					// Between two statements: the variables must not grow
					// past what a simulation holds ($? is kept).
					size := 0
					for _, v := range hc.Env.Each {
						size += len(v.Str) + len(v.List)*16
						for _, e := range v.List {
							size += len(e)
						}
					}
					if size > maxVars {
						s.notSimulated("the script's variables grow past what is simulated")
						return errForever
					}
					return exitCode(hc.LastExitStatus)
				}
				bg := args[0] == background
				if bg {
					args = args[1:]
				}
				if !s.p.image.has(args[0]) {
					fmt.Fprintf(hc.Stderr, "%s: %s: not found\n", baseName(argv[0]), args[0])
					if bg {
						return nil
					}
					return interp.ExitStatus(127)
				}
				if bg {
					err := s.exec(context.WithValue(ctx, stdinKey{}, hc.Stdin), args, hc.Stdout, hc.Stderr)
					if errors.Is(err, errForever) {
						return nil // it keeps running beside the script
					}
					var es interp.ExitStatus
					if err != nil && !errors.As(err, &es) {
						return err
					}
					return nil // a background job's status is not the script's
				}
				return s.exec(context.WithValue(ctx, stdinKey{}, hc.Stdin), args, hc.Stdout, hc.Stderr)
			}
		}),
		interp.OpenHandler(s.open),
		interp.StatHandler(s.stat),
		interp.ReadDirHandler2(func(context.Context, string) ([]fs.DirEntry, error) { return nil, nil }),
	)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	r.Dir = "/"
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.budget, scriptTimeout))
	defer cancel()
	err = r.Run(ctx, file)
	if ctx.Err() != nil {
		s.mu.Lock()
		s.busy = true
		s.mu.Unlock()
		return errForever // a busy loop without sleep: it keeps running
	}
	return err
}

// guard puts a tick before every statement of the script, so that its
// variables are measured however it loops or grows them without running a
// command.
func guard(f *syntax.File) {
	tickStmt := func() *syntax.Stmt {
		return &syntax.Stmt{Cmd: &syntax.CallExpr{Args: []*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{Value: tick}}}}}}
	}
	ticked := func(stmts []*syntax.Stmt) []*syntax.Stmt {
		out := make([]*syntax.Stmt, 0, 2*len(stmts))
		for _, st := range stmts {
			out = append(out, tickStmt(), st)
		}
		return out
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok && st.Background {
			// A simple command in the background runs at once, in
			// simulated time, and one that runs until stopped does so
			// without stopping the script: its ports, memory and files
			// count as they would.
			if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 && !interp.IsBuiltin(call.Args[0].Lit()) {
				st.Background = false
				call.Args = append([]*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{Value: background}}}}, call.Args...)
			}
		}
		switch n := n.(type) {
		case *syntax.File:
			n.Stmts = ticked(n.Stmts)
		case *syntax.Block:
			n.Stmts = ticked(n.Stmts)
		case *syntax.Subshell:
			n.Stmts = ticked(n.Stmts)
		case *syntax.WhileClause:
			n.Do = ticked(n.Do)
		case *syntax.ForClause:
			n.Do = ticked(n.Do)
		case *syntax.IfClause:
			n.Then = ticked(n.Then)
		case *syntax.CaseItem:
			n.Stmts = ticked(n.Stmts)
		}
		return true
	})
}

func (s *sim) cat(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	code := 0
	files := operands(argv)
	if len(files) == 0 {
		if in := s.input(ctx); in != nil {
			_, err := io.Copy(stdout, io.LimitReader(in, maxStdin))
			return err
		}
	}
	for _, f := range files {
		content, ok := s.fs.lookup(s.now(), f)
		if !ok {
			fmt.Fprintf(stderr, "%s: can't open '%s': No such file or directory\n", baseName(argv[0]), f)
			code = 1
			continue
		}
		io.WriteString(stdout, content)
	}
	return exitCode(code)
}

func (s *sim) open(ctx context.Context, name string, flag int, _ os.FileMode) (io.ReadWriteCloser, error) {
	switch name {
	case "/dev/null":
		return nopFile{Reader: strings.NewReader("")}, nil
	case "/dev/stdout", "/dev/stderr":
		hc := interp.HandlerCtx(ctx)
		return nopFile{Reader: strings.NewReader(""), w: hc.Stdout}, nil
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		prev := ""
		if flag&os.O_APPEND != 0 {
			prev = s.fs.read(s.now(), name)
		}
		return &fileWriter{s: s, name: name, buf: *bytes.NewBufferString(prev)}, nil
	}
	content, ok := s.fs.lookup(s.now(), name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return nopFile{Reader: strings.NewReader(content)}, nil
}

func (s *sim) stat(_ context.Context, name string, _ bool) (fs.FileInfo, error) {
	if _, ok := s.fs.lookup(s.now(), name); ok {
		return fileInfo{name: path.Base(name)}, nil
	}
	if s.fs.isDir(s.now(), name) {
		return fileInfo{name: path.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func exitCode(code int) error {
	if code == 0 {
		return nil
	}
	return interp.ExitStatus(code)
}

// operands are the arguments that are not flags.
func operands(argv []string) []string {
	var out []string
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// flagValue finds --flag=value or --flag value.
func flagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// parseSleep reads sleep's operands: 5, 0.5, 10s, 2m, 1h, 1d.
func parseSleep(a string) (time.Duration, error) {
	unit := time.Second
	switch {
	case strings.HasSuffix(a, "s"):
		a = a[:len(a)-1]
	case strings.HasSuffix(a, "m"):
		a, unit = a[:len(a)-1], time.Minute
	case strings.HasSuffix(a, "h"):
		a, unit = a[:len(a)-1], time.Hour
	case strings.HasSuffix(a, "d"):
		a, unit = a[:len(a)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(a, 64)
	if err != nil || f < 0 || f > 1e9 {
		return 0, fmt.Errorf("invalid interval %q", a)
	}
	return time.Duration(f * float64(unit)), nil
}

// lineWriter records what the process prints, line by line, at the
// simulated time of the write.
type lineWriter struct {
	s    *sim
	mu   sync.Mutex
	part []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.part)+len(p) > maxLine {
		p = p[:max(0, maxLine-len(w.part))]
	}
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.part[:i]))
		w.part = w.part[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.part) > 0 {
		w.emit(string(w.part))
		w.part = nil
	}
}

func (w *lineWriter) emit(text string) {
	at := w.s.now()
	w.s.mu.Lock()
	if len(w.s.lines) < maxLines {
		w.s.lines = append(w.s.lines, outLine{at: at, text: text})
	}
	w.s.mu.Unlock()
}

type nopFile struct {
	io.Reader
	w io.Writer
}

func (f nopFile) Write(p []byte) (int, error) {
	if f.w == nil {
		return len(p), nil
	}
	return f.w.Write(p)
}
func (nopFile) Close() error { return nil }

// fileWriter writes a simulated file when the shell closes it.
type fileWriter struct {
	s    *sim
	name string
	buf  bytes.Buffer
}

func (f *fileWriter) Read([]byte) (int, error) { return 0, io.EOF }
func (f *fileWriter) Write(p []byte) (int, error) {
	if f.buf.Len()+len(p) > 1<<20 {
		return 0, errors.New("file too large for the simulation")
	}
	return f.buf.Write(p)
}
func (f *fileWriter) Close() error {
	f.s.fs.write(f.s.now(), f.name, f.buf.String(), true)
	return nil
}

type fileInfo struct {
	name string
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return 0 }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }

// simFS is the files of a simulated container over its life: each path's
// history of writes and removals in simulated time.
type simFS struct {
	mu    sync.Mutex
	files map[string][]fsEvent
}

type fsEvent struct {
	at      time.Duration
	exists  bool
	content string
}

func newSimFS(files map[string]string) *simFS {
	f := &simFS{files: map[string][]fsEvent{}}
	for p, c := range files {
		f.files[path.Clean(p)] = []fsEvent{{exists: true, content: c}}
	}
	return f
}

// at is a copy of the files as they are at offset t; what a probe writes
// stays in the copy.
func (f *simFS) at(t time.Duration) *simFS {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &simFS{files: map[string][]fsEvent{}}
	for p, evs := range f.files {
		var last *fsEvent
		for i := range evs {
			if evs[i].at <= t {
				last = &evs[i]
			}
		}
		if last != nil && last.exists {
			c.files[p] = []fsEvent{{exists: true, content: last.content}}
		}
	}
	return c
}

func (f *simFS) lookup(t time.Duration, p string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs := f.files[path.Clean("/"+p)]
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].at <= t {
			return evs[i].content, evs[i].exists
		}
	}
	return "", false
}

func (f *simFS) read(t time.Duration, p string) string {
	c, _ := f.lookup(t, p)
	return c
}

func (f *simFS) write(t time.Duration, p, content string, exists bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p = path.Clean("/" + p)
	if len(f.files[p]) < maxCalls {
		f.files[p] = append(f.files[p], fsEvent{at: t, exists: exists, content: content})
	}
}

func (f *simFS) remove(t time.Duration, p string) { f.write(t, p, "", false) }

// isDir: the usual directories, and those holding a file.
func (f *simFS) isDir(t time.Duration, p string) bool {
	p = path.Clean("/" + p)
	switch p {
	case "/", "/tmp", "/etc", "/var", "/usr", "/bin", "/home", "/root", "/data", "/var/log", "/var/run", "/run", "/opt", "/srv", "/app":
		return true
	}
	f.mu.Lock()
	names := make([]string, 0, len(f.files))
	for n := range f.files {
		names = append(names, n)
	}
	f.mu.Unlock()
	for _, n := range names {
		if strings.HasPrefix(n, p+"/") {
			if _, ok := f.lookup(t, n); ok {
				return true
			}
		}
	}
	return false
}

// dirEntry is one name of a directory listing.
type dirEntry struct {
	name    string
	dir     bool
	content string
}

// list is the directory p at t: its files and the directories under it
// that hold files, sorted by name.
func (f *simFS) list(t time.Duration, p string) []dirEntry {
	p = path.Clean("/" + p)
	prefix := strings.TrimSuffix(p, "/") + "/"
	f.mu.Lock()
	names := make([]string, 0, len(f.files))
	for n := range f.files {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	f.mu.Unlock()
	seen := map[string]bool{}
	var out []dirEntry
	for _, n := range names {
		content, ok := f.lookup(t, n)
		if !ok {
			continue
		}
		rest := n[len(prefix):]
		name, deeper, _ := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, dirEntry{name: name, dir: deeper != "", content: content})
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	return out
}

// final is every file that exists at the end of f's history, with its
// content.
func (f *simFS) final() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for p, evs := range f.files {
		if len(evs) == 0 {
			continue
		}
		last := evs[0]
		for _, e := range evs[1:] {
			if e.at >= last.at {
				last = e
			}
		}
		if last.exists {
			out[p] = last.content
		}
	}
	return out
}
