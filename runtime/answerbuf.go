package runtime

import (
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
	mu   sync.Mutex
	held map[*byte][]byte
}

// alloc returns a buffer of n bytes for an answer: outside the heap from
// lazyThreshold on, when the system allows.
func (a *answers) alloc(n int) []byte {
	if n >= lazyThreshold {
		if b := mapAnswer(n); b != nil {
			a.mu.Lock()
			if a.held == nil {
				a.held = map[*byte][]byte{}
			}
			a.held[&b[0]] = b
			a.mu.Unlock()
			mappedBytes.Add(int64(len(b)))
			return b
		}
	}
	return make([]byte, n)
}

// release gives back the buffer holding b, if it is one of alloc's.
func (a *answers) release(b []byte) {
	if cap(b) == 0 {
		return
	}
	a.mu.Lock()
	whole, ok := a.held[&b[:1][0]]
	delete(a.held, &b[:1][0])
	a.mu.Unlock()
	if ok {
		mappedBytes.Add(-int64(len(whole)))
		unmapAnswer(whole)
	}
}

// releaseAll gives back every buffer: the execution has ended.
func (a *answers) releaseAll() {
	a.mu.Lock()
	held := a.held
	a.held = nil
	a.mu.Unlock()
	for _, b := range held {
		mappedBytes.Add(-int64(len(b)))
		unmapAnswer(b)
	}
}
