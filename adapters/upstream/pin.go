package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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
func (p *Pins) Write(path string) error {
	raw, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pins-*")
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
// one, field by field ("annotations: {…} → {…}"), for a person.
func declDiff(pinned, now json.RawMessage) []string {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal(pinned, &a)
	_ = json.Unmarshal(now, &b)
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		if string(a[k]) == string(b[k]) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s → %s", k, shown(a[k]), shown(b[k])))
	}
	return out
}

// shown is a JSON value as a diff line shows it: escaped so nothing hides,
// cut when long.
func shown(v json.RawMessage) string {
	if len(v) == 0 {
		return "(none)"
	}
	s := strings.Map(func(r rune) rune {
		if hiddenRune(r) {
			return '�'
		}
		return r
	}, string(v))
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

// Unpin forgets a tool's pin.
func (p *Pins) Unpin(upstream, tool string) {
	if up := p.Upstreams[upstream]; up != nil {
		delete(up.Tools, tool)
	}
}
