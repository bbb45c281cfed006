package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dop251/goja"
	"github.com/kubecode/kubecode/internal/editdistance"
)

// HostFunc carries out one execution's operation calls: name is the
// operation's canonical Name (whatever alias the script used), args the
// script's argument as JSON ({} when it passed none). It returns a JSON
// result; to give the script a structured failure, return a *CallError.
// It runs on its own goroutine, several at once, and must honour ctx,
// which ends with the execution.
type HostFunc func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)

// Operation is a host operation exposed to scripts as an async function at
// tools.<Name>, e.g. Name "kubernetes.pods.list" is
// tools.kubernetes.pods.list(args). Aliases are further dotted names that
// resolve to the same operation but are not listed. Calls go to the
// execution's ExecOptions.Host.
type Operation struct {
	Name    string
	Aliases []string
}

// node is one segment of the immutable tree of operation names.
type node struct {
	name     string // display name of this segment
	path     string // dotted path from the root, "" for the root
	children map[string]*node
	hidden   bool // reached only through an alias
	op       *Operation
}

// normalize makes name lookup forgiving: case, '_' and '-' do not matter.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '_' || r == '-':
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func buildTree(ops []Operation) (*node, error) {
	root := &node{children: map[string]*node{}}
	for i := range ops {
		op := &ops[i]
		if err := root.insert(op.Name, op, false); err != nil {
			return nil, err
		}
	}
	for i := range ops {
		for _, a := range ops[i].Aliases {
			// An alias never shadows a real name.
			_ = root.insert(a, &ops[i], true)
		}
	}
	return root, nil
}

func (root *node) insert(name string, op *Operation, alias bool) error {
	segs := strings.Split(name, ".")
	n := root
	for i, s := range segs {
		if s == "" {
			return fmt.Errorf("runtime: operation name %q has an empty segment", name)
		}
		k := normalize(s)
		c, ok := n.children[k]
		if !ok {
			path := s
			if n.path != "" {
				path = n.path + "." + s
			}
			c = &node{name: s, path: path, children: map[string]*node{}, hidden: alias}
			n.children[k] = c
		} else if !alias {
			c.hidden = false
		}
		if n.op != nil {
			return fmt.Errorf("runtime: operation %q is nested under operation %q", name, n.path)
		}
		n = c
		if i == len(segs)-1 {
			if n.op != nil || len(n.children) > 0 {
				if alias {
					return nil
				}
				return fmt.Errorf("runtime: duplicate or conflicting operation name %q", name)
			}
			n.op = op
		}
	}
	return nil
}

// names lists the visible operation names at or below n, sorted.
func (n *node) names() []string {
	var out []string
	var walk func(*node)
	walk = func(m *node) {
		if m.hidden {
			return
		}
		if m.op != nil {
			out = append(out, m.path)
		}
		for _, c := range m.children {
			walk(c)
		}
	}
	walk(n)
	sort.Strings(out)
	return out
}

func (n *node) visibleChildren() []*node {
	var out []*node
	for _, c := range n.children {
		if !c.hidden {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// suggest returns up to five names close to the unknown segment key under n.
func (n *node) suggest(key string) []string {
	k := normalize(key)
	type cand struct {
		path string
		d    int
	}
	var cs []cand
	for _, c := range n.visibleChildren() {
		ck := normalize(c.name)
		d := editdistance.Levenshtein(k, ck)
		if d <= max(2, len(k)/3) || strings.HasPrefix(ck, k) || strings.HasPrefix(k, ck) {
			cs = append(cs, cand{c.path, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for _, c := range cs {
		out = append(out, "tools."+c.path)
	}
	if len(out) == 0 { // nothing close: show what is there
		for _, c := range n.visibleChildren() {
			out = append(out, "tools."+c.path)
		}
	}
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// passThrough are property names a script or the engine may probe on any
// object; they read as undefined instead of failing as unknown operations.
var passThrough = map[string]bool{
	"then": true, "toJSON": true, "constructor": true, "toString": true, "valueOf": true,
	"hasOwnProperty": true, "isPrototypeOf": true, "propertyIsEnumerable": true,
	"toLocaleString": true, "__proto__": true, "length": true, "name": true,
}

// toolsObject is the per-execution JavaScript view of a tree node.
type toolsObject struct {
	e *execution
	n *node
}

func (t *toolsObject) Get(key string) goja.Value {
	if key == "$list" {
		return t.e.native("$list", func(goja.FunctionCall) goja.Value {
			names := t.n.names()
			vals := make([]any, len(names))
			for i, s := range names {
				vals[i] = s
			}
			return t.e.vm.NewArray(vals...)
		})
	}
	c, ok := t.n.children[normalize(key)]
	if !ok {
		if passThrough[key] {
			return nil
		}
		where := "tools." + key
		if t.n.path != "" {
			where = "tools." + t.n.path + "." + key
		}
		msg := fmt.Sprintf("%s is not an operation", where)
		if s := t.n.suggest(key); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, ", ") + "?"
		}
		panic(t.e.vm.NewTypeError(msg + " (tools.$list() lists every name)"))
	}
	return t.e.nodeValue(c)
}

func (t *toolsObject) Set(string, goja.Value) bool { return false }
func (t *toolsObject) Delete(string) bool          { return false }
func (t *toolsObject) Has(key string) bool {
	_, ok := t.n.children[normalize(key)]
	return ok || key == "$list"
}

func (t *toolsObject) Keys() []string {
	cs := t.n.visibleChildren()
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// nodeValue returns the JavaScript value of a node, created once per
// execution: an async function for an operation, an object otherwise.
func (e *execution) nodeValue(n *node) goja.Value {
	if v, ok := e.nodes[n]; ok {
		return v
	}
	var v goja.Value
	if n.op != nil {
		v = e.native(n.name, e.hostCall(n.op))
	} else {
		v = e.vm.NewDynamicObject(&toolsObject{e: e, n: n})
	}
	e.nodes[n] = v
	return v
}

// Suggest explains why the dotted path (after "tools.") names nothing, as
// a script calling it would be told: "tools.kubernetes.podz is not an
// operation; did you mean tools.kubernetes.pods?". It returns "" when the
// path resolves.
func (r *Runtime) Suggest(path string) string {
	n := r.root
	for _, seg := range strings.Split(path, ".") {
		c := n.children[normalize(seg)]
		if c == nil {
			where := "tools." + seg
			if n.path != "" {
				where = "tools." + n.path + "." + seg
			}
			msg := where + " is not an operation"
			if s := n.suggest(seg); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, ", ") + "?"
			}
			return msg
		}
		n = c
	}
	return ""
}

// Resolve says what the dotted path (after "tools.") names, as scripts
// reach it (any case, '_' and '-' ignored, aliases included): an
// operation's canonical name, or a namespace's path. ok is false when
// nothing is there.
func (r *Runtime) Resolve(path string) (name string, ok bool) {
	n := r.root
	for _, s := range strings.Split(path, ".") {
		if n = n.children[normalize(s)]; n == nil {
			return "", false
		}
	}
	if n.op != nil {
		return n.op.Name, true
	}
	return n.path, true
}
