package runtime

import (
	"cmp"
	"slices"
	"strconv"
	"weak"

	"github.com/dop251/goja"
	sjson "github.com/segmentio/encoding/json"
)

// A large answer (a list of every pod of a cluster) is not turned into a
// graph of JavaScript objects when it arrives: that costs about 22 times
// its JSON in the worker's heap (a 42 MB list of 20,000 pods needed 900
// MB). It stays the JSON text it came as, and each object and array in it
// is a JavaScript object read where the script reads it: a property's
// value is decoded when the script reads that property. A script that
// scans a list and keeps a few objects holds the text and what it kept;
// what it read and dropped is garbage at once.
//
// Everything a script can observe is as JSON.parse would give it: the
// same keys in the same order, the same values, the same object each time
// a property is read while the script holds it (a handed-out object is
// kept weakly, so one the script dropped is made again, unobservably),
// and what a script sets, adds or deletes stays (a changed object is held
// strongly by its parent, up to the answer). Two differences: such
// objects cannot be frozen or sealed (Object.freeze throws), and they are
// not extensible-checked (Object.isExtensible is always true).

// lazyThreshold is the size from which an answer is read lazily; smaller
// ones become plain objects at once (cheaper for a few kilobytes).
const lazyThreshold = 256 << 10

// lazyDoc is one answer's JSON text.
type lazyDoc struct {
	vm   *goja.Runtime
	data []byte
	keys map[string]string // interned keys: lists repeat them
}

// answerValue is the JavaScript value of an operation's JSON answer: read
// lazily from lazyThreshold on, parsed at once below it.
func answerValue(vm *goja.Runtime, data []byte) (goja.Value, error) {
	if p := packedOf(data); p != nil {
		return packedValue(vm, p), nil // its parts were checked on arrival
	}
	if len(data) < lazyThreshold || !sjson.Valid(data) {
		return jsonToValue(vm, data) // invalid: its error says where
	}
	return lazyValue(vm, data), nil
}

// lazyValue returns the JavaScript value of the JSON text data, read
// lazily. data must be valid JSON.
func lazyValue(vm *goja.Runtime, data []byte) goja.Value {
	d := &lazyDoc{vm: vm, data: data, keys: map[string]string{}}
	start := skipSpace(data, 0)
	end := skipValue(data, start)
	return d.value(start, end, nil)
}

// value is the JavaScript value of data[start:end]; objects and arrays
// are lazy, with parent as the container that keeps them once changed.
func (d *lazyDoc) value(start, end int, parent *lazyNode) goja.Value {
	switch d.data[start] {
	case '{':
		o := &lazyObject{lazyNode: lazyNode{doc: d, start: start, end: end, parent: parent}}
		obj := d.vm.NewDynamicObject(o)
		o.self = obj
		return obj
	case '[':
		a := &lazyArray{lazyNode: lazyNode{doc: d, start: start, end: end, parent: parent}}
		obj := d.vm.NewDynamicArray(a)
		a.self = obj
		return obj
	}
	p := &jsonParser{vm: d.vm, data: d.data[:end], pos: start, keys: d.keys}
	v, err := p.value(0)
	if err != nil {
		return goja.Undefined() // valid JSON was checked on arrival
	}
	return v
}

// lazyNode is what lazy objects and arrays share: their text, and the
// container that must keep them once the script changes them.
type lazyNode struct {
	doc        *lazyDoc
	start, end int
	parent     *lazyNode
	self       *goja.Object
	// kept: the script changed this node (or a node inside it), so its
	// parent holds it strongly.
	kept bool
	// keepChild makes the parent hold a changed child (set by the
	// object or array that is the parent).
	keepChild func(child *lazyNode)
}

// changed marks n changed: every container up to the answer holds it.
func (n *lazyNode) changed() {
	for c := n; c != nil && !c.kept; c = c.parent {
		c.kept = true
		if c.parent != nil && c.parent.keepChild != nil {
			c.parent.keepChild(c)
		}
	}
}

// lazyField is one key of a lazy object's text and where its value is.
type lazyField struct {
	key        string
	start, end int
	// kid is the object or array handed out, held while the object is:
	// an object has few fields, and its parent holds it weakly.
	kid *goja.Object
}

// lazyObject is a JSON object read where the script reads it.
type lazyObject struct {
	lazyNode
	fields  []lazyField // nil until first read
	indexed bool
	// What the script changed: values set (and changed children kept),
	// keys deleted, keys added (in order).
	own   map[string]goja.Value
	gone  map[string]bool
	added []string
}

func (o *lazyObject) index() {
	if o.indexed {
		return
	}
	o.indexed = true
	o.keepChild = o.keep
	data := o.doc.data
	i := skipSpace(data, o.start+1)
	if data[i] == '}' {
		return
	}
	for {
		i = skipSpace(data, i)
		kEnd := skipString(data, i)
		key := o.doc.key(data[i:kEnd])
		i = skipSpace(data, kEnd)
		i = skipSpace(data, i+1) // ':'
		vEnd := skipValue(data, i)
		dup := false
		for j := range o.fields {
			if o.fields[j].key == key { // JSON.parse: the last value, at the first place
				o.fields[j].start, o.fields[j].end = i, vEnd
				dup = true
			}
		}
		if !dup {
			o.fields = append(o.fields, lazyField{key: key, start: i, end: vEnd})
		}
		i = skipSpace(data, vEnd)
		if data[i] == '}' {
			return
		}
		i++ // ','
	}
}

// keep holds a changed child strongly, as a value the script set.
func (o *lazyObject) keep(child *lazyNode) {
	for j := range o.fields {
		if o.fields[j].kid == child.self {
			if o.own == nil {
				o.own = map[string]goja.Value{}
			}
			if _, ok := o.own[o.fields[j].key]; !ok {
				o.own[o.fields[j].key] = child.self
			}
		}
	}
}

func (o *lazyObject) field(key string) *lazyField {
	o.index()
	for j := range o.fields {
		if o.fields[j].key == key {
			return &o.fields[j]
		}
	}
	return nil
}

func (o *lazyObject) Get(key string) goja.Value {
	if v, ok := o.own[key]; ok {
		return v
	}
	if o.gone[key] {
		return nil
	}
	f := o.field(key)
	if f == nil {
		return nil
	}
	if c := o.doc.data[f.start]; c != '{' && c != '[' {
		return o.doc.value(f.start, f.end, nil)
	}
	if f.kid != nil {
		return f.kid
	}
	v := o.doc.value(f.start, f.end, &o.lazyNode)
	f.kid = v.(*goja.Object)
	return v
}

func (o *lazyObject) Set(key string, val goja.Value) bool {
	if o.own == nil {
		o.own = map[string]goja.Value{}
	}
	if _, ok := o.own[key]; !ok && (o.gone[key] || o.field(key) == nil) && !contains(o.added, key) {
		o.added = append(o.added, key)
	}
	delete(o.gone, key)
	o.own[key] = val
	o.changed()
	return true
}

func (o *lazyObject) Has(key string) bool {
	if _, ok := o.own[key]; ok {
		return true
	}
	return !o.gone[key] && o.field(key) != nil
}

func (o *lazyObject) Delete(key string) bool {
	if !o.Has(key) {
		return true
	}
	delete(o.own, key)
	if o.field(key) != nil {
		if o.gone == nil {
			o.gone = map[string]bool{}
		}
		o.gone[key] = true
	}
	for i, k := range o.added {
		if k == key {
			o.added = append(o.added[:i:i], o.added[i+1:]...)
			break
		}
	}
	o.changed()
	return true
}

func (o *lazyObject) Keys() []string {
	o.index()
	keys := make([]string, 0, len(o.fields)+len(o.added))
	indices := 0
	for _, f := range o.fields {
		if !o.gone[f.key] {
			keys = append(keys, f.key)
			if isIndex(f.key) {
				indices++
			}
		}
	}
	for _, k := range o.added {
		keys = append(keys, k)
		if isIndex(k) {
			indices++
		}
	}
	if indices > 0 {
		// As every object orders them: array indices first, ascending,
		// then the other keys as they came.
		slices.SortStableFunc(keys, func(a, b string) int {
			ia, ib := isIndex(a), isIndex(b)
			switch {
			case ia && ib:
				x, _ := strconv.ParseUint(a, 10, 32)
				y, _ := strconv.ParseUint(b, 10, 32)
				return cmp.Compare(x, y)
			case ia:
				return -1
			case ib:
				return 1
			}
			return 0
		})
	}
	return keys
}

// isIndex says k is an array index: a canonical decimal below 2³²−1.
func isIndex(k string) bool {
	if k == "" || len(k) > 10 || k[0] == '0' && len(k) > 1 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return false
		}
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return err == nil && n < 1<<32-1
}

// lazyArray is a JSON array read where the script reads it. Once the
// script changes it (sets an item, pushes, sorts, changes its length)
// it holds its items itself.
type lazyArray struct {
	lazyNode
	items   []int                       // start of each item; nil until first read
	ends    []int                       // end of each item
	kids    []weak.Pointer[goja.Object] // objects and arrays handed out
	indexed bool
	held    []goja.Value // all items, once changed
	isHeld  bool
}

func (a *lazyArray) index() {
	if a.indexed {
		return
	}
	a.indexed = true
	a.keepChild = a.keep
	data := a.doc.data
	i := skipSpace(data, a.start+1)
	if data[i] == ']' {
		return
	}
	for {
		i = skipSpace(data, i)
		end := skipValue(data, i)
		a.items = append(a.items, i)
		a.ends = append(a.ends, end)
		i = skipSpace(data, end)
		if data[i] == ']' {
			break
		}
		i++ // ','
	}
	a.kids = make([]weak.Pointer[goja.Object], len(a.items))
}

// keep: a changed child makes the array hold every item.
func (a *lazyArray) keep(*lazyNode) { a.hold() }

// hold makes the array hold its items as values, each the one handed out
// if the script holds it.
func (a *lazyArray) hold() {
	if a.isHeld {
		return
	}
	a.index()
	held := make([]goja.Value, len(a.items))
	for i := range a.items {
		held[i] = a.item(i)
	}
	a.held, a.isHeld = held, true
}

func (a *lazyArray) item(i int) goja.Value {
	if c := a.doc.data[a.items[i]]; c != '{' && c != '[' {
		return a.doc.value(a.items[i], a.ends[i], nil)
	}
	if kid := a.kids[i].Value(); kid != nil {
		return kid
	}
	v := a.doc.value(a.items[i], a.ends[i], &a.lazyNode)
	obj := v.(*goja.Object)
	a.kids[i] = weak.Make(obj)
	return v
}

func (a *lazyArray) Len() int {
	if a.isHeld {
		return len(a.held)
	}
	a.index()
	return len(a.items)
}

func (a *lazyArray) Get(i int) goja.Value {
	if a.isHeld {
		if i < 0 || i >= len(a.held) {
			return nil
		}
		return a.held[i]
	}
	a.index()
	if i < 0 || i >= len(a.items) {
		return nil
	}
	return a.item(i)
}

func (a *lazyArray) Set(i int, v goja.Value) bool {
	if i < 0 {
		return false
	}
	a.hold()
	a.held = setHeld(a.held, i, v)
	a.changed()
	return true
}

// setHeld sets item i of a held array, growing it with undefined.
func setHeld(held []goja.Value, i int, v goja.Value) []goja.Value {
	for len(held) <= i {
		held = append(held, goja.Undefined())
	}
	held[i] = v
	return held
}

// resizeHeld makes a held array n long, growing it with undefined.
func resizeHeld(held []goja.Value, n int) []goja.Value {
	for len(held) < n {
		held = append(held, goja.Undefined())
	}
	clear(held[n:])
	return held[:n]
}

func (a *lazyArray) SetLen(n int) bool {
	if n < 0 {
		return false
	}
	a.hold()
	a.held = resizeHeld(a.held, n)
	a.changed()
	return true
}

func (d *lazyDoc) key(quoted []byte) string {
	if k, ok := d.keys[string(quoted)]; ok {
		return k
	}
	p := &jsonParser{vm: d.vm, data: quoted, keys: d.keys}
	k, err := p.str()
	if err != nil {
		k = string(quoted)
	}
	d.keys[string(quoted)] = k
	return k
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// structural marks the bytes skipValue looks at inside an object or array.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// skipSpace returns the first index from i that is not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the JSON string at data[i] ('"').
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// skipValue returns the index after the JSON value at data[i], which is
// valid JSON.
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			c := data[i]
			if !structural[c] {
				continue
			}
			switch c {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(data)
	}
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}
