package controlplane

import (
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// A Python program's simulation shares the node's process: no step of it
// may make a value much larger than its inputs. Every +, *, % and every
// call of a string method that can (join, replace, format, the paddings)
// goes through a builtin that works out the result's size before it is
// made, and what prints or converts a value renders it only when it is
// small. Growth step by step (s = s + s, kept.append(...) in a loop) is
// bounded by what the program's variables hold, measured every
// pythonCheckEvery steps and whenever its checked steps have made a
// quarter of pythonHeld (charge), and by its time.

// Bounds of one value a Python program makes: a string's or a rendering's
// bytes, a sequence's elements, an integer's bits, a range's length.
const (
	pythonMaxRepeat = maxVars
	pythonMaxBits   = 1 << 16
	pythonMaxRange  = 1_000_000
	pythonMaxDepth  = 32
	// renderSample is how many elements of a long container are measured
	// to estimate it whole.
	renderSample = 1024
)

var errPythonGrows = errors.New("the Python program grows past what is simulated")

// lastKey is the thread-local where __binop__ leaves the identity of its
// result's type, for the __last__ that follows it.
const lastKey = "kubecode.last"

// runStarlark parses src, bounds it (boundStarlark) and runs it.
func runStarlark(opts *syntax.FileOptions, thread *starlark.Thread, name, src string, predeclared starlark.StringDict) error {
	f, err := opts.Parse(name, src, 0)
	if err != nil {
		return err
	}
	if err := boundStarlark(f); err != nil {
		return err
	}
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		return err
	}
	_, err = prog.Init(thread, predeclared)
	return err
}

// checkedMethods are the methods whose result one call can make far
// larger than their receiver (checked before), or that copy a whole value
// (counted after).
var checkedMethods = map[string]bool{"join": true, "replace": true, "format": true, "ljust": true, "rjust": true, "center": true, "zfill": true, "expandtabs": true,
	// and the methods whose result, or receiver, grows by a whole value
	"extend": true, "update": true, "items": true, "keys": true, "values": true, "split": true, "splitlines": true, "elems": true, "codepoints": true}

// boundStarlark rewrites f in place: x OP y (+, *, %) becomes
// __binop__("OP", x, y) + __last__() (the result plus its type's
// identity: the node stays a BinaryExpr), x OP= y becomes
// x = __binop__("OP", x, y), and s.m(args) of a checked method becomes
// __method__(s, "m", args).
func boundStarlark(f *syntax.File) error {
	str := func(s string) *syntax.Literal {
		return &syntax.Literal{Token: syntax.STRING, Raw: fmt.Sprintf("%q", s), Value: s}
	}
	call := func(fn string, args ...syntax.Expr) *syntax.CallExpr {
		return &syntax.CallExpr{Fn: &syntax.Ident{Name: fn}, Args: args}
	}
	ops := map[syntax.Token]string{syntax.PLUS: "+", syntax.STAR: "*", syntax.PERCENT: "%"}
	augmented := map[syntax.Token]string{syntax.PLUS_EQ: "+", syntax.STAR_EQ: "*", syntax.PERCENT_EQ: "%"}
	var refused error
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryExpr:
			if op, ok := ops[n.Op]; ok {
				n.X, n.Op, n.Y = call("__binop__", str(op), n.X, n.Y), syntax.PLUS, call("__last__")
			}
		case *syntax.AssignStmt:
			if op, ok := augmented[n.Op]; ok {
				fn := "__binop__"
				if op == "+" {
					fn = "__iadd__" // a list grows in place, as += does
				}
				n.Op, n.RHS = syntax.EQ, call(fn, str(op), n.LHS, n.RHS)
			}
		case *syntax.CallExpr:
			if dot, ok := n.Fn.(*syntax.DotExpr); ok && checkedMethods[dot.Name.Name] {
				n.Fn, n.Args = &syntax.Ident{Name: "__method__"}, append([]syntax.Expr{dot.X, str(dot.Name.Name)}, n.Args...)
			}
		case *syntax.DotExpr:
			// A checked method taken, not called (j = "".join): its calls
			// could not be checked.
			if checkedMethods[n.Name.Name] {
				refused = fmt.Errorf("%w: .%s taken without a call", errNotSimulated, n.Name.Name)
			}
		}
		return refused == nil
	})
	return refused
}

// errNotSimulated is what a program's simulation refuses to run.
var errNotSimulated = errors.New("is not simulated")

// pyBinop is x OP y, refused when its result would be too large; it
// leaves the identity of its result's type for __last__.
func pyBinop(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("__binop__: want 3 arguments")
	}
	op, _ := starlark.AsString(args[0])
	x, y := args[1], args[2]
	tok, ok := map[string]syntax.Token{"+": syntax.PLUS, "*": syntax.STAR, "%": syntax.PERCENT}[op]
	if !ok {
		return nil, fmt.Errorf("__binop__: no operator %q", op)
	}
	if err := binopFits(op, x, y); err != nil {
		return nil, err
	}
	r, err := starlark.Binary(tok, x, y)
	if err != nil {
		return nil, err
	}
	if l, ok := r.(starlark.Indexable); ok {
		if err := charge(thread, l.Len()); err != nil {
			return nil, err
		}
	}
	thread.SetLocal(lastKey, identity(r))
	return r, nil
}

// binopFits says whether x OP y makes a value within the bounds.
func binopFits(op string, x, y starlark.Value) error {
	switch op {
	case "+":
		if a, ok := x.(starlark.Indexable); ok {
			if b, ok := y.(starlark.Indexable); ok && a.Len()+b.Len() > pythonMaxRepeat {
				return errPythonGrows
			}
		}
	case "*":
		for i, v := range []starlark.Value{x, y} {
			n, isInt := [2]starlark.Value{y, x}[i].(starlark.Int)
			if seq, ok := v.(starlark.Indexable); ok && isInt {
				if t, exact := n.Int64(); !exact || t > 0 && int64(seq.Len())*t > pythonMaxRepeat {
					return errPythonGrows
				}
			}
		}
		if a, ok := x.(starlark.Int); ok {
			if b, ok := y.(starlark.Int); ok && a.BigInt().BitLen()+b.BigInt().BitLen() > pythonMaxBits {
				return errPythonGrows
			}
		}
	case "%":
		if f, ok := x.(starlark.String); ok && len(f)+strings.Count(string(f), "%")*rendered(y, pythonMaxRepeat) > pythonMaxRepeat {
			return errPythonGrows
		}
	}
	return nil
}

// identity is the value v + identity(v) leaves as it is.
func identity(v starlark.Value) starlark.Value {
	switch v.(type) {
	case starlark.String:
		return starlark.String("")
	case starlark.Bytes:
		return starlark.Bytes("")
	case *starlark.List:
		return starlark.NewList(nil)
	case starlark.Tuple:
		return starlark.Tuple{}
	case starlark.Float:
		return starlark.Float(0)
	}
	return starlark.MakeInt(0)
}

func pyLast(thread *starlark.Thread, _ *starlark.Builtin, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	v, _ := thread.Local(lastKey).(starlark.Value)
	if v == nil {
		return starlark.MakeInt(0), nil
	}
	return v, nil
}

// pyMethod is recv.name(args), refused when its result would be too large.
func pyMethod(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 2 {
		return nil, fmt.Errorf("__method__: want a receiver and a name")
	}
	recv, rest := args[0], args[2:]
	name, ok := starlark.AsString(args[1])
	if !ok {
		return nil, fmt.Errorf("__method__: the method's name must be a string")
	}
	if s, ok := recv.(starlark.String); ok {
		size := len(s)
		switch name {
		case "join":
			if len(rest) != 1 {
				break
			}
			if it, ok := rest[0].(starlark.Iterable); ok {
				iter := it.Iterate()
				var e starlark.Value
				for iter.Next(&e) && size <= pythonMaxRepeat {
					size += len(s) + rendered(e, pythonMaxRepeat)
				}
				iter.Done()
			}
		case "replace":
			if len(rest) >= 2 {
				old, _ := starlark.AsString(rest[0])
				repl, _ := starlark.AsString(rest[1])
				times := strings.Count(string(s), old)
				size += times * (len(repl) - len(old))
			}
		case "format":
			holes := strings.Count(string(s), "{")
			for _, a := range rest {
				size += holes * rendered(a, pythonMaxRepeat)
			}
			for _, kv := range kwargs {
				size += holes * rendered(kv[1], pythonMaxRepeat)
			}
		case "ljust", "rjust", "center", "zfill", "expandtabs":
			if len(rest) > 0 {
				if n, ok := rest[0].(starlark.Int); ok {
					w, exact := n.Int64()
					if !exact || name == "expandtabs" && w > 0 && int64(strings.Count(string(s), "\t"))*w > pythonMaxRepeat {
						return nil, errPythonGrows
					}
					if name != "expandtabs" {
						size = max(size, int(min(w, pythonMaxRepeat+1)))
					}
				}
			}
		}
		if size > pythonMaxRepeat {
			return nil, errPythonGrows
		}
	}
	var m starlark.Value
	if h, ok := recv.(starlark.HasAttrs); ok {
		var err error
		if m, err = h.Attr(name); err != nil {
			return nil, err
		}
	}
	if m == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
	}
	r, err := starlark.Call(thread, m, rest, kwargs)
	if err != nil {
		return nil, err
	}
	for _, v := range []starlark.Value{r, recv} {
		if l, ok := v.(interface{ Len() int }); ok {
			if err := charge(thread, l.Len()); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// pyStrBuiltin and pyReprBuiltin are str and repr of a value small
// enough to render.
func pyStrBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return renderBounded(thread, "str", args, kwargs)
}

func pyReprBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return renderBounded(thread, "repr", args, kwargs)
}

func renderBounded(thread *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	n := 0
	if len(args) == 1 {
		if n = rendered(args[0], pythonMaxRepeat); n > pythonMaxRepeat {
			return nil, errPythonGrows
		}
	}
	if err := charge(thread, n); err != nil {
		return nil, err
	}
	return starlark.Call(thread, starlark.Universe[fn], args, kwargs)
}

// rendered is about how many bytes v's rendering takes, counting no
// further than limit (a value nested past pythonMaxDepth counts as past
// it: a list that holds itself).
func rendered(v starlark.Value, limit int) int { return newSizer(limit).size(v, 0) }

// sizer measures values' renderings up to limit, each list, dict and set
// once (a value referred to again counts again, from its first measure).
type sizer struct {
	limit int
	memo  map[starlark.Value]int
}

func newSizer(limit int) *sizer { return &sizer{limit: limit, memo: map[starlark.Value]int{}} }

func (z *sizer) size(v starlark.Value, depth int) int {
	if depth > pythonMaxDepth {
		return z.limit + 1
	}
	switch v := v.(type) {
	case starlark.String:
		return len(v) + 2
	case starlark.Bytes:
		return len(v) + 3
	case starlark.Int:
		return v.BigInt().BitLen()/3 + 2
	case starlark.NoneType, starlark.Bool, starlark.Float:
		return 24
	case *starlark.List, *starlark.Dict, *starlark.Set:
		if n, ok := z.memo[v]; ok {
			return n
		}
		z.memo[v] = z.limit + 1 // while it is measured: one that holds itself is past the limit
		n := z.elements(v.(starlark.Iterable), depth)
		z.memo[v] = n
		return n
	case starlark.Iterable:
		return z.elements(v, depth)
	}
	return 64
}

// elements measures a container's elements; a long one's first
// renderSample stand for the rest.
func (z *sizer) elements(v starlark.Iterable, depth int) int {
	n, seen := 2, 0
	it := v.Iterate()
	defer it.Done()
	var e starlark.Value
	for it.Next(&e) && n <= z.limit {
		n += z.size(e, depth+1) + 2
		if m, ok := v.(starlark.Mapping); ok {
			if val, found, _ := m.Get(e); found {
				n += z.size(val, depth+1) + 2
			}
		}
		if seen++; seen == renderSample {
			if l, ok := v.(interface{ Len() int }); ok && l.Len() > seen {
				return n * (l.Len() / seen)
			}
		}
	}
	return n
}

// copying are the built-ins that make a whole new value of their
// argument's size: each is counted (charge) after it makes it.
var copying = []string{"list", "tuple", "dict", "set", "sorted", "reversed", "enumerate", "zip"}

// counted is the built-in name of Starlark's universe, its result counted.
func counted(name string) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		// What it will make, before it makes it: each argument's length
		// (a range is lazy until then), and zip's columns by rows.
		shortest := -1
		for _, a := range args {
			l, ok := a.(interface{ Len() int })
			if !ok {
				continue
			}
			if l.Len() > pythonMaxRange {
				return nil, errPythonGrows
			}
			if shortest < 0 || l.Len() < shortest {
				shortest = l.Len()
			}
		}
		if name == "zip" && len(args)*max(shortest, 0) > pythonMaxRange {
			return nil, errPythonGrows
		}
		r, err := starlark.Call(thread, starlark.Universe[name], args, kwargs)
		if err != nil {
			return nil, err
		}
		if l, ok := r.(interface{ Len() int }); ok {
			if err := charge(thread, 16*l.Len()); err != nil {
				return nil, err
			}
		}
		return r, nil
	})
}

// fits says whether args, rendered together, stay within
// pythonMaxRepeat.
func fits(args ...starlark.Value) error {
	n := 0
	for _, a := range args {
		if n += rendered(a, pythonMaxRepeat-n); n > pythonMaxRepeat {
			return errPythonGrows
		}
	}
	return nil
}

// pyGetattr is Starlark's getattr, refusing the checked methods (their
// calls could not be checked).
func pyGetattr(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 1 {
		if name, ok := starlark.AsString(args[1]); ok && checkedMethods[name] {
			return nil, fmt.Errorf("%w: getattr of .%s", errNotSimulated, name)
		}
	}
	return starlark.Call(thread, starlark.Universe["getattr"], args, kwargs)
}

// pyIadd is x += y: a list grows in place (by any iterable, as += lets
// it), anything else is x + y; either checked first.
func pyIadd(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("__iadd__: want 3 arguments")
	}
	l, ok := args[1].(*starlark.List)
	if !ok {
		return pyBinop(thread, b, args, kwargs)
	}
	add, ok := args[2].(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("unknown binary op: list += %s", args[2].Type())
	}
	if n, ok := args[2].(interface{ Len() int }); ok && l.Len()+n.Len() > pythonMaxRepeat {
		return nil, errPythonGrows
	}
	it := add.Iterate()
	defer it.Done()
	var e starlark.Value
	for it.Next(&e) {
		if err := l.Append(e); err != nil {
			return nil, err
		}
		if l.Len() > pythonMaxRepeat {
			return nil, errPythonGrows
		}
	}
	if err := charge(thread, 16*l.Len()); err != nil {
		return nil, err
	}
	return l, nil
}
