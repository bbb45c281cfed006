package bridge

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// A Plan is the changes one execution made as dry runs, to be approved.
// Plans are stateless: the token carries the plan, signed with the
// bridge's key, so any replica holding the key can check an approval.
type Plan struct {
	// ID names the plan in the ledger.
	ID string `json:"id"`
	// Expires is when the plan stops being approvable.
	Expires time.Time `json:"exp"`
	// Code is the SHA-256 of the script that made it: only the same script
	// can apply it.
	Code string `json:"code"`
	// Scope is the bridge's Scope (the cluster) when it was made.
	Scope string `json:"scope,omitempty"`
	// User is whom the changes were planned for (Session.SetCaller): only
	// the same user can approve them. Empty for the server's identity.
	User string `json:"user,omitempty"`
	// Record is where the plan's use is recorded (PlanUses.Where): a
	// server recording elsewhere refuses it, so that no two records let it
	// apply twice.
	Record string `json:"rec,omitempty"`
	// TwoPerson says why the plan needs two approvers (Policy.TwoPerson),
	// or is empty.
	TwoPerson string `json:"two,omitempty"`
	// NoSelf, when set, says why the user the plan acts for may not
	// approve it even where one approver suffices (a change that widens
	// access, planned for people: PeoplePlanPermissionWrites).
	NoSelf string `json:"noself,omitempty"`
	// Changes are the planned changes, in the order the script made them.
	Changes []PlanChange `json:"changes"`
}

// PlanChange is one planned change. Diff is shown to whoever approves but
// is not part of the token; the hash binds the exact arguments.
type PlanChange struct {
	Op     string   `json:"op"`
	Object string   `json:"object"`
	Hash   string   `json:"hash"`
	Diff   []string `json:"diff,omitempty"`
	// TwoPerson says why this change needs two approvers, if it does.
	TwoPerson string `json:"-"`
	// NoSelf says why this change's approver may not be the user the plan
	// acts for, if so.
	NoSelf string `json:"-"`
	// Call is the call's arguments as the ledger keeps them (values of
	// secret-looking keys elided; every value, for an object holding
	// secrets): the full object a reviewer may open.
	Call json.RawMessage `json:"-"`
	// Review lays the change out for the approval page.
	Review Review `json:"-"`
}

// codeHash names a script.
func codeHash(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:16])
}

// callHash binds an operation, its arguments and what the provider says
// it would send beyond them: the same call, with the same arguments in any
// key order, has the same hash.
func callHash(op string, args json.RawMessage, fingerprint string) string {
	var v any
	canonical := []byte(args)
	if json.Unmarshal(args, &v) == nil {
		if b, err := json.Marshal(v); err == nil { // maps marshal with sorted keys
			canonical = b
		}
	}
	h := sha256.New()
	h.Write([]byte(op))
	h.Write([]byte{0})
	h.Write(canonical)
	h.Write([]byte{0})
	h.Write([]byte(fingerprint))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// NewPlan returns the plan of a session's planned changes for code, or nil
// when it planned none or the policy refused any of its changes.
func (b *Bridge) NewPlan(s *Session, code string) *Plan {
	changes := s.Planned()
	if len(changes) == 0 || s.Refused() != "" {
		return nil // a script the policy refused in part is not approvable
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	p := &Plan{ID: "plan-" + hex.EncodeToString(id), Expires: b.opts.Now().Add(time.Duration(b.policy.PlanTTL)).UTC().Truncate(time.Second),
		Code: codeHash(code), Scope: b.scope, User: s.user(), Record: b.uses.Where(), Changes: changes}
	for _, c := range changes {
		if c.TwoPerson != "" && p.TwoPerson == "" {
			p.TwoPerson = c.TwoPerson
		}
		if c.NoSelf != "" && p.NoSelf == "" {
			p.NoSelf = c.NoSelf
		}
	}
	return p
}

// Sign returns the plan's token.
func (b *Bridge) Sign(p *Plan) string {
	bare := *p
	bare.Changes = make([]PlanChange, len(p.Changes))
	for i, c := range p.Changes {
		bare.Changes[i] = PlanChange{Op: c.Op, Object: c.Object, Hash: c.Hash}
	}
	payload, _ := json.Marshal(bare)
	enc := base64.RawURLEncoding.EncodeToString(payload)
	return enc + "." + base64.RawURLEncoding.EncodeToString(b.mac(enc))
}

func (b *Bridge) mac(s string) []byte {
	m := hmac.New(sha256.New, b.planKey)
	m.Write([]byte("kubecode-plan-v1\x00" + s))
	return m.Sum(nil)
}

// ErrPlan is the class of errors of approvals that cannot be used.
var ErrPlan = errors.New("approval refused")

// Open checks an approval token against the script it is to apply and
// returns its plan.
func (b *Bridge) Open(token, code string) (*Plan, error) {
	enc, sig, ok := strings.Cut(strings.TrimSpace(token), ".")
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(raw, b.mac(enc)) {
		return nil, fmt.Errorf("%w: the token is not one this server signed (copy it whole from the plan; plans from another server need its planKey)", ErrPlan)
	}
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed token", ErrPlan)
	}
	var p Plan
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("%w: malformed token", ErrPlan)
	}
	if now := b.opts.Now(); now.After(p.Expires) {
		return nil, fmt.Errorf("%w: plan %s expired at %s: run the script again without approve for a new plan", ErrPlan, p.ID, p.Expires.Format(time.RFC3339))
	}
	if p.Scope != b.scope {
		return nil, fmt.Errorf("%w: plan %s was made for %s, not %s", ErrPlan, p.ID, orNone(p.Scope), orNone(b.scope))
	}
	if p.Record != b.uses.Where() {
		return nil, fmt.Errorf("%w: plan %s records its use in %s, this server in %s: approve it on a server sharing its record (the same cluster and --plans-namespace)", ErrPlan, p.ID, orProcess(p.Record), orProcess(b.uses.Where()))
	}
	if p.Code != codeHash(code) {
		return nil, fmt.Errorf("%w: plan %s was made by another script: send exactly the code that made it", ErrPlan, p.ID)
	}
	return &p, nil
}

// PlanUses records which plans were used: an approved plan applies once,
// however often or however many replicas its token reaches.
type PlanUses interface {
	// Where names the record ("" for one in a process's memory); plans
	// made under one record are refused under another.
	Where() string
	// Use records plan id as used, to be remembered until expires (when
	// the plan can no longer be approved anyway). It returns false when
	// the plan was used already, here or by another process sharing the
	// record.
	Use(ctx context.Context, id string, expires time.Time) (first bool, err error)
}

// memoryUses is a record of used plans in this process's memory.
type memoryUses struct {
	now  func() time.Time
	mu   sync.Mutex
	used map[string]time.Time // id → expiry
}

func (m *memoryUses) Where() string { return "" }

func (m *memoryUses) Use(_ context.Context, id string, expires time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for k, exp := range m.used {
		if now.After(exp) {
			delete(m.used, k)
		}
	}
	if _, ok := m.used[id]; ok {
		return false, nil
	}
	m.used[id] = expires
	return true, nil
}

// Use records that p is being applied, as its first change is about to
// be made: a plan applies once, so a second use — a replay of its token, a
// parallel approval, another replica — is refused (an error wrapping
// ErrPlan).
func (b *Bridge) Use(ctx context.Context, p *Plan) error {
	first, err := b.uses.Use(ctx, p.ID, p.Expires)
	if err != nil {
		return fmt.Errorf("%w: plan %s: could not record its use (%v); try again", ErrPlan, p.ID, err)
	}
	if !first {
		return fmt.Errorf("%w: plan %s was already applied: a plan applies once; run the script again without approve for a new plan of what is left to change", ErrPlan, p.ID)
	}
	return nil
}

func orProcess(s string) string {
	if s == "" {
		return "its own process's memory"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "no particular cluster"
	}
	return s
}

// Seal signs payload for purpose with the plan key, so that any replica
// sharing the key can check it (Unseal); it is readable, not secret.
func (b *Bridge) Seal(purpose string, payload []byte) string {
	enc := base64.RawURLEncoding.EncodeToString(payload)
	return enc + "." + base64.RawURLEncoding.EncodeToString(b.sealMAC(purpose, enc))
}

// Unseal returns what Seal signed for purpose, or false.
func (b *Bridge) Unseal(purpose, sealed string) ([]byte, bool) {
	enc, sig, ok := strings.Cut(sealed, ".")
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(raw, b.sealMAC(purpose, enc)) {
		return nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	return payload, err == nil
}

func (b *Bridge) sealMAC(purpose, s string) []byte {
	m := hmac.New(sha256.New, b.planKey)
	m.Write([]byte("kubecode-seal-v1\x00" + purpose + "\x00" + s))
	return m.Sum(nil)
}
