package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
	"mvdan.cc/sh/v3/interp"
)

// A container's Python program (python -c CODE, or a script from a
// volume) is interpreted as far as such programs go in a cluster — print,
// time.sleep, sys.exit, raise, os.environ, loops, functions, f-strings —
// by Starlark (go.starlark.net), Python's configuration dialect, after
// rewriting what Starlark lacks (import, raise, f-strings). A program
// beyond that (try, classes, with, a module it imports for what it does)
// is not simulated, and its log says so, as before.

// Bounds of one Python program, beside the shell's: Starlark steps, and
// what its variables hold (measured every pythonCheckEvery steps).
const (
	pythonSteps      = 5_000_000
	pythonBusySteps  = 100_000 // steps without a sleep that make a loop busy
	pythonHeld       = 64 << 20
	pythonCheckEvery = 20_000
)

// pythonArgs finds what python runs: the code of -c, or a script's path.
// ok is false for an interactive interpreter or a module (-m), which are
// simulated as the image's program.
func pythonArgs(argv []string) (code, script string, args []string, ok bool) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-c" && i+1 < len(argv):
			return argv[i+1], "", argv[i+2:], true
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			return a[2:], "", argv[i+1:], true
		case a == "-m", a == "-":
			return "", "", nil, false
		case a == "-W" || a == "-X":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return "", a, argv[i+1:], true
		}
	}
	return "", "", nil, false
}

// isPython says whether name is a Python interpreter's: python, python3,
// python3.12.
func isPython(name string) bool {
	return name == "python" || name == "python3" || strings.HasPrefix(name, "python3.") || name == "python2"
}

// python runs a Python program in simulated time; handled is false when
// it is not one this simulation reads (the image's program runs instead).
func (s *sim) python(ctx context.Context, argv []string, stdout, stderr io.Writer) (handled bool, err error) {
	code, script, _, ok := pythonArgs(argv)
	if !ok {
		return false, nil
	}
	defer func() {
		// The interpreter runs in the node's process: whatever a program
		// makes it do, the node goes on.
		if r := recover(); r != nil {
			s.notSimulated(fmt.Sprintf("the Python program is not simulated: the interpreter failed (%v)", r))
			handled, err = true, errForever
		}
	}()
	name := "<string>"
	if script != "" {
		f, found := s.fs.lookup(s.now(), script)
		if !found {
			fmt.Fprintf(stderr, "%s: can't open file '%s': [Errno 2] No such file or directory\n", baseName(argv[0]), script)
			return true, interp.ExitStatus(2)
		}
		code, name = f, script
	}
	if len(code) > maxScript {
		s.notSimulated("the Python program is too long to simulate")
		return true, errForever
	}
	src, err := starlarkSource(code)
	if err != nil {
		s.notSimulated("the Python program uses what is not simulated: " + err.Error())
		return true, errForever
	}
	p := &pyRun{s: s, stdout: stdout, stderr: stderr}
	thread := &starlark.Thread{Name: "main", Print: func(_ *starlark.Thread, msg string) { fmt.Fprintln(stdout, msg) }}
	thread.SetMaxExecutionSteps(pythonCheckEvery)
	thread.OnMaxSteps = p.check
	thread.SetLocal(runKey, p)
	ctx, cancel := context.WithTimeout(ctx, scriptTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { thread.Cancel("timeout") })
	defer stop()
	// Recursion stays refused: Starlark's calls nest on the Go stack.
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}
	predeclared := p.predeclared()
	err = runStarlark(opts, thread, name, src, predeclared)
	switch {
	case err == nil:
		return true, nil
	case p.exit == errExitZero:
		return true, nil
	case p.exit != nil:
		return true, p.exit
	case p.grew, errors.Is(err, errPythonGrows):
		s.notSimulated("the Python program grows past what is simulated")
		return true, errForever
	case ctx.Err() != nil, strings.Contains(err.Error(), "too many steps"):
		// Stopped while it runs: it keeps running, busy if it has not
		// slept for a while (a loop without sleep).
		if thread.ExecutionSteps()-p.sleptAt.Load() > pythonBusySteps {
			s.mu.Lock()
			s.busy = true // a loop that does not sleep: it keeps running
			s.mu.Unlock()
		}
		return true, errForever
	}
	var se syntax.Error
	var re resolve.ErrorList
	switch {
	case errors.As(err, &se):
		s.notSimulated("the Python program uses what is not simulated: " + se.Msg)
		return true, errForever
	case errors.As(err, &re) && len(re) > 0:
		s.notSimulated("the Python program uses what is not simulated: " + re[0].Msg)
		return true, errForever
	}
	if errors.Is(err, errNotSimulated) {
		msg := err.Error()
		if i := strings.Index(msg, errNotSimulated.Error()+": "); i >= 0 {
			msg = msg[i+len(errNotSimulated.Error())+2:]
		}
		s.notSimulated("the Python program uses what is not simulated: " + msg)
		return true, errForever
	}
	var ee *starlark.EvalError
	if !errors.As(err, &ee) {
		s.notSimulated("the Python program is not simulated: " + err.Error())
		return true, errForever
	}
	if p.raised == "" && (strings.Contains(ee.Msg, "undefined") || strings.Contains(ee.Msg, "has no ") || strings.Contains(ee.Msg, "called recursively") || strings.Contains(ee.Msg, "is not simulated")) {
		// A name or attribute this simulation does not know: what the
		// program does with a module is not known.
		s.notSimulated("the Python program uses what is not simulated: " + ee.Msg)
		return true, errForever
	}
	// An exception nothing catches: Python's traceback on stderr, exit 1.
	fmt.Fprintln(stderr, "Traceback (most recent call last):")
	for _, fr := range ee.CallStack {
		if fr.Pos.Filename() != name {
			continue
		}
		fn := fr.Name
		if fn == "<toplevel>" {
			fn = "<module>"
		}
		fmt.Fprintf(stderr, "  File \"%s\", line %d, in %s\n", name, fr.Pos.Line, fn)
	}
	if p.raised != "" {
		fmt.Fprintln(stderr, p.raised)
	} else {
		fmt.Fprintln(stderr, pythonError(ee.Msg))
	}
	return true, interp.ExitStatus(1)
}

// pythonError names a Starlark run-time error as Python would.
func pythonError(msg string) string {
	switch {
	case strings.HasPrefix(msg, "key ") && strings.Contains(msg, " not in dict"):
		k := strings.TrimSuffix(strings.TrimPrefix(msg, "key "), " not in dict")
		if u, err := strconv.Unquote(k); err == nil {
			k = "'" + u + "'"
		}
		return "KeyError: " + k
	case strings.Contains(msg, "division by zero"):
		return "ZeroDivisionError: division by zero"
	case strings.Contains(msg, "index out of range"):
		return "IndexError: list index out of range"
	case strings.HasPrefix(msg, "int: invalid literal"), strings.Contains(msg, "invalid literal"):
		return "ValueError: " + msg
	}
	return "RuntimeError: " + msg
}

// pyRun is one Python program's run.
type pyRun struct {
	s              *sim
	stdout, stderr io.Writer
	exit           error         // sys.exit, or a sleep past the horizon (errForever)
	raised         string        // "ValueError: msg" of the raise that ended it
	grew           bool          // its variables came to hold more than pythonHeld
	made           int           // bytes its checked steps made since the last look
	sleptAt        atomic.Uint64 // the step it last slept at
}

// check runs every pythonCheckEvery steps: it stops the program at
// pythonSteps, or when what its variables hold (every frame's locals and
// the module's globals, a value counted as often as it is referred to)
// comes past pythonHeld.
func (p *pyRun) check(thread *starlark.Thread) {
	if thread.Steps >= pythonSteps {
		thread.Cancel("too many steps")
		return
	}
	if p.holdsTooMuch(thread) {
		p.grew = true
		thread.Cancel("held")
		return
	}
	thread.SetMaxExecutionSteps(thread.Steps + pythonCheckEvery)
}

// runKey is the thread-local of the pyRun a thread runs.
const runKey = "kubecode.run"

// charge counts n bytes a step made; past a quarter of pythonHeld since
// the last look, it looks at what the variables hold now.
func charge(thread *starlark.Thread, n int) error {
	p, _ := thread.Local(runKey).(*pyRun)
	if p == nil {
		return nil
	}
	p.made += n
	if p.made < pythonHeld/4 {
		return nil
	}
	p.made = 0
	if p.holdsTooMuch(thread) {
		p.grew = true
		return errPythonGrows
	}
	return nil
}

// holdsTooMuch says whether what the program's variables hold comes past
// pythonHeld.
func (p *pyRun) holdsTooMuch(thread *starlark.Thread) bool {
	z := newSizer(pythonHeld)
	held := 0
	add := func(v starlark.Value) bool {
		if v != nil {
			held += z.size(v, 0)
		}
		return held > pythonHeld
	}
	depth := thread.CallStackDepth()
	for d := range depth {
		fr := thread.DebugFrame(d)
		for i := range fr.NumLocals() {
			if _, v := fr.Local(i); add(v) {
				return true
			}
		}
		if fn, ok := fr.Callable().(*starlark.Function); ok && d == depth-1 {
			for _, v := range fn.Globals() {
				if add(v) {
					return true
				}
			}
		}
	}
	return false
}

// predeclared are the names a Python program finds: the modules it
// imports (time, sys, os, random) and the built-ins Starlark lacks.
func (p *pyRun) predeclared() starlark.StringDict {
	environ := starlark.NewDict(len(p.s.p.env) + 2)
	for k, v := range p.s.p.env {
		environ.SetKey(starlark.String(k), starlark.String(v))
	}
	environ.SetKey(starlark.String("HOSTNAME"), starlark.String(p.s.p.hostname))
	environ.SetKey(starlark.String("HOME"), starlark.String("/root"))
	getenv := starlark.NewBuiltin("getenv", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var key string
		var def starlark.Value = starlark.None
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &key, &def); err != nil {
			return nil, err
		}
		if v, found, _ := environ.Get(starlark.String(key)); found {
			return v, nil
		}
		return def, nil
	})
	sleep := starlark.NewBuiltin("sleep", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		p.sleptAt.Store(thread.ExecutionSteps())
		var secs starlark.Value
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &secs); err != nil {
			return nil, err
		}
		f, ok := starlark.AsFloat(secs)
		if !ok || f < 0 || math.IsNaN(f) {
			return nil, fmt.Errorf("sleep length must be non-negative")
		}
		if err := p.s.advance(time.Duration(min(f, horizon.Seconds()+1) * float64(time.Second))); err != nil {
			p.exit = err
			return nil, err
		}
		return starlark.None, nil
	})
	exit := starlark.NewBuiltin("exit", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var code starlark.Value = starlark.None
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0, &code); err != nil {
			return nil, err
		}
		p.exit = errExitZero
		switch c := code.(type) {
		case starlark.NoneType:
		case starlark.Int:
			if n, _ := c.Int64(); n&0xff != 0 {
				p.exit = interp.ExitStatus(uint8(n))
			}
		default:
			if err := fits(code); err != nil {
				return nil, err
			}
			fmt.Fprintln(p.stderr, pyStr(code))
			p.exit = interp.ExitStatus(1)
		}
		return nil, p.exit
	})
	print := starlark.NewBuiltin("print", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		sep, end := " ", "\n"
		w := p.stdout
		for _, kv := range kwargs {
			k, _ := starlark.AsString(kv[0])
			switch k {
			case "sep":
				if s, ok := starlark.AsString(kv[1]); ok {
					sep = s
				}
			case "end":
				if s, ok := starlark.AsString(kv[1]); ok {
					end = s
				}
			case "file":
				if kv[1] == stderrValue {
					w = p.stderr
				}
			}
		}
		if err := fits(args...); err != nil {
			return nil, err
		}
		parts := make([]string, len(args))
		for i, a := range args {
			parts[i] = pyStr(a)
		}
		fmt.Fprint(w, strings.Join(parts, sep)+end)
		return starlark.None, nil
	})
	raise := starlark.NewBuiltin("__raise__", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		typ := "Exception"
		if len(args) == 0 {
			args = starlark.Tuple{starlark.String(typ)}
		}
		typ, _ = starlark.AsString(args[0])
		if err := fits(args[1:]...); err != nil {
			return nil, err
		}
		var msgs []string
		for _, a := range args[1:] {
			msgs = append(msgs, pyStr(a))
		}
		p.raised = typ
		if len(msgs) > 0 {
			p.raised += ": " + strings.Join(msgs, ", ")
		}
		return nil, errors.New(p.raised)
	})
	format := starlark.NewBuiltin("__format__", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var v starlark.Value
		var spec string
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &v, &spec); err != nil {
			return nil, err
		}
		if err := fits(v); err != nil {
			return nil, err
		}
		return starlark.String(pyFormat(v, spec)), nil
	})
	counter := 0
	randint := starlark.NewBuiltin("randint", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var lo, hi int
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &lo, &hi); err != nil {
			return nil, err
		}
		counter++
		if hi < lo {
			return nil, fmt.Errorf("empty range for randrange")
		}
		span := uint64(hi) - uint64(lo) // no overflow in unsigned arithmetic
		if span == math.MaxUint64 {
			return starlark.MakeInt(lo), nil
		}
		return starlark.MakeInt(int(uint64(lo) + uint64(counter)%(span+1))), nil // the same every run
	})
	random := starlark.NewBuiltin("random", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
		counter++
		return starlark.Float(float64(counter%10) / 10), nil
	})
	now := starlark.NewBuiltin("time", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
		return starlark.Float(float64(p.s.p.started.Add(p.s.now()).UnixNano()) / 1e9), nil
	})
	module := func(name string, members starlark.StringDict) *starlarkstruct.Module {
		return &starlarkstruct.Module{Name: name, Members: members}
	}
	names := starlark.StringDict{
		"time":       module("time", starlark.StringDict{"sleep": sleep, "time": now}),
		"sys":        module("sys", starlark.StringDict{"exit": exit, "stderr": stderrValue, "stdout": stdoutValue, "argv": starlark.NewList(nil)}),
		"os":         module("os", starlark.StringDict{"environ": environ, "getenv": getenv}),
		"random":     module("random", starlark.StringDict{"randint": randint, "random": random}),
		"sleep":      sleep,
		"exit":       exit,
		"quit":       exit,
		"getenv":     getenv,
		"environ":    environ,
		"randint":    randint,
		"print":      print,
		"__raise__":  raise,
		"__format__": format,
		"__name__":   starlark.String("__main__"),
		"__binop__":  starlark.NewBuiltin("__binop__", pyBinop),
		"__last__":   starlark.NewBuiltin("__last__", pyLast),
		"__method__": starlark.NewBuiltin("__method__", pyMethod),
		"__iadd__":   starlark.NewBuiltin("__iadd__", pyIadd),
		"str":        starlark.NewBuiltin("str", pyStrBuiltin),
		"repr":       starlark.NewBuiltin("repr", pyReprBuiltin),
	}
	for _, name := range copying {
		names[name] = counted(name)
	}
	names["getattr"] = starlark.NewBuiltin("getattr", pyGetattr)
	names["fail"] = starlark.NewBuiltin("fail", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		if err := fits(args...); err != nil {
			return nil, err
		}
		parts := make([]string, len(args))
		for i, a := range args {
			parts[i] = pyStr(a)
		}
		return nil, errors.New(strings.Join(parts, " "))
	})
	return names
}

// errExitZero ends a program that called sys.exit(0) or sys.exit().
var errExitZero = errors.New("exit 0")

// The streams sys names (print's file=).
var (
	stderrValue = starlark.String("<stderr>")
	stdoutValue = starlark.String("<stdout>")
)

// pyStr is str(v) as Python writes it: True, None, 1.5.
func pyStr(v starlark.Value) string {
	if s, ok := starlark.AsString(v); ok {
		return s
	}
	return v.String()
}

// pyFormat formats v by a format spec as far as programs use them: .2f,
// d, >5, 05d.
func pyFormat(v starlark.Value, spec string) string {
	if f, ok := starlark.AsFloat(v); ok && strings.HasSuffix(spec, "f") {
		prec := 6
		if i := strings.IndexByte(spec, '.'); i >= 0 {
			prec, _ = strconv.Atoi(spec[i+1 : len(spec)-1])
		}
		return strconv.FormatFloat(f, 'f', min(prec, 20), 64)
	}
	return pyStr(v)
}

var (
	importRE = regexp.MustCompile(`^(\s*)(?:import\s+[\w., ]+?|from\s+[\w.]+\s+import\s+[\w., ()*]+?)\s*(?:;\s*(.*)|#.*)?$`)
	raiseRE  = regexp.MustCompile(`^(\s*)raise(\s+([A-Za-z_][\w.]*)\s*(\((.*)\))?)?\s*(#.*)?$`)
	fstrRE   = regexp.MustCompile(`(?i)\b(?:f|rf|fr)("([^"\\]|\\.)*"|'([^'\\]|\\.)*')`)
	mainRE   = regexp.MustCompile(`^\s*if\s+__name__\s*==\s*["']__main__["']\s*:`)
)

// starlarkSource rewrites a Python program into Starlark: imports go (the
// modules are predeclared), raise becomes a call, f-strings become
// format calls. What Starlark cannot read stays, and fails to parse.
func starlarkSource(code string) (string, error) {
	lines := strings.Split(strings.ReplaceAll(code, "\r\n", "\n"), "\n")
	for i, l := range lines {
		for {
			// import os; import sys; print(...): the statements after.
			m := importRE.FindStringSubmatch(l)
			if m == nil {
				break
			}
			l = m[1] + cmp.Or(m[2], "pass")
		}
		if mainRE.MatchString(l) {
			lines[i] = l
			continue
		}
		l = fstrRE.ReplaceAllStringFunc(l, fstring)
		lines[i] = l
		if m := raiseRE.FindStringSubmatch(l); m != nil {
			typ := m[3]
			if typ == "" {
				typ = "RuntimeError"
			}
			typ = typ[strings.LastIndexByte(typ, '.')+1:]
			args := strconv.Quote(typ)
			if strings.TrimSpace(m[5]) != "" {
				args += ", " + m[5]
			}
			lines[i] = m[1] + "__raise__(" + args + ")"
		}
	}
	return strings.Join(lines, "\n"), nil
}

// fstring turns f"a {x} b {y:.2f}" into "a {} b {}".format(x, __format__(y, ".2f")).
func fstring(lit string) string {
	i := strings.IndexAny(lit, `"'`)
	quote, body := lit[i], lit[i+1:len(lit)-1]
	var out strings.Builder
	var args []string
	for j := 0; j < len(body); j++ {
		c := body[j]
		switch {
		case c == '{' && j+1 < len(body) && body[j+1] == '{':
			out.WriteString("{{")
			j++
		case c == '}' && j+1 < len(body) && body[j+1] == '}':
			out.WriteString("}}")
			j++
		case c == '{':
			end := strings.IndexByte(body[j:], '}')
			if end < 0 {
				return lit
			}
			expr := body[j+1 : j+end]
			if e, ok := strings.CutSuffix(expr, "!r"); ok {
				expr = "repr(" + e + ")"
			}
			expr = strings.TrimSuffix(expr, "!s")
			if k := strings.LastIndexByte(expr, ':'); k >= 0 && !strings.ContainsAny(expr[k:], `"'[]()`) {
				expr = "__format__(" + expr[:k] + ", " + strconv.Quote(expr[k+1:]) + ")"
			}
			args = append(args, expr)
			out.WriteString("{}")
			j += end
		default:
			out.WriteByte(c)
		}
	}
	s := string(quote) + out.String() + string(quote)
	if len(args) == 0 {
		return s
	}
	return s + ".format(" + strings.Join(args, ", ") + ")"
}
