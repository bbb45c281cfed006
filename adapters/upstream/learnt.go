package upstream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kubecode/kubecode/catalog"
)

// A result type learnt from a tool's answers carries the answers' keys,
// and answers are data: one caller's (a tenant's names, a key an upstream
// chose to plant). Declarations are read by every session, so what is
// learnt is not served until an operator pins it as they pin the tool
// itself. The server keeps what it learnt in a file beside the pins
// (LearntPath); kubecode upstreams shows it, and kubecode upstreams pin
// copies it into the pins, after which every session's declaration has it.

// Learnt is the learnt-types file: by upstream, by tool.
type Learnt struct {
	Upstreams map[string]map[string]*LearntType `json:"upstreams"`
}

// LearntType is the result type learnt for one tool's declaration.
type LearntType struct {
	// SHA256 is the fingerprint of the declaration whose answers taught it.
	SHA256 string          `json:"sha256"`
	Type   *catalog.Schema `json:"type"`
}

// LearntPath is the learnt-types file beside the pins file pins: the same
// name with ".learnt" before its extension; "" when pins is "".
func LearntPath(pins string) string {
	if pins == "" {
		return ""
	}
	ext := filepath.Ext(pins)
	return strings.TrimSuffix(pins, ext) + ".learnt" + ext
}

// ReadLearnt reads a learnt-types file; a missing or unreadable one is
// nothing learnt (it is the server's notebook, not configuration).
func ReadLearnt(path string) *Learnt {
	l := &Learnt{}
	if raw, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(raw, l)
	}
	if l.Upstreams == nil {
		l.Upstreams = map[string]map[string]*LearntType{}
	}
	return l
}

// of returns what was learnt for an upstream's tool with the declaration
// sha, or nil.
func (l *Learnt) of(upstream, tool, sha string) *catalog.Schema {
	if l == nil || l.Upstreams[upstream] == nil {
		return nil
	}
	if t := l.Upstreams[upstream][tool]; t != nil && t.SHA256 == sha {
		return t.Type
	}
	return nil
}

// learntMu keeps one process's upstreams from writing the file at once
// (replicas each keep their own notebook when the file is theirs; when
// it is shared, the last writer wins and learning goes on).
var learntMu sync.Mutex

// writeLearnt records type as learnt for an upstream's tool.
func writeLearnt(path, upstream, tool, sha string, typ *catalog.Schema) error {
	learntMu.Lock()
	defer learntMu.Unlock()
	l := ReadLearnt(path)
	if l.Upstreams[upstream] == nil {
		l.Upstreams[upstream] = map[string]*LearntType{}
	}
	l.Upstreams[upstream][tool] = &LearntType{SHA256: sha, Type: typ}
	return writeJSONFile(path, l)
}

// sameSchema says whether two schemas are one type.
func sameSchema(a, b *catalog.Schema) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
