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
	held, gathering := a.held, a.gathering
	a.held, a.gathering = nil, nil
	a.mu.Unlock()
	for _, h := range held {
		mappedBytes.Add(-h.counted)
		unmapAnswer(h.mem)
	}
	for _, g := range gathering {
		g.free()
	}
}

// gather reads the next n bytes of r, and the line break after them: the
// items of one part of call id's answer. max bounds the memory every held
// answer may take together: past it, the rest of the answer is read and
// dropped, and finish says it was too large.
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
	if g.over > 0 || mappedBytes.Load()+int64(n)+2 > max || int64(g.n+n+2) > max || !g.room(g.n+n+2) {
		g.over += n
		_, err := io.CopyN(io.Discard, r, int64(n)+1)
		return err
	}
	if g.n > 1 {
		g.buf[g.n] = ','
		g.n++
		g.count(1)
	}
	if _, err := io.ReadFull(r, g.buf[g.n:g.n+n]); err != nil {
		return err
	}
	g.n += n
	g.count(int64(n))
	var lf [1]byte
	if _, err := io.ReadFull(r, lf[:]); err != nil {
		return err
	}
	if lf[0] != '\n' {
		return fmt.Errorf("a part of %d bytes is not followed by a line break", n)
	}
	return nil
}

// finish ends call id's answer in parts: the array of every part's items,
// held until release; or, when it was too large, nil and its size.
func (a *answers) finish(id string) (answer []byte, tooLarge int) {
	a.mu.Lock()
	g := a.gathering[id]
	delete(a.gathering, id)
	a.mu.Unlock()
	if g == nil {
		return []byte("[]"), 0
	}
	if g.over > 0 {
		g.free()
		return nil, g.n + g.over
	}
	if !g.room(g.n + 1) { // never: gather kept room for it
		g.free()
		return nil, g.n
	}
	g.buf[g.n] = ']'
	g.n++
	g.count(1)
	out := g.buf[:g.n:g.n]
	if g.heap {
		return out, 0
	}
	// Held as alloc's buffers are, counted as they were gathered.
	mappedBytes.Add(-g.counted)
	a.hold(g.buf, g.counted)
	return out, 0
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

// gathering is an answer arriving in parts: the items of each, gathered
// into one array as they come, in address space outside the heap reserved
// up to the most it may hold and made usable (committed) as it fills.
type gathering struct {
	buf       []byte // buf[:n] is written, buf[:committed] usable
	n         int
	committed int
	counted   int64 // bytes counted in mappedBytes
	over      int   // bytes dropped: the answer is too large
	heap      bool  // buf is in the heap: the system maps no memory
}

// commitStep is how much of a reservation is made usable at a time.
const commitStep = 4 << 20

func newGathering(max int64) *gathering {
	g := &gathering{}
	if g.buf = reserveAnswer(int(max) + 2); g.buf == nil {
		g.heap = true
	}
	g.room(1)
	g.buf[0] = '['
	g.n = 1
	g.count(1)
	return g
}

// room makes the first n bytes of buf usable; false when it cannot.
func (g *gathering) room(n int) bool {
	if g.heap {
		if n > len(g.buf) {
			g.buf = append(g.buf[:g.n], make([]byte, n-g.n)...)
			g.buf = g.buf[:cap(g.buf)]
		}
		return true
	}
	if n <= g.committed {
		return true
	}
	to := min(len(g.buf), (n+commitStep-1)/commitStep*commitStep)
	if n > to || !commitAnswer(g.buf, to) {
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
	if !g.heap {
		mappedBytes.Add(-g.counted)
		unmapAnswer(g.buf)
	}
	g.buf = nil
}
