package runtime

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// A large answer (a list of every pod: 105 MB at 50,000 pods) is read by
// the worker into memory outside the Go heap, and read lazily from there
// (lazyjson.go). In the heap, the collector would let the heap grow to
// twice what is live before collecting: the answer alone would double the
// worker's memory. Outside it, the worker holds the answer once, and the
// heap holds what the script makes of it.
//
// Such memory is the execution's: it is given back when the execution
// ends (no JavaScript value outlives it: the result and console lines are
// copies), and an answer nobody waits for any more is given back at once.
// It counts against the script's memory limit as the heap does
// (mappedBytes, watchMemory), and an answer that would take the memory an
// execution holds this way past half the limit is not read into memory:
// the call fails with an error saying what to ask for instead.

// mappedBytes is the memory held outside the heap for answers.
var mappedBytes atomic.Int64

// answers are the answers of one worker's execution held outside the heap.
type answers struct {
	mu sync.Mutex
	// held are the buffers by their first byte, with the bytes of each
	// that count (mappedBytes).
	held map[*byte]heldAnswer
	// gathering are the answers arriving in parts, by call id.
	gathering map[string]*gathering
	// heapPacked are packed answers in the heap (the system maps no
	// memory), known to packedByKey until the execution ends.
	heapPacked []*byte
}

type heldAnswer struct {
	mem     []byte
	counted int64
}

// alloc returns a buffer of n bytes for an answer: outside the heap from
// lazyThreshold on, when the system allows.
func (a *answers) alloc(n int) []byte {
	if n >= lazyThreshold {
		if b := mapAnswer(n); b != nil {
			a.hold(b, int64(n))
			return b
		}
	}
	return make([]byte, n)
}

// hold records b, of which counted bytes count as memory in use.
func (a *answers) hold(b []byte, counted int64) {
	a.mu.Lock()
	if a.held == nil {
		a.held = map[*byte]heldAnswer{}
	}
	a.held[&b[0]] = heldAnswer{b, counted}
	a.mu.Unlock()
	mappedBytes.Add(counted)
}

// release gives back the buffer holding b, if it is one of alloc's.
func (a *answers) release(b []byte) {
	if cap(b) == 0 {
		return
	}
	packedByKey.Delete(&b[:1][0])
	a.mu.Lock()
	h, ok := a.held[&b[:1][0]]
	delete(a.held, &b[:1][0])
	a.mu.Unlock()
	if ok {
		mappedBytes.Add(-h.counted)
		unmapAnswer(h.mem)
	}
}

// releaseAll gives back every buffer: the execution has ended.
func (a *answers) releaseAll() {
	a.mu.Lock()
	held, gathering, heapPacked := a.held, a.gathering, a.heapPacked
	a.held, a.gathering, a.heapPacked = nil, nil, nil
	a.mu.Unlock()
	for _, k := range heapPacked {
		packedByKey.Delete(k)
	}
	for _, h := range held {
		packedByKey.Delete(&h.mem[0])
		mappedBytes.Add(-h.counted)
		unmapAnswer(h.mem)
	}
	for _, g := range gathering {
		g.free()
	}
}

// gather reads the next n bytes of r, and the line break after them: the
// items of one part of call id's answer, packed as they arrive (packed.go).
// max bounds the memory every held answer may take together: past it, the
// rest of the answer is read and dropped, and finish says it was too large.
func (a *answers) gather(id string, r io.Reader, n int, max int64) error {
	a.mu.Lock()
	g := a.gathering[id]
	if g == nil {
		if a.gathering == nil {
			a.gathering = map[string]*gathering{}
		}
		g = newGathering(max)
		a.gathering[id] = g
	}
	a.mu.Unlock()
	// The part as an array: "[" items "]".
	if cap(g.scratch) < n+2 {
		g.scratch = make([]byte, n+2)
	}
	g.scratch = g.scratch[:n+2]
	if _, err := io.ReadFull(r, g.scratch[1:n+1]); err != nil {
		return err
	}
	var lf [1]byte
	if _, err := io.ReadFull(r, lf[:]); err != nil {
		return err
	}
	if lf[0] != '\n' {
		return fmt.Errorf("a part of %d bytes is not followed by a line break", n)
	}
	// Only the goroutine reading the input gathers (scratch and packBuf
	// are its own); the execution's end frees the gathering on another.
	text := g.scratch
	text[0], text[n+1] = '[', ']'
	valid := validPart(text)
	items := 0
	if valid {
		items = countItems(text)
	}
	if items > 0 {
		enc, _, err := codec()
		if err != nil {
			return err
		}
		g.packBuf = enc.EncodeAll(text, g.packBuf[:0])
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.raw += n
	switch {
	case g.freed:
		return nil // the execution ended: dropped
	case g.over > 0 || g.invalid:
		g.over += n
		return nil
	case !valid:
		g.invalid = true
		return nil
	case items == 0:
		return nil
	}
	c := len(g.packBuf)
	if mappedBytes.Load()+int64(c) > max || int64(g.n+c) > max || !g.room(g.n+c) {
		g.over += n
		return nil
	}
	copy(g.store[g.n:], g.packBuf)
	g.p.parts = append(g.p.parts, packedPart{start: g.n, end: g.n + c, raw: len(text)})
	g.p.ends = append(g.p.ends, g.total()+items)
	g.n += c
	g.count(int64(c))
	return nil
}

// finish ends call id's answer in parts. Below lazyThreshold it is the
// array of every part's items, parsed at once; from it on, the packed
// parts, held until release and known to answerValue by the answer's
// first byte. When it was too large, answer is nil and tooLarge its size;
// when a part was not JSON, answer is nil and invalid true.
func (a *answers) finish(id string) (answer []byte, tooLarge int, invalid bool) {
	a.mu.Lock()
	g := a.gathering[id]
	delete(a.gathering, id)
	a.mu.Unlock()
	if g == nil {
		return []byte("[]"), 0, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.freed:
		return nil, g.raw, false // the execution ended: nobody waits
	case g.invalid:
		g.freeLocked()
		return nil, 0, true
	case g.over > 0:
		g.freeLocked()
		return nil, g.raw, false
	case len(g.p.parts) == 0:
		g.freeLocked()
		return []byte("[]"), 0, false
	case g.raw < lazyThreshold:
		// Small: unpacked into one array, parsed at once.
		out := make([]byte, 1, g.raw+len(g.p.parts)+2)
		out[0] = '['
		_, dec, _ := codec()
		for i, part := range g.p.parts {
			text, err := dec.DecodeAll(g.store[part.start:part.end], nil)
			if err != nil {
				g.freeLocked()
				return nil, 0, true
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, text[1:len(text)-1]...)
		}
		g.freeLocked()
		return append(out, ']'), 0, false
	}
	out := g.store[:g.n:g.n]
	g.p.store = out
	g.freed = true // now the answer's: released with it
	packedByKey.Store(&out[0], g.p)
	if g.heap {
		a.mu.Lock()
		a.heapPacked = append(a.heapPacked, &out[0])
		a.mu.Unlock()
	} else {
		// Held as alloc's buffers are, counted as they were gathered.
		mappedBytes.Add(-g.counted)
		a.hold(g.store, g.counted)
	}
	return out, 0, false
}

// drop forgets call id's answer in parts: it failed, or nobody waits.
func (a *answers) drop(id string) {
	a.mu.Lock()
	g := a.gathering[id]
	delete(a.gathering, id)
	a.mu.Unlock()
	if g != nil {
		g.free()
	}
}

// gathering is an answer arriving in parts, packed into address space
// outside the heap reserved up to the most it may hold and made usable
// (committed) as it fills.
type gathering struct {
	// mu guards what follows against the execution's end (releaseAll),
	// which frees the gathering on another goroutine than the reader's.
	mu        sync.Mutex
	freed     bool
	store     []byte // store[:n] is written, store[:committed] usable
	n         int
	committed int
	counted   int64 // bytes counted in mappedBytes
	heap      bool  // store is in the heap: the system maps no memory
	p         *packed
	raw       int  // the parts' bytes, as they came
	over      int  // bytes dropped: the answer is too large
	invalid   bool // a part was not a JSON array
	scratch   []byte
	packBuf   []byte
}

// commitStep is how much of a reservation is made usable at a time: a
// small list takes little of the process's data limit.
const commitStep = 256 << 10

func newGathering(max int64) *gathering {
	g := &gathering{p: &packed{keys: map[string]string{}}}
	if g.store = reserveAnswer(int(max)); g.store == nil {
		g.heap = true
	}
	return g
}

// total is how many items the parts packed so far hold.
func (g *gathering) total() int {
	if len(g.p.ends) == 0 {
		return 0
	}
	return g.p.ends[len(g.p.ends)-1]
}

// room makes the first n bytes of store usable; false when it cannot.
func (g *gathering) room(n int) bool {
	if g.heap {
		if n > len(g.store) {
			g.store = append(g.store[:g.n], make([]byte, n-g.n)...)
			g.store = g.store[:cap(g.store)]
		}
		return true
	}
	if n <= g.committed {
		return true
	}
	to := min(len(g.store), (n+commitStep-1)/commitStep*commitStep)
	if n > to || !commitAnswer(g.store, to) {
		return false
	}
	g.committed = to
	return true
}

func (g *gathering) count(n int64) {
	if !g.heap {
		g.counted += n
		mappedBytes.Add(n)
	}
}

func (g *gathering) free() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.freeLocked()
}

func (g *gathering) freeLocked() {
	if g.freed {
		return
	}
	g.freed = true
	if !g.heap && g.store != nil {
		mappedBytes.Add(-g.counted)
		unmapAnswer(g.store)
	}
	g.store = nil
}
