package catalog

import (
	"encoding/json"
	"errors"
)

// A Snapshot is an object as a revert needs it: what it was before a
// change, or after. It holds no Secret value: a Secret's snapshot says
// only whether it existed, and its UID.
type Snapshot struct {
	// Op is an operation of the object's resource: its provider reads and
	// restores the object.
	Op        string `json:"op"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Exists    bool   `json:"exists"`
	UID       string `json:"uid,omitempty"`
	// Content is what a revert restores (no status, no server-set
	// metadata); nil for a Secret.
	Content json.RawMessage `json:"content,omitempty"`
}

// Object names the object: "Deployment shop/web".
func (s *Snapshot) Object() string {
	c := Change{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}
	return c.Object()
}

// ErrNothingToRevert is what a restore answers for an object already as
// it was before.
var ErrNothingToRevert = errors.New("nothing to revert")

// ErrIrreversible marks a change no revert can undo (a command run in a
// container, an eviction, an upstream tool call without an inverse):
// Irreversible wraps it with why, and no seat offers an undo of it.
var ErrIrreversible = errors.New("cannot be undone")

// Irreversible is an error, errors.Is ErrIrreversible, that says why a
// change cannot be undone ("the command run in Pod shop/web-1 is not
// undone: ...").
func Irreversible(why string) error { return irreversible(why) }

type irreversible string

func (e irreversible) Error() string        { return string(e) }
func (e irreversible) Is(target error) bool { return target == ErrIrreversible }
