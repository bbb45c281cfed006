package secrets

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MinValue is the shortest value registered, in bytes once trimmed:
// shorter ones ("1", "true", "admin") would hide every such word in every
// result and are left out.
const MinValue = 6

// wordValue: a value shorter than this is hidden only where it stands as
// a word (not inside a longer run of letters and digits), so that a
// password "changeme" does not blank "changemedia".
const wordValue = 12

// Value is one secret value and what it is, as the marker that replaces it
// names it ("Secret shop/db key password"). What never holds the value.
type Value struct {
	Value string
	What  string
}

// Options configures a Registry. A nil *Options means defaults.
type Options struct {
	// MaxBytes bounds the bytes of all forms the registry keeps. A value
	// that would pass it is not registered, and Dropped counts it. Zero
	// means 256 MiB (about 100,000 values of 100 bytes in all their
	// forms).
	MaxBytes int
}

// Registry holds secret values in every form a text may carry them and
// hides them (Scrub, ScrubJSON). It is safe for concurrent use; scans run
// in parallel, and a change waits for the scans under way.
type Registry struct {
	maxBytes int

	mu      sync.RWMutex
	sources map[string][]*form // source → the forms it registered
	forms   map[string]*form   // text → form
	anchors map[uint64][]*form // a form's first six bytes → forms
	filter  []uint64           // bit set of anchors' hashes
	bytes   int                // of every form's text
	removed int                // forms removed since the filter was built

	dropped atomic.Int64
}

// form is one text a value can appear as.
type form struct {
	text string
	what string
	// word: hidden only where it stands as a word.
	word bool
	// refs counts the sources that registered it.
	refs int
}

// filterLog sizes the anchor filter: 8 Mi bits (1 MiB) keep it about 1 %
// full at 70,000 forms (10,000 values), so few windows of a text reach the
// anchor map. A smaller filter is cheaper to clear but costs more look-ups
// (2 Mi bits: twice the scan time at 10,000 values).
const filterLog = 23

const filterBits = 1 << filterLog

// New returns an empty Registry.
func New(opts *Options) *Registry {
	r := &Registry{
		sources: map[string][]*form{},
		forms:   map[string]*form{},
		anchors: map[uint64][]*form{},
		filter:  make([]uint64, filterBits/64),
	}
	if opts != nil {
		r.maxBytes = opts.MaxBytes
	}
	if r.maxBytes == 0 {
		r.maxBytes = 256 << 20
	}
	return r
}

// Set makes values the ones source registers (a Secret's, "Secret
// shop/db"), replacing what source registered before. No values forgets
// source.
func (r *Registry) Set(source string, values []Value) {
	var fs []form
	for _, v := range values {
		fs = appendForms(fs, v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(source)
	if len(fs) == 0 {
		return
	}
	kept := make([]*form, 0, len(fs))
	for _, f := range fs {
		if g := r.forms[f.text]; g != nil {
			if slices.Contains(kept, g) {
				continue
			}
			g.refs++
			kept = append(kept, g)
			continue
		}
		if r.bytes+len(f.text) > r.maxBytes {
			r.dropped.Add(1)
			continue
		}
		g := &form{text: f.text, what: f.what, word: f.word, refs: 1}
		r.forms[g.text] = g
		a := anchor(g.text)
		r.anchors[a] = append(r.anchors[a], g)
		r.setBit(a)
		r.bytes += len(g.text)
		kept = append(kept, g)
	}
	r.sources[source] = kept
}

// Add registers values under source beside those it has (a credential
// learnt as it is used: a token an exec plugin returned).
func (r *Registry) Add(source string, values ...Value) {
	r.mu.RLock()
	have := r.sources[source]
	known := true
	for _, v := range values {
		t := strings.TrimSpace(v.Value)
		if g := r.forms[t]; g == nil || !slices.Contains(have, g) {
			known = false
			break
		}
	}
	r.mu.RUnlock()
	if known && len(have) > 0 {
		return // the hot path: a token seen again
	}
	var fs []form
	for _, v := range values {
		fs = appendForms(fs, v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.sources[source]
	for _, f := range fs {
		g := r.forms[f.text]
		if g != nil && slices.Contains(kept, g) {
			continue
		}
		if g == nil {
			if r.bytes+len(f.text) > r.maxBytes {
				r.dropped.Add(1)
				continue
			}
			g = &form{text: f.text, what: f.what, word: f.word}
			r.forms[g.text] = g
			a := anchor(g.text)
			r.anchors[a] = append(r.anchors[a], g)
			r.setBit(a)
			r.bytes += len(g.text)
		}
		g.refs++
		kept = append(kept, g)
	}
	r.sources[source] = kept
}

// Forget removes what source registered.
func (r *Registry) Forget(source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(source)
}

// Sources returns the registered sources whose names start with prefix,
// sorted (a watch reconciling its own after a relist).
func (r *Registry) Sources(prefix string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for s := range r.sources {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func (r *Registry) forgetLocked(source string) {
	for _, g := range r.sources[source] {
		if g.refs--; g.refs > 0 {
			continue
		}
		delete(r.forms, g.text)
		a := anchor(g.text)
		list := slices.DeleteFunc(r.anchors[a], func(x *form) bool { return x == g })
		if len(list) == 0 {
			delete(r.anchors, a)
		} else {
			r.anchors[a] = list
		}
		r.bytes -= len(g.text)
		r.removed++
	}
	delete(r.sources, source)
	if r.removed > 1024 && r.removed > len(r.forms) {
		// Bits of removed forms only cost a map look-up; rebuild once
		// they outnumber the living.
		clear(r.filter)
		for a := range maps.Keys(r.anchors) {
			r.setBit(a)
		}
		r.removed = 0
	}
}

// Stats says how many forms and bytes the registry holds, and how many
// values it dropped for want of room.
type Stats struct {
	Sources, Forms, Bytes int
	Dropped               int64
}

// Dropped counts the forms left out because the registry was full.
func (r *Registry) Dropped() int64 { return r.dropped.Load() }

// Stats returns the registry's size.
func (r *Registry) Stats() Stats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return Stats{Sources: len(r.sources), Forms: len(r.forms), Bytes: r.bytes, Dropped: r.dropped.Load()}
}

func (r *Registry) setBit(a uint64) {
	h := hash(a)
	r.filter[h>>6] |= 1 << (h & 63)
}
