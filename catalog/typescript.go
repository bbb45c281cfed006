package catalog

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// TypeScript declarations are what search_tools answers with, so every byte
// is a token the model pays for. The operations become one
//
//	declare const tools: { provider: { resource: { verb(...): Promise<T> } } }
//
// block (one line per operation, with a one-line doc comment), followed by
// one single-line interface per named result type, then the shared types
// (schemas with a Name) they use. Result types are compacted: each keeps
// the fields an agent needs within a character budget and closes every cut
// object with an index signature ([k: string]: unknown), so the model knows
// there is more. Which fields matter is the adapters' knowledge, carried by
// each operation's Hints.

// defaultTypeBudget is the approximate number of characters a named result
// type may spend on fields beyond its always-kept paths.
const defaultTypeBudget = 1600

// maxEnum is the longest enum shown as a union of literals.
const maxEnum = 16

const more = "[k: string]: unknown"

// Declarer renders declarations and remembers the compacted result types
// it rendered, so a catalog's declarations are computed once however often
// search answers with them. It is safe for concurrent use. Keep one per
// catalog version: it holds on to the schemas it has seen.
type Declarer struct {
	budget   int
	detailed bool
	complete bool
	mu       sync.Mutex
	cache    map[compactKey]*compactResult
}

// DeclarerOptions configure a Declarer. A nil *DeclarerOptions means
// defaults.
type DeclarerOptions struct {
	// TypeBudget is about how many characters a result type may spend on
	// fields beyond the leading ones and its hints' Keep paths: fields past
	// it are cut, and their object says so with an index signature. Zero
	// means 1600; negative means no limit (every field shown).
	TypeBudget int
	// Detailed shows the hints' Detail paths as well as their Keep paths.
	Detailed bool
	// Complete declares every field of every result type, nothing cut,
	// each object type as an interface of its own, named by its schema's
	// Title or by where it sits ("DeploymentStatus"): what a type check
	// runs against, so that a misspelt result field is an error naming
	// the type that lacks it. TypeBudget and Detailed do not apply.
	Complete bool
}

// NewDeclarer returns an empty Declarer.
func NewDeclarer(opts *DeclarerOptions) *Declarer {
	d := &Declarer{budget: defaultTypeBudget, cache: map[compactKey]*compactResult{}}
	if opts != nil && opts.TypeBudget != 0 {
		d.budget = opts.TypeBudget
	}
	if opts != nil {
		d.detailed = opts.Detailed
		d.complete = opts.Complete
	}
	if d.complete {
		d.budget = -1
	}
	return d
}

// Declaration returns the TypeScript declaration of one operation and its
// result types.
func Declaration(op *Operation) string {
	return NewDeclarer(nil).Declarations([]*Operation{op})
}

// Declarations returns the TypeScript declarations of ops without keeping
// anything for later calls; see Declarer.Declarations.
func Declarations(ops []*Operation) string {
	return NewDeclarer(nil).Declarations(ops)
}

// Signature returns op as one line a model can call it by:
// "tools.<name>(input: { ... }): Promise<T>". The input shows its required
// fields and as many optional ones as fit in a short line (… for the
// rest); the result names its type without declaring it, so a search for
// the operation's name answers with the full declaration.
func (dc *Declarer) Signature(op *Operation) string { return dc.signature(op, false) }

// Call is Signature with every input field: what a script needs to fix a
// call the type check refused.
func (dc *Declarer) Call(op *Operation) string { return dc.signature(op, true) }

func (dc *Declarer) signature(op *Operation, all bool) string {
	d := &declarer{dc: dc, named: map[string]string{}, shared: map[string]*Schema{}, allInput: all}
	in := ""
	if s := op.Input; s != nil {
		opt := "?"
		if needsInput(s) {
			opt = ""
		}
		in = "input" + opt + ": " + d.shortInput(s, op.Hints)
	}
	// The name output gives the type when it declares it; d is scratch.
	return "tools." + op.Name + "(" + in + "): Promise<" + d.output(op) + ">"
}

// maxSignatureInput is about how long a signature's input type may get
// before optional fields are left out.
const maxSignatureInput = 60

// Outline returns op's result type as one interface whose object-typed
// fields are named, not declared ("interface Pod { metadata: ObjectMeta;
// spec?: PodSpec; status?: PodStatus }"), and whether the provider's API
// documents the type and every one of those (all have Titles): then a
// model knows them, or can look them up by name. It is "" for a result
// that is no object type. The names are those of complete declarations.
func (dc *Declarer) Outline(op *Operation) (string, bool) {
	s := op.Output
	if s != nil && s.Type == "array" {
		s = s.Items
	}
	if s == nil || !isObject(s) || len(s.Properties) == 0 || len(s.AnyOf) > 0 || s.Nullable {
		return "", false
	}
	d := &declarer{dc: &Declarer{budget: -1, complete: true}, named: map[string]string{}, shared: map[string]*Schema{}}
	name := strings.TrimSuffix(d.output(op), "[]")
	decl := d.named[name]
	if s.Name != "" { // a shared type
		decl = "interface " + name + " " + d.body(s, name, op.Hints)
	}
	known := s.Title != ""
	for _, p := range s.Properties {
		if c := container(p); c != nil && isObject(c) && len(c.Properties) > 0 && c.Title == "" {
			known = false
		}
	}
	return decl, known
}

// ResultTypes returns the declarations of op's result types, compacted,
// without the operation: what an answer adds to a signature when the
// model cannot know the types. Shared types the provider documents (with
// a Title) are left out.
func (dc *Declarer) ResultTypes(op *Operation) string {
	d := &declarer{dc: dc, named: map[string]string{}, shared: map[string]*Schema{}}
	d.output(op)
	var b strings.Builder
	for _, name := range d.order {
		b.WriteString(d.named[name] + "\n")
	}
	for i := 0; i < len(d.sharedOrder); i++ {
		name := d.sharedOrder[i]
		if sh := d.shared[name]; sh.Title == "" {
			b.WriteString("interface " + name + " " + d.renderValue(sh, "", nil, d.sharedHints[name]) + "\n")
		}
	}
	return b.String()
}

// shortInput renders an input object with its required fields and the
// optional ones that fit.
func (d *declarer) shortInput(s *Schema, h *Hints) string {
	if !isObject(s) || len(s.Properties) == 0 || len(s.AnyOf) > 0 {
		return d.render(s, "", nil, h)
	}
	var parts []string
	n, cut := 0, false
	for _, k := range propOrder(s, h) {
		opt := "?"
		if slices.Contains(s.Required, k) {
			opt = ""
		}
		part := propName(k) + opt + ": " + d.render(s.Properties[k], "."+k, nil, h)
		if opt != "" && !d.allInput && n+len(part) > maxSignatureInput {
			cut = true
			continue
		}
		n += len(part) + 2
		parts = append(parts, part)
	}
	if cut {
		parts = append(parts, "…")
	}
	t := "{ " + strings.Join(parts, "; ") + " }"
	if s.Nullable {
		t += " | null"
	}
	return t
}

// Declarations returns the TypeScript declarations of ops, in order, with
// types shared between them (one result type for a resource's list and get,
// a shared type every result uses) declared once.
func (dc *Declarer) Declarations(ops []*Operation) string {
	d := &declarer{dc: dc, named: map[string]string{}, shared: map[string]*Schema{}}
	root := &tsNode{}
	for _, op := range ops {
		root.add(strings.Split(op.Name, "."), op)
	}
	var b strings.Builder
	b.WriteString("declare const tools: {\n")
	for _, c := range root.children {
		d.writeNode(&b, c, 1)
	}
	b.WriteString("};\n")
	// Shared types are rendered before the named ones are written:
	// declaring one may use another, or (complete declarations) name the
	// object types within it.
	var shared strings.Builder
	for i := 0; i < len(d.sharedOrder); i++ {
		name := d.sharedOrder[i]
		shared.WriteString("interface " + name + " " + d.body(d.shared[name], name, d.sharedHints[name]) + "\n")
	}
	for _, name := range d.order {
		b.WriteString(d.named[name])
		b.WriteString("\n")
	}
	b.WriteString(shared.String())
	return b.String()
}

// tsNode is one segment of the operation names' tree.
type tsNode struct {
	name     string
	op       *Operation
	children []*tsNode
}

func (n *tsNode) add(path []string, op *Operation) {
	if len(path) == 0 {
		n.op = op
		return
	}
	for _, c := range n.children {
		if c.name == path[0] {
			c.add(path[1:], op)
			return
		}
	}
	c := &tsNode{name: path[0]}
	n.children = append(n.children, c)
	c.add(path[1:], op)
}

// declarer renders one answer's operations and collects the named types
// they use.
type declarer struct {
	dc          *Declarer
	named       map[string]string // name → "interface Name { ... }"
	order       []string
	shared      map[string]*Schema // shared type name → schema
	sharedHints map[string]*Hints
	sharedOrder []string
	allInput    bool   // signatures show every input field
	parent      string // complete declarations: the type whose fields are being written
}

func (d *declarer) writeNode(b *strings.Builder, n *tsNode, depth int) {
	indent := strings.Repeat("  ", depth)
	if n.op != nil {
		if desc := oneLine(n.op.Description); desc != "" {
			fmt.Fprintf(b, "%s/** %s */\n", indent, desc)
		}
		fmt.Fprintf(b, "%s%s(%s): Promise<%s>;\n", indent, propName(n.name), d.input(n.op), d.output(n.op))
	}
	if len(n.children) > 0 {
		fmt.Fprintf(b, "%s%s: {\n", indent, propName(n.name))
		for _, c := range n.children {
			d.writeNode(b, c, depth+1)
		}
		fmt.Fprintf(b, "%s};\n", indent)
	}
}

func (d *declarer) input(op *Operation) string {
	s := op.Input
	if s == nil {
		return ""
	}
	opt := "?"
	if needsInput(s) {
		opt = ""
	}
	return "input" + opt + ": " + d.render(s, "", nil, op.Hints)
}

// needsInput says whether an input object must be given: it has required
// fields, or every form of its union has.
func needsInput(s *Schema) bool {
	if len(s.Required) > 0 {
		return true
	}
	bs := s.Branches()
	for _, b := range bs {
		if b == nil || len(b.Required) == 0 {
			return false
		}
	}
	return len(bs) > 0
}

// output names the result type and declares it. Only an object type is
// declared as an interface, or a list of them; a union is written out.
func (d *declarer) output(op *Operation) string {
	s := op.Output
	if s == nil {
		return "unknown"
	}
	return nullable(s, d.outputValue(op, s))
}

func (d *declarer) outputValue(op *Operation, s *Schema) string {
	name := op.OutputName
	list := s.Type == "array" && len(s.PrefixItems) == 0 && s.Items != nil && !s.Items.Nullable
	switch {
	case s.Name != "":
		return d.useShared(s, op.Hints)
	case list && s.Items.Name != "":
		return d.useShared(s.Items, op.Hints) + "[]"
	case isObject(s) && len(s.Properties) > 0 && len(s.AnyOf) == 0:
		if name == "" {
			name = pascal(op.Name) + "Result"
		}
		return d.declare(name, op, s)
	case list && s.Items.Name == "" && isObject(s.Items) && len(s.Items.Properties) > 0 && len(s.Items.AnyOf) == 0:
		if name == "" {
			name = pascal(op.Name) + "Item"
		}
		return d.declare(name, op, s.Items) + "[]"
	}
	return d.renderValue(s, "", nil, op.Hints)
}

// declare adds "interface name { ... }" for s, compacted, and returns the
// name it got: a different type already called name makes it qualify the
// name with the group ("EventEventsK8sIo", "EventCore"), then number it.
func (d *declarer) declare(name string, op *Operation, s *Schema) string {
	name = identifier(name)
	if d.dc.complete {
		return d.nameType(name, groupQualifier(op.Group), d.body(s, name, op.Hints))
	}
	r := d.dc.compacted(s, op.Hints)
	for _, sh := range r.shared {
		d.useShared(sh, op.Hints)
	}
	return d.nameType(name, groupQualifier(op.Group), r.body)
}

// groupQualifier tells a result type from another of the same name: its
// API group's name ("EventsK8sIo"), "Core" for none.
func groupQualifier(group string) string {
	if group == "" {
		return "Core"
	}
	return pascal(group)
}

// body renders the fields of the object type self, naming the object
// types within after it (complete declarations).
func (d *declarer) body(s *Schema, self string, h *Hints) string {
	prev := d.parent
	d.parent = self
	defer func() { d.parent = prev }()
	return d.renderValue(s, "", nil, h)
}

// nameType declares "interface <name> <body>" under name, or, when another
// type already has it, under the name with qualifier ("EventEventsK8sIo"),
// then numbered; a type declared before with the same body is reused.
func (d *declarer) nameType(name, qualifier, body string) string {
	for i := 1; ; i++ {
		cand := name
		switch {
		case i == 2 && qualifier != "":
			cand = name + qualifier
		case i == 2:
			continue
		case i >= 3:
			cand = fmt.Sprintf("%s%d", name, i)
		}
		decl := "interface " + cand + " " + body
		prev, ok := d.named[cand]
		if !ok {
			d.named[cand] = decl
			d.order = append(d.order, cand)
			return cand
		}
		if prev == decl {
			return cand
		}
	}
}

// useShared records that the answer uses the shared type s.
func (d *declarer) useShared(s *Schema, h *Hints) string {
	name := identifier(s.Name)
	if _, ok := d.shared[name]; !ok {
		d.shared[name] = s
		if d.sharedHints == nil {
			d.sharedHints = map[string]*Hints{}
		}
		d.sharedHints[name] = h
		d.sharedOrder = append(d.sharedOrder, name)
	}
	return name
}

// compacted returns the compacted body of the result type s and the shared
// types it uses, rendering it on first use.
func (dc *Declarer) compacted(s *Schema, h *Hints) *compactResult {
	key := compactKey{s, h}
	dc.mu.Lock()
	r, ok := dc.cache[key]
	dc.mu.Unlock()
	if ok {
		return r
	}
	d := &declarer{dc: dc, named: map[string]string{}, shared: map[string]*Schema{}}
	var keep map[string]bool
	if dc.budget >= 0 {
		keep = compact(s, h, dc.budget, dc.detailed)
	}
	r = &compactResult{body: d.renderValue(s, "", keep, h)}
	for _, name := range d.sharedOrder {
		r.shared = append(r.shared, d.shared[name])
	}
	dc.mu.Lock()
	dc.cache[key] = r
	dc.mu.Unlock()
	return r
}

type compactKey struct {
	s *Schema
	h *Hints
}

type compactResult struct {
	body   string
	shared []*Schema
}

// render writes s as a TypeScript type. keep, when not nil, says which
// property paths to show; objects with properties left out end with an
// index signature. A shared type (a schema with a Name) below the root is
// written as its name and declared once. The forms of a union and the
// items of a tuple sit at their schema's path, as an array's items do.
func (d *declarer) render(s *Schema, path string, keep map[string]bool, h *Hints) string {
	if s == nil {
		return "unknown"
	}
	return nullable(s, d.renderValue(s, path, keep, h))
}

// nullable adds "| null" to the type t of s when s allows null.
func nullable(s *Schema, t string) string {
	if s.Nullable && t != "unknown" {
		return t + " | null"
	}
	return t
}

// renderValue is render without s's null: what an interface declares.
func (d *declarer) renderValue(s *Schema, path string, keep map[string]bool, h *Hints) string {
	if s.Name != "" && path != "" {
		return d.useShared(s, h)
	}
	if s.IntOrString {
		return "number | string"
	}
	if len(s.AnyOf) > 0 {
		var forms []string
		for _, b := range s.Branches() {
			t := d.render(b, path, keep, h)
			if t == "unknown" {
				return t
			}
			if !slices.Contains(forms, t) {
				forms = append(forms, t)
			}
		}
		return strings.Join(forms, " | ")
	}
	if len(s.Enum) > 0 && len(s.Enum) <= maxEnum {
		lits := make([]string, 0, len(s.Enum))
		for _, v := range s.Enum {
			j, err := json.Marshal(v)
			if err != nil {
				return "unknown"
			}
			lits = append(lits, string(j))
		}
		return strings.Join(lits, " | ")
	}
	switch s.Type {
	case "string":
		return "string"
	case "integer", "number":
		return "number"
	case "boolean":
		return "boolean"
	case "array", "":
		if len(s.PrefixItems) > 0 {
			items := make([]string, 0, len(s.PrefixItems)+1)
			for _, p := range s.PrefixItems {
				items = append(items, d.render(p, path, keep, h))
			}
			if s.Items != nil {
				items = append(items, "..."+arrayOf(d.render(s.Items, path, keep, h)))
			}
			return "[" + strings.Join(items, ", ") + "]"
		}
		if s.Type == "array" {
			return arrayOf(d.render(s.Items, path, keep, h))
		}
	}
	if !isObject(s) {
		return "unknown"
	}
	if len(s.Properties) == 0 {
		if s.AdditionalProperties != nil {
			return "Record<string, " + d.render(s.AdditionalProperties, path, keep, h) + ">"
		}
		return "{ " + more + " }"
	}
	if d.dc.complete && path != "" {
		name := s.Title
		if name == "" {
			name = d.parent + pascal(path[strings.LastIndexByte(path, '.')+1:])
		}
		name = identifier(name)
		return d.nameType(name, "", d.body(s, name, h))
	}
	var parts []string
	cut := false
	for _, k := range propOrder(s, h) {
		p := path + "." + k
		if keep != nil && !keep[p] {
			cut = true
			continue
		}
		opt := "?"
		if slices.Contains(s.Required, k) {
			opt = ""
		}
		parts = append(parts, propName(k)+opt+": "+d.render(s.Properties[k], p, keep, h))
	}
	if cut || s.AdditionalProperties != nil {
		parts = append(parts, more)
	}
	return "{ " + strings.Join(parts, "; ") + " }"
}

// compact chooses the property paths of s to show: the leading fields and
// the hints' always-kept paths (with their subtrees), then, while the
// budget lasts, the others breadth first. Important fields jump two levels
// ahead, required ones half a level. A field is a candidate once its parent
// is shown; shared types are shown whole, by name.
func compact(s *Schema, h *Hints, budget int, detailed bool) map[string]bool {
	if h == nil {
		h = &Hints{}
	}
	children := map[string][]*field{}
	var walk func(s *Schema, path string, depth int)
	walk = func(s *Schema, path string, depth int) {
		s = container(s)
		if s == nil || s.Name != "" {
			return
		}
		if len(s.AnyOf) > 0 || len(s.PrefixItems) > 0 {
			for _, b := range s.Branches() {
				walk(b, path, depth)
			}
			for _, p := range s.PrefixItems {
				walk(p, path, depth)
			}
			if len(s.PrefixItems) > 0 {
				walk(s.Items, path, depth)
			}
			return
		}
		if !isObject(s) {
			return
		}
		for _, k := range propOrder(s, h) {
			p := path + "." + k
			c := s.Properties[k]
			f := &field{path: p, prio: 10 * depth, cost: len(k) + 4} // "k?: " and "; "
			if slices.Contains(h.Important, k) {
				f.prio -= 20
			}
			if slices.Contains(s.Required, k) {
				f.prio -= 5
			}
			f.order = len(children[path])
			if inner := container(c); inner != nil && inner.Name == "" && isObject(inner) && len(inner.Properties) > 0 {
				f.cost += 4 + len(more) // "{ ... [k: string]: unknown }"
			} else {
				f.cost += 8 // a scalar type or a shared type's name
			}
			children[path] = append(children[path], f)
			walk(c, p, depth+1)
		}
	}
	walk(s, "", 0)

	keep := map[string]bool{"": true}
	show := func(f *field) {
		if !keep[f.path] {
			keep[f.path] = true
			budget -= f.cost
		}
	}
	for _, f := range children[""] {
		if slices.Contains(h.Leading, f.path[1:]) {
			show(f)
		}
	}
	var force func(path string)
	force = func(path string) { // path, its ancestors and its subtree
		for _, f := range children[path] {
			show(f)
			force(f.path)
		}
	}
	always := h.Keep
	if detailed {
		always = append(slices.Clone(h.Keep), h.Detail...)
	}
	for _, p := range always {
		p = "." + p
		for parent := ""; ; {
			next := p
			if i := strings.IndexByte(p[len(parent)+1:], '.'); i >= 0 {
				next = p[:len(parent)+1+i]
			}
			for _, f := range children[parent] {
				if f.path == next {
					show(f)
				}
			}
			if next == p || !keep[next] {
				break
			}
			parent = next
		}
		if keep[p] {
			force(p)
		}
	}

	var q fieldQueue
	for path := range keep {
		for _, f := range children[path] {
			if !keep[f.path] {
				heap.Push(&q, f)
			}
		}
	}
	for q.Len() > 0 && budget > 0 {
		f := heap.Pop(&q).(*field)
		if f.cost > budget {
			continue
		}
		show(f)
		for _, c := range children[f.path] {
			heap.Push(&q, c)
		}
	}
	return keep
}

// field is a property path competing for a type's budget.
type field struct {
	path        string
	prio, order int // lower first
	cost        int // approximate characters when shown
}

type fieldQueue []*field

func (q fieldQueue) Len() int { return len(q) }
func (q fieldQueue) Less(i, j int) bool {
	if q[i].prio != q[j].prio {
		return q[i].prio < q[j].prio
	}
	if q[i].order != q[j].order {
		return q[i].order < q[j].order
	}
	return q[i].path < q[j].path
}
func (q fieldQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *fieldQueue) Push(x any)   { *q = append(*q, x.(*field)) }
func (q *fieldQueue) Pop() any {
	old := *q
	f := old[len(old)-1]
	*q = old[:len(old)-1]
	return f
}

// container returns the object schema inside arrays and maps, whose
// fields' paths are written as if the array or map were not there. A
// tuple or a union is returned as it is: its parts sit at its path too.
func container(s *Schema) *Schema {
	for s != nil {
		switch {
		case len(s.AnyOf) > 0 || len(s.PrefixItems) > 0:
			return s
		case s.Type == "array":
			s = s.Items
		case isObject(s) && len(s.Properties) == 0 && s.AdditionalProperties != nil:
			s = s.AdditionalProperties
		default:
			return s
		}
	}
	return nil
}

// arrayOf writes an array of t, in parentheses when t is a union.
func arrayOf(t string) string {
	// The second test keeps what earlier versions wrote, harmless
	// parentheses around a map of unions included.
	if unionType(t) || !strings.HasPrefix(t, "{") && strings.Contains(t, " | ") {
		t = "(" + t + ")"
	}
	return t + "[]"
}

// unionType says whether the TypeScript type t is a union at its top
// level, outside brackets and string literals.
func unionType(t string) bool {
	depth, quoted := 0, false
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{' || c == '[' || c == '(' || c == '<':
			depth++
		case c == '}' || c == ']' || c == ')' || c == '>':
			depth--
		case c == '|' && depth == 0:
			return true
		}
	}
	return false
}

func isObject(s *Schema) bool {
	return s.Type == "object" || (s.Type == "" && (len(s.Properties) > 0 || s.AdditionalProperties != nil))
}

// propOrder lists s's properties: required ones first in their order, then
// the hints' leading fields in theirs, then the rest alphabetically.
func propOrder(s *Schema, h *Hints) []string {
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	var leading []string
	if h != nil {
		leading = h.Leading
	}
	rank := func(k string) int {
		if i := slices.Index(s.Required, k); i >= 0 {
			return i - 1000
		}
		if i := slices.Index(leading, k); i >= 0 {
			return i - 100
		}
		return 0
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank(keys[i]), rank(keys[j])
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// propName writes a property name, quoting it unless it is an identifier.
func propName(k string) string {
	if isIdentifier(k) {
		return k
	}
	j, _ := json.Marshal(k)
	return string(j)
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r)) {
			continue
		}
		return false
	}
	return true
}

// identifier turns a result type name into a TypeScript identifier.
func identifier(s string) string {
	if isIdentifier(s) {
		return s
	}
	if p := pascal(s); p != "" {
		return p
	}
	return "Result"
}

// pascal writes s's words in PascalCase: "tools.api_resources" →
// ToolsApiResources.
func pascal(s string) string {
	var b strings.Builder
	for _, w := range Words(s) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	if b.Len() > 0 && unicode.IsDigit(rune(b.String()[0])) {
		return "T" + b.String()
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "*/", "* /")
}
