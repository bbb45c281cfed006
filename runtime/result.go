package runtime

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// result converts the script's value to JSON, enforcing MaxResultBytes.
func (e *execution) result(v goja.Value, res *Result) {
	if v == nil || goja.IsUndefined(v) {
		return
	}
	s, deep, err := e.toJSON(v, true)
	if deep {
		res.Error = &Error{Kind: KindLimit, Message: fmt.Sprintf("the result nests more than %d levels deep; the limit is %d", e.r.opts.MaxResultDepth, e.r.opts.MaxResultDepth),
			Hint: "return flat data: a list of records, or a map from names to values"}
		return
	}
	if err != nil {
		res.Error = e.failure(err)
		if res.Error.Kind == KindRuntime {
			res.Error.Message = "the script's result cannot be returned as JSON: " + res.Error.Message
			res.Error.Line, res.Error.Column, res.Error.Stack = 0, 0, nil
		}
		return
	}
	if e.ctx.Err() != nil {
		res.Error = e.deadlineError(nil)
		return
	}
	if goja.IsUndefined(s) {
		return
	}
	text := s.String()
	res.ResultBytes = len(text)
	if len(text) <= e.r.opts.MaxResultBytes {
		res.Value = json.RawMessage(text)
		return
	}
	cut := e.r.opts.MaxResultBytes
	for cut > 0 && text[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	marker := fmt.Sprintf("…[truncated: the result is %d bytes, over the %d-byte limit; return only the fields and items you need (filter, map, slice in the script) or summarize counts]",
		len(text), e.r.opts.MaxResultBytes)
	b, _ := json.Marshal(text[:cut] + marker)
	res.Value = b
	res.Truncated = true
}

// toJSON is JSON.stringify(v), stopped as soon as the value nests deeper
// than MaxResultDepth (deep is then true): goja's stringify takes time
// quadratic in the depth, so a limit checked on its text comes too late.
// When plain, functions and symbols are refused instead of dropped.
func (e *execution) toJSON(v goja.Value, plain bool) (s goja.Value, deep bool, err error) {
	limit := e.r.opts.MaxResultDepth
	depths := map[*goja.Object]int{} // of the objects met, by their holder's
	replacer := e.vm.ToValue(func(call goja.FunctionCall) goja.Value {
		val := call.Argument(1)
		obj, ok := val.(*goja.Object)
		if !ok {
			if _, isSym := val.(*goja.Symbol); isSym && plain {
				panic(e.vm.NewTypeError(fmt.Sprintf("the result holds a symbol at key %q; return plain data", call.Argument(0).String())))
			}
			return val
		}
		if _, isFn := goja.AssertFunction(val); isFn {
			if plain {
				panic(e.vm.NewTypeError(fmt.Sprintf("the result holds a function at key %q; return plain data", call.Argument(0).String())))
			}
			return val
		}
		d := 1
		if holder, ok := call.This.(*goja.Object); ok {
			d += depths[holder]
		}
		if d > limit {
			deep = true
			panic(e.vm.NewTypeError("too deep"))
		}
		depths[obj] = d
		return val
	})
	s, err = e.stringify(goja.Undefined(), v, replacer)
	return s, deep, err
}

// rejection converts a thrown or rejected JavaScript value into an Error.
func (e *execution) rejection(v goja.Value) *Error {
	out := &Error{Kind: KindRuntime}
	obj, isObj := v.(*goja.Object)
	if !isObj {
		out.Message = "uncaught exception: " + e.describe(v)
		return out
	}
	if f, ok := e.failures[obj]; ok {
		out.Kind = KindTool
		out.Tool = f.tool
		out.Code = f.code
	}
	out.Name = stringProp(obj, "name")
	out.Message = stringProp(obj, "message")
	if out.Name == "" && out.Message == "" {
		out.Message = "uncaught exception: " + e.describe(v)
	}
	if stack := stringProp(obj, "stack"); stack != "" {
		e.positionStack(out, stack)
	}
	return out
}

func stringProp(o *goja.Object, k string) string {
	v := o.Get(k)
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return ""
	}
	return v.String()
}

// describe renders a value for console output and messages.
func (e *execution) describe(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if obj, ok := v.(*goja.Object); ok {
		if _, isFn := goja.AssertFunction(v); isFn {
			return "[function]"
		}
		if n := stringProp(obj, "name"); n != "" && stringProp(obj, "stack") != "" {
			return n + ": " + stringProp(obj, "message")
		}
		s, deep, err := e.toJSON(v, false)
		if deep {
			return fmt.Sprintf("[a value nested more than %d levels deep: log flat data]", e.r.opts.MaxResultDepth)
		}
		if err == nil && !goja.IsUndefined(s) {
			return s.String()
		}
	}
	if _, ok := v.Export().(string); ok {
		return v.String()
	}
	return v.String()
}

// frameRE matches one frame of a goja stack string: "at fn (user.js:3:5(12))"
// or "at user.js:3:5(12)".
var frameRE = regexp.MustCompile(`at (?:(\S+) \()?` + regexp.QuoteMeta(jsName) + `:(\d+):(\d+)`)

type frame struct {
	fn        string
	line, col int // generated JavaScript, 1-based
}

// positionStack fills out's position and stack from a goja stack string.
func (e *execution) positionStack(out *Error, stack string) {
	var frames []frame
	for _, m := range frameRE.FindAllStringSubmatch(stack, -1) {
		l, _ := strconv.Atoi(m[2])
		c, _ := strconv.Atoi(m[3])
		frames = append(frames, frame{fn: m[1], line: l, col: c})
	}
	e.position(out, frames)
}

// positionFrames fills out's position and stack from goja stack frames.
func (e *execution) positionFrames(out *Error, stack []goja.StackFrame) {
	frames := make([]frame, 0, len(stack))
	for _, f := range stack {
		p := f.Position()
		if p.Line == 0 || f.SrcName() != jsName {
			continue
		}
		frames = append(frames, frame{fn: f.FuncName(), line: p.Line, col: p.Column})
	}
	e.position(out, frames)
}

const maxStackFrames = 8

func (e *execution) position(out *Error, frames []frame) {
	out.Stack = nil
	for _, f := range frames {
		l, c, ok := e.prog.mapGenerated(f.line, f.col)
		if !ok {
			continue // a helper esbuild injected, not the agent's code
		}
		if out.Line == 0 {
			out.Line, out.Column = l, c
		}
		if len(out.Stack) < maxStackFrames {
			loc := fmt.Sprintf("%s:%d:%d", sourceName, l, c)
			if f.fn != "" && f.fn != "<anonymous>" && !strings.HasPrefix(f.fn, "<") {
				loc = f.fn + " (" + loc + ")"
			}
			out.Stack = append(out.Stack, loc)
		}
	}
}
