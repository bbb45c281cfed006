package runtime

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// installGlobals sets up the sandbox: tools, console, sleep and timers on
// top of the ECMAScript builtins. Nothing else of the host is reachable.
func (e *execution) installGlobals() error {
	vm := e.vm
	jsonObj := vm.Get("JSON").ToObject(vm)
	var ok bool
	if e.stringify, ok = goja.AssertFunction(jsonObj.Get("stringify")); !ok {
		return errors.New("JSON.stringify missing")
	}
	e.errorCtor = vm.Get("Error").ToObject(vm)

	vm.SetPromiseRejectionTracker(func(p *goja.Promise, op goja.PromiseRejectionOperation) {
		if op == goja.PromiseRejectionReject {
			e.rejected[p] = p.Result()
		} else {
			delete(e.rejected, p)
		}
	})

	if err := vm.Set("console", vm.NewDynamicObject(&consoleObject{e: e, fns: map[string]goja.Value{}})); err != nil {
		return err
	}
	for name, f := range map[string]func(goja.FunctionCall) goja.Value{
		"sleep": e.sleep, "setTimeout": e.setTimeout, "clearTimeout": e.clearTimeout,
	} {
		if err := vm.Set(name, e.native(name, f)); err != nil {
			return err
		}
	}
	return vm.Set("tools", e.nodeValue(e.r.root))
}

// native returns f as a JavaScript function called name, which prints as
// "function name() { [native code] }" and tells nothing of the host.
func (e *execution) native(name string, f func(goja.FunctionCall) goja.Value) goja.Value {
	fn := e.vm.ToValue(f).(*goja.Object)
	_ = fn.DefineDataProperty("name", e.vm.ToValue(name), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	return fn
}

func (e *execution) delay(v goja.Value) time.Duration {
	ms := v.ToFloat()
	if ms != ms || ms < 0 { // NaN or negative
		ms = 0
	}
	if d := float64(e.timeout.Milliseconds()) + 1000; ms > d {
		ms = d // the deadline ends the run first anyway
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// addTimer runs f on the loop after d, unless cleared first. A timer due
// after the execution's deadline never fires (the run ends first), so it
// holds no clock; more than MaxTimers pending at once end the run.
func (e *execution) addTimer(d time.Duration, f func()) int64 {
	if len(e.timers) >= e.r.opts.MaxTimers {
		e.setFatal(&Error{Kind: KindLimit, Message: fmt.Sprintf("more than %d timers pending at once", e.r.opts.MaxTimers),
			Hint: "await each sleep, or use Promise.all over the work itself rather than one timer per item"}, errLimit)
		return 0
	}
	e.nextTimer++
	id := e.nextTimer
	e.pending++
	if dl, ok := e.ctx.Deadline(); ok && time.Now().Add(d).After(dl) {
		e.timers[id] = nil
		return id
	}
	e.timers[id] = time.AfterFunc(d, func() {
		e.enqueue(func() {
			if _, ok := e.timers[id]; !ok {
				return
			}
			delete(e.timers, id)
			e.pending--
			f()
		})
	})
	return id
}

// sleep(ms) returns a promise that resolves after ms milliseconds.
func (e *execution) sleep(call goja.FunctionCall) goja.Value {
	p, resolve, _ := e.vm.NewPromise()
	e.addTimer(e.delay(call.Argument(0)), func() { e.call(resolve, goja.Undefined()) })
	return e.vm.ToValue(p)
}

func (e *execution) setTimeout(call goja.FunctionCall) goja.Value {
	fn, ok := goja.AssertFunction(call.Argument(0))
	if !ok {
		panic(e.vm.NewTypeError("setTimeout needs a function"))
	}
	var rest []goja.Value
	if len(call.Arguments) > 2 {
		rest = call.Arguments[2:]
	}
	id := e.addTimer(e.delay(call.Argument(1)), func() {
		if _, err := fn(goja.Undefined(), rest...); err != nil {
			var ex *goja.Exception
			if errors.As(err, &ex) && e.fatal == nil {
				// An uncaught throw in a timer ends the run, as in Node.
				e.fatal = e.rejection(ex.Value())
				return
			}
			panic(err)
		}
	})
	return e.vm.ToValue(id)
}

func (e *execution) clearTimeout(call goja.FunctionCall) goja.Value {
	id := call.Argument(0).ToInteger()
	if t, ok := e.timers[id]; ok {
		if t != nil {
			t.Stop()
		}
		delete(e.timers, id)
		e.pending--
	}
	return goja.Undefined()
}

// consoleObject is the console global. Its methods are created on first
// use: most scripts never log, and every native function costs setup time.
type consoleObject struct {
	e   *execution
	fns map[string]goja.Value
}

var consoleLevels = map[string]bool{"log": true, "info": true, "warn": true, "error": true, "debug": true}

func (c *consoleObject) Get(key string) goja.Value {
	if !consoleLevels[key] {
		return nil
	}
	if f, ok := c.fns[key]; ok {
		return f
	}
	f := c.e.native(key, func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = c.e.describe(a)
		}
		c.e.console.add(key, strings.Join(parts, " "))
		return goja.Undefined()
	})
	c.fns[key] = f
	return f
}

func (c *consoleObject) Set(string, goja.Value) bool { return false }
func (c *consoleObject) Has(key string) bool         { return consoleLevels[key] }
func (c *consoleObject) Delete(string) bool          { return false }
func (c *consoleObject) Keys() []string              { return []string{"debug", "error", "info", "log", "warn"} }

// consoleBuffer captures console output up to a byte limit.
type consoleBuffer struct {
	limit   int
	b       strings.Builder
	dropped int
	stream  func(level, text string) // ExecOptions.Console
}

func (c *consoleBuffer) add(level, text string) {
	line := text
	if level != "log" && level != "info" {
		line = "[" + level + "] " + text
	}
	line += "\n"
	if c.dropped > 0 || c.b.Len()+len(line) > c.limit {
		if c.dropped == 0 && c.b.Len() < c.limit { // keep what fits of the line
			cut := c.limit - c.b.Len()
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			c.b.WriteString(line[:cut])
			line = line[cut:]
		}
		c.dropped += len(line)
		return
	}
	c.b.WriteString(line)
	if c.stream != nil {
		c.stream(level, text)
	}
}

func (c *consoleBuffer) String() string {
	if c.dropped > 0 {
		return c.b.String() + "\n[console output truncated: " + strconv.Itoa(c.dropped) + " more bytes dropped]\n"
	}
	return c.b.String()
}
