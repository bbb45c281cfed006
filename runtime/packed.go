package runtime

import (
	"errors"
	"sort"
	"sync"
	"weak"

	"github.com/dop251/goja"
	"github.com/klauspost/compress/zstd"
	sjson "github.com/segmentio/encoding/json"
)

// A list that arrives in parts is kept packed: each part (a page of the
// list, its items as JSON) compressed on arrival, and unpacked when the
// script first reads one of its items, into a lazily read array of its own
// (lazyjson.go). A page the script read and dropped is garbage again. At
// 50,000 pods the list is 105 MB of JSON and its packed parts 3 MB (a
// page of 500 of the demo's pods packs 35-fold; a real cluster's pods,
// more varied, less): the worker's memory follows what the script keeps,
// not the cluster's size.
// The script sees one array, as JSON.parse of the whole list gives it.

// packed is an answer kept as compressed parts.
type packed struct {
	parts []packedPart
	ends  []int  // ends[p] is the index after part p's last item
	store []byte // the compressed parts, one after the other
	keys  map[string]string
}

// packedPart is one part: where its compressed text is, how long it is
// unpacked.
type packedPart struct {
	start, end int
	raw        int
}

// The codec: zstd at its fastest packs a page of pods tenfold or more at
// hundreds of MB a second, and unpacks it at over a GB a second.
var (
	codecOnce sync.Once
	encoder   *zstd.Encoder
	decoder   *zstd.Decoder
	codecErr  error
)

func codec() (*zstd.Encoder, *zstd.Decoder, error) {
	codecOnce.Do(func() {
		encoder, codecErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if codecErr == nil {
			decoder, codecErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		}
	})
	return encoder, decoder, codecErr
}

// errInvalidPart is a part that is not a JSON array.
var errInvalidPart = errors.New("operation returned invalid JSON: a part of its answer is not a JSON array")

// countItems returns how many items the JSON array text holds; it must be
// valid.
func countItems(text []byte) int {
	i := skipSpace(text, 1)
	if text[i] == ']' {
		return 0
	}
	n := 0
	for {
		i = skipValue(text, skipSpace(text, i))
		n++
		i = skipSpace(text, i)
		if text[i] == ']' {
			return n
		}
		i++ // ','
	}
}

// packedByKey finds the packed answer a result stands for: the result is
// the packed store itself, known by its first byte.
var packedByKey sync.Map // *byte → *packed

func packedOf(data []byte) *packed {
	if len(data) == 0 {
		return nil
	}
	p, _ := packedByKey.Load(&data[0])
	pk, _ := p.(*packed)
	return pk
}

// packedValue is the script's array of a packed answer.
func packedValue(vm *goja.Runtime, p *packed) goja.Value {
	n := 0
	if len(p.ends) > 0 {
		n = p.ends[len(p.ends)-1]
	}
	a := &packedArray{vm: vm, p: p, kids: make([]weak.Pointer[goja.Object], n), kept: map[int]goja.Value{},
		offsets: make([][]int32, len(p.parts))}
	return vm.NewDynamicArray(a)
}

// packedArray is the array a script gets for a packed answer. An item is
// read from its part, unpacked when the script first reads an item of it
// (the last few unpacked stay at hand, for a scan), and each object item
// gets a copy of its own text: an object the script keeps holds its two
// kilobytes, not its part. Objects handed out are kept weakly, as a lazy
// array's are, and one the script changed strongly. Once the script
// changes the array itself (sets an item, sorts, pushes) it holds every
// item.
type packedArray struct {
	vm      *goja.Runtime
	p       *packed
	kids    []weak.Pointer[goja.Object]
	kept    map[int]goja.Value // items the script changed
	offsets [][]int32          // each part's items' starts and ends, once unpacked
	recent  [recentParts]struct {
		part int
		text []byte
	}
	next   int
	held   []goja.Value
	isHeld bool
}

// recentParts is how many unpacked parts stay at hand.
const recentParts = 2

// text returns part i unpacked.
func (a *packedArray) text(i int) []byte {
	for _, r := range a.recent {
		if r.text != nil && r.part == i {
			return r.text
		}
	}
	part := a.p.parts[i]
	_, dec, err := codec()
	var text []byte
	if err == nil {
		text, err = dec.DecodeAll(a.p.store[part.start:part.end], make([]byte, 0, part.raw))
	}
	if err != nil {
		// Never expected: the worker packed it. The script gets an
		// exception where it reads.
		panic(a.vm.NewGoError(err))
	}
	if a.offsets[i] == nil {
		a.offsets[i] = itemOffsets(text)
	}
	a.recent[a.next] = struct {
		part int
		text []byte
	}{i, text}
	a.next = (a.next + 1) % recentParts
	return text
}

// itemOffsets are the start and end of each item of a JSON array text.
func itemOffsets(text []byte) []int32 {
	var out []int32
	i := skipSpace(text, 1)
	if text[i] == ']' {
		return out
	}
	for {
		i = skipSpace(text, i)
		end := skipValue(text, i)
		out = append(out, int32(i), int32(end))
		i = skipSpace(text, end)
		if text[i] == ']' {
			return out
		}
		i++ // ','
	}
}

func (a *packedArray) total() int { return len(a.kids) }

func (a *packedArray) item(i int) goja.Value {
	if v, ok := a.kept[i]; ok {
		return v
	}
	if kid := a.kids[i].Value(); kid != nil {
		return kid
	}
	p := sort.SearchInts(a.p.ends, i+1)
	first := 0
	if p > 0 {
		first = a.p.ends[p-1]
	}
	text := a.text(p)
	j := 2 * (i - first)
	start, end := int(a.offsets[p][j]), int(a.offsets[p][j+1])
	if c := text[start]; c != '{' && c != '[' {
		d := &lazyDoc{vm: a.vm, data: text, keys: a.p.keys}
		return d.value(start, end, nil)
	}
	d := &lazyDoc{vm: a.vm, data: append([]byte(nil), text[start:end]...), keys: a.p.keys}
	// The item's parent: once the script changes it, the array holds it.
	parent := &lazyNode{keepChild: func(child *lazyNode) { a.kept[i] = child.self }}
	obj := d.value(0, end-start, parent).(*goja.Object)
	a.kids[i] = weak.Make(obj)
	return obj
}

// hold makes the array hold every item.
func (a *packedArray) hold() {
	if a.isHeld {
		return
	}
	held := make([]goja.Value, a.total())
	for i := range held {
		held[i] = a.item(i)
	}
	a.held, a.isHeld = held, true
}

func (a *packedArray) Len() int {
	if a.isHeld {
		return len(a.held)
	}
	return a.total()
}

func (a *packedArray) Get(i int) goja.Value {
	if a.isHeld {
		if i < 0 || i >= len(a.held) {
			return nil
		}
		return a.held[i]
	}
	if i < 0 || i >= a.total() {
		return nil
	}
	return a.item(i)
}

func (a *packedArray) Set(i int, v goja.Value) bool {
	if i < 0 {
		return false
	}
	a.hold()
	a.held = setHeld(a.held, i, v)
	return true
}

func (a *packedArray) SetLen(n int) bool {
	if n < 0 {
		return false
	}
	a.hold()
	a.held = resizeHeld(a.held, n)
	return true
}

// validPart checks a part is a JSON array.
func validPart(text []byte) bool {
	return len(text) >= 2 && text[0] == '[' && sjson.Valid(text)
}
