package secrets

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// anchorLen is how many leading bytes of a form index it: every form is at
// least this long.
const anchorLen = MinValue

// anchor is the first anchorLen bytes of s as a number.
func anchor(s string) uint64 {
	var b [8]byte
	copy(b[:], s[:anchorLen])
	return binary.LittleEndian.Uint64(b[:])
}

func hash(a uint64) uint64 { return (a * 0x9E3779B97F4A7C15) >> (64 - filterLog) }

// jwtRE matches a JSON Web Token (a service account's, a cloud's): hidden
// whether or not it was registered.
var jwtRE = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)

// span is one hit: text[from:to] is a form of what.
type span struct {
	from, to int
	what     string
}

// find returns every hit in b, sorted by start, longest first. With cut,
// b ended before its writer did (output cut at a bound): a form's start
// at b's end counts too. The caller holds r.mu for reading.
func (r *Registry) find(b []byte, cut bool) []span {
	var spans []span
	n := len(b)
	if len(r.forms) > 0 && n >= anchorLen {
		// A window of anchorLen bytes rolls over b; the filter turns
		// away the windows that start no form.
		filter := r.filter
		var w uint64
		for i := 0; i < anchorLen-1; i++ {
			w |= uint64(b[i]) << (8 * (i + 1))
		}
		for i := 0; i+anchorLen <= n; i++ {
			w = w>>8 | uint64(b[i+anchorLen-1])<<(8*(anchorLen-1))
			h := hash(w)
			if filter[h>>6]&(1<<(h&63)) == 0 {
				continue
			}
			spans = r.at(b, i, w, cut, spans)
		}
	}
	if mayHoldJWT(b) {
		for _, m := range jwtRE.FindAllIndex(b, -1) {
			spans = append(spans, span{m[0], m[1], "a token"})
		}
	}
	slices.SortStableFunc(spans, func(x, y span) int { return cmp.Or(cmp.Compare(x.from, y.from), cmp.Compare(y.to, x.to)) })
	return spans
}

// mayHoldJWT says whether b holds "eyJ" (every JSON Web Token does), looking
// for the rarer "J" first.
func mayHoldJWT(b []byte) bool {
	for i := 2; i < len(b); {
		j := bytes.IndexByte(b[i:], 'J')
		if j < 0 {
			return false
		}
		if i += j; b[i-2] == 'e' && b[i-1] == 'y' {
			return true
		}
		i++
	}
	return false
}

// at appends the forms anchored by a that stand at b[i:].
func (r *Registry) at(b []byte, i int, a uint64, cut bool, spans []span) []span {
	for _, f := range r.anchors[a] {
		rest := b[i:]
		switch {
		case len(rest) >= len(f.text) && string(rest[:len(f.text)]) == f.text:
			if f.word && !(boundary(b, i-1) && boundary(b, i+len(f.text))) {
				continue
			}
			spans = append(spans, span{i, i + len(f.text), f.what})
		case cut && len(rest) < len(f.text) && f.text[:len(rest)] == string(rest):
			spans = append(spans, span{i, len(b), f.what})
		}
	}
	return spans
}

// boundary says b[i] is not a letter or digit (or is outside b), or ends
// a JSON escape ("\n", "\u0026"): in a JSON text the n of a line break
// before a value is no letter of a word.
func boundary(b []byte, i int) bool {
	if i < 0 || i >= len(b) {
		return true
	}
	if i >= 1 && b[i-1] == '\\' && bytes.IndexByte([]byte(`ntrbf/`), b[i]) >= 0 {
		return true
	}
	if i >= 5 && b[i-5] == '\\' && b[i-4] == 'u' {
		return true
	}
	c := b[i]
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
}

// unknown drops the spans whose text stands whole in known.
func unknown(spans []span, b, known []byte) []span {
	if len(known) == 0 || len(spans) == 0 {
		return spans
	}
	return slices.DeleteFunc(spans, func(s span) bool { return bytes.Contains(known, b[s.from:s.to]) })
}

// replace writes b with every span (merged where they overlap) replaced by
// its marker, and the names of what was hidden, each once.
func replace(b []byte, spans []span) ([]byte, []string) {
	var out bytes.Buffer
	out.Grow(len(b))
	var whats []string
	at := 0
	for i := 0; i < len(spans); {
		from, to, what := spans[i].from, spans[i].to, spans[i].what
		for i++; i < len(spans) && spans[i].from < to; i++ {
			to = max(to, spans[i].to)
		}
		out.Write(b[at:from])
		out.WriteString("[hidden: " + what + "]")
		whats = append(whats, what)
		at = to
	}
	out.Write(b[at:])
	sort.Strings(whats)
	return out.Bytes(), slices.Compact(whats)
}

// Scrub returns text with every registered value's forms, and every token
// that looks like a JSON Web Token, replaced by a marker naming what was
// there ("[hidden: Secret shop/db key password (base64)]"), and the names
// of what it hid. With cut, text ended before its writer did, so a form's
// start at its end is hidden too.
func (r *Registry) Scrub(text string, cut bool) (string, []string) {
	r.mu.RLock()
	spans := r.find([]byte(text), cut)
	r.mu.RUnlock()
	if len(spans) == 0 {
		return text, nil
	}
	out, whats := replace([]byte(text), spans)
	return string(out), whats
}

// ScrubJSON returns the JSON document b with every registered value hidden
// in every string and key, as Scrub does, and the names of what it hid. A
// document that holds no form is returned as it is, uncopied. Where a hit
// is not plainly inside one string (a value holding a quote or an escape),
// the document is decoded, each string scrubbed, and encoded again; b
// that is not JSON is scrubbed as text.
func (r *Registry) ScrubJSON(b []byte) ([]byte, []string) {
	return r.ScrubJSONKnown(b, nil)
}

// ScrubJSONKnown is ScrubJSON for the result of a call whose arguments
// were known: a form that stands whole in known (the script sent it) is
// not hidden. Otherwise a dry run given guesses would hide exactly the
// right one, an oracle on the value; the script learns nothing it did not
// send.
func (r *Registry) ScrubJSONKnown(b, known []byte) ([]byte, []string) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	spans := unknown(r.find(b, false), b, known)
	if len(spans) == 0 {
		return b, nil
	}
	plain := true
	for _, s := range spans {
		if bytes.ContainsAny(b[s.from:s.to], `"\`) || s.from > 0 && b[s.from-1] == '\\' {
			plain = false
			break
		}
	}
	if plain {
		// A hit outside a string (a number, a bare true) leaves a marker
		// no JSON reads: decode instead.
		if out, whats := replace(b, spans); json.Valid(out) {
			return out, whats
		}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return replace(b, spans)
	}
	var whats []string
	v = r.walk(v, known, &whats)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return replace(b, spans)
	}
	sort.Strings(whats)
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), slices.Compact(whats)
}

// walk scrubs every string and key of a decoded document.
func (r *Registry) walk(v any, known []byte, whats *[]string) any {
	scrub := func(s string) string {
		spans := unknown(r.find([]byte(s), false), []byte(s), known)
		if len(spans) == 0 {
			return s
		}
		out, w := replace([]byte(s), spans)
		*whats = append(*whats, w...)
		return string(out)
	}
	switch t := v.(type) {
	case string:
		return scrub(t)
	case json.Number:
		if s := scrub(t.String()); s != t.String() {
			return s // the number held a value: the marker, as text
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = r.walk(x, known, whats)
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[scrub(k)] = r.walk(x, known, whats)
		}
		return out
	}
	return v
}

// minHidden is the shortest value Hide hides.
const minHidden = 4

// Hide returns text with the forms of a few values, known to one caller
// only (a call's own secret arguments, which no registry holds), hidden
// as Scrub hides registered ones, and the names of what it hid. It builds
// no index: its cost grows with the values, so it is for a handful.
func Hide(text string, values []Value) (string, []string) {
	var fs []form
	for _, v := range values {
		// Known secret for certain, a short value is hidden as a word
		// (a registry leaves it out: it cannot tell "admin" from a word).
		if t := strings.TrimSpace(v.Value); len(t) >= minHidden && len(t) < MinValue {
			fs = append(fs, form{text: t, what: markerSafe(v.What), word: true})
		}
		fs = appendForms(fs, v)
	}
	b := []byte(text)
	var spans []span
	for _, f := range fs {
		for from := 0; ; {
			i := strings.Index(text[from:], f.text)
			if i < 0 {
				break
			}
			i += from
			if !f.word || boundary(b, i-1) && boundary(b, i+len(f.text)) {
				spans = append(spans, span{i, i + len(f.text), f.what})
			}
			from = i + 1
		}
	}
	if len(spans) == 0 {
		return text, nil
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].from != spans[j].from {
			return spans[i].from < spans[j].from
		}
		return spans[i].to > spans[j].to
	})
	out, whats := replace(b, spans)
	return string(out), whats
}
