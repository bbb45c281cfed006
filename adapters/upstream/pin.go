package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server can change what a tool does, or says it does, after an operator
// looked at it (a "rug pull": a read that starts writing, a description
// that starts giving orders). kubecode serves an upstream tool only as an
// operator pinned it: the whole declaration (name, title, description,
// input and output schemas, annotations) is fingerprinted, and a tool that
// is new or whose fingerprint moved is quarantined (not indexed, not
// callable, named with its diff by kubecode upstreams) until pinned again.

// Pins are the pinned declarations of every upstream's tools, as kubecode
// upstreams pin writes them.
type Pins struct {
	Upstreams map[string]*UpstreamPins `json:"upstreams"`
}

// UpstreamPins are one upstream's pinned tools.
type UpstreamPins struct {
	PinnedAt time.Time              `json:"pinnedAt"`
	Tools    map[string]*PinnedTool `json:"tools"`
}

// PinnedTool is one tool's declaration as pinned, and its fingerprint.
type PinnedTool struct {
	SHA256      string          `json:"sha256"`
	Declaration json.RawMessage `json:"declaration"`
	// Learnt is the result type learnt from the tool's answers that the
	// operator pinned with it (a tool that declares none): nil, none is
	// served.
	Learnt *catalog.Schema `json:"learnt,omitempty"`
}

// ReadPins reads a pins file; a missing file is no pins.
func ReadPins(path string) (*Pins, error) {
	p := &Pins{Upstreams: map[string]*UpstreamPins{}}
	if path == "" {
		return p, nil
	}
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pins: %w", err)
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("pins %s: %w (kubecode upstreams pin writes it afresh)", path, err)
	}
	if p.Upstreams == nil {
		p.Upstreams = map[string]*UpstreamPins{}
	}
	return p, nil
}

// Write writes the pins to path (through a temporary file, so a reader
// never sees half).
func (p *Pins) Write(path string) error { return writeJSONFile(path, p) }

// writeJSONFile writes v as indented JSON to path through a temporary
// file beside it, renamed into place: a reader never sees half.
func writeJSONFile(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// pinned returns the pin of an upstream's tool, or nil.
func (p *Pins) pinned(upstream, tool string) *PinnedTool {
	if p == nil || p.Upstreams[upstream] == nil {
		return nil
	}
	return p.Upstreams[upstream].Tools[tool]
}

// declaration is a tool's declaration as pinned: its JSON with sorted
// keys, without _meta (which carries no behaviour) — annotations
// included, so a read that turns into a write is noticed.
func declaration(t *mcp.Tool) (json.RawMessage, string, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, "", err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", err
	}
	delete(m, "_meta")
	canon, err := json.Marshal(m) // maps marshal with sorted keys
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(canon)
	return canon, hex.EncodeToString(sum[:]), nil
}

// declDiff says what moved between a pinned declaration and the current
// one, leaf by leaf ("annotations.readOnlyHint: true → false",
// "inputSchema.properties.note: (none) → {…}"), for a person: a change
// deep in a schema is named where it is. At most 40 lines.
func declDiff(pinned, now json.RawMessage) []string {
	var a, b any
	_ = json.Unmarshal(pinned, &a)
	_ = json.Unmarshal(now, &b)
	before, after := map[string]string{}, map[string]string{}
	flatten("", a, before, 0)
	flatten("", b, after, 0)
	var paths []string
	for p := range before {
		paths = append(paths, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []string
	for _, p := range paths {
		x, y := before[p], after[p]
		if x == y {
			continue
		}
		if len(out) == 40 {
			out = append(out, "… and more")
			break
		}
		out = append(out, fmt.Sprintf("%s: %s → %s", p, shown(json.RawMessage(x)), shown(json.RawMessage(y))))
	}
	return out
}

// flatten records v's leaves by dotted path (objects by key, lists by
// index) as JSON; an empty object or list is a leaf.
func flatten(path string, v any, out map[string]string, depth int) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 && depth < 32 {
			for k, e := range x {
				flatten(join(k), e, out, depth+1)
			}
			return
		}
	case []any:
		if len(x) > 0 && depth < 32 {
			for i, e := range x {
				flatten(join(strconv.Itoa(i)), e, out, depth+1)
			}
			return
		}
	}
	raw, _ := json.Marshal(v)
	out[path] = string(raw)
}

// shown is a JSON value as a diff line shows it: escaped so nothing hides,
// cut when long.
func shown(v json.RawMessage) string {
	if len(v) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for _, r := range string(v) {
		if hiddenRune(r) {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			b.WriteRune(r)
		}
	}
	s := b.String()
	if utf8.RuneCountInString(s) > 300 {
		s = string([]rune(s)[:299]) + "…"
	}
	return s
}

// Pin pins a tool's declaration; it reports whether that changed
// anything.
func (p *Pins) Pin(upstream, tool, sha string, decl json.RawMessage, now time.Time) bool {
	if p.Upstreams == nil {
		p.Upstreams = map[string]*UpstreamPins{}
	}
	up := p.Upstreams[upstream]
	if up == nil {
		up = &UpstreamPins{Tools: map[string]*PinnedTool{}}
		p.Upstreams[upstream] = up
	}
	if old := up.Tools[tool]; old != nil && old.SHA256 == sha {
		return false
	}
	up.Tools[tool] = &PinnedTool{SHA256: sha, Declaration: decl}
	up.PinnedAt = now.UTC()
	return true
}

// PinLearnt pins the result type learnt for a tool pinned with the
// fingerprint sha; it reports whether that changed anything.
func (p *Pins) PinLearnt(upstream, tool, sha string, learnt *catalog.Schema) bool {
	pin := p.pinned(upstream, tool)
	if pin == nil || pin.SHA256 != sha || learnt == nil || sameSchema(pin.Learnt, learnt) {
		return false
	}
	pin.Learnt = learnt
	p.Upstreams[upstream].PinnedAt = time.Now().UTC()
	return true
}

// Unpin forgets a tool's pin.
func (p *Pins) Unpin(upstream, tool string) {
	if up := p.Upstreams[upstream]; up != nil {
		delete(up.Tools, tool)
	}
}
