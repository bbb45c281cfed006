package bridge

import (
	"encoding/json"
	"regexp"
	"time"

	"github.com/kubecode/kubecode/catalog"
)

// Entry is one call in the ledger.
type Entry struct {
	Trace string `json:"trace"`
	Seq   int    `json:"seq"`
	// AuditID is the Audit-ID the call's API requests carried: the
	// auditID of their lines in the API server's audit log.
	AuditID   string          `json:"auditID"`
	Time      time.Time       `json:"time"`
	Operation string          `json:"operation"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // values of secret-looking keys elided
	Outcome   string          `json:"outcome"`             // "ok", "error", "invalid", "unknown"
	Status    int             `json:"status,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Duration  time.Duration   `json:"durationNs"`
	Bytes     int             `json:"bytes"`

	// Changes only: what the call changed or would have, and what the
	// policy decided: "planned" (a dry run), "applied", "refused" (by
	// Rule), "diverged" (from the approved Plan) or "failed".
	Change   *catalog.Change `json:"change,omitempty"`
	Decision string          `json:"decision,omitempty"`
	Rule     string          `json:"rule,omitempty"`
	Passed   []string        `json:"passed,omitempty"` // rules checked and passed
	DryRun   bool            `json:"dryRun,omitempty"`
	Plan     string          `json:"plan,omitempty"` // the approved plan's id
}

// Ledger returns the calls made in this session so far, in order.
func (s *Session) Ledger() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.ledger...)
}

// record adds one call to the session's ledger and to the bridge's ledger
// writer: every call passes here exactly once, whatever its outcome.
func (s *Session) record(start time.Time, c *callInfo, rpcErr *RPCError, n int) {
	e := Entry{Trace: s.trace, Seq: c.seq, AuditID: c.id, Time: start, Operation: c.name, Arguments: elide(c.args),
		Outcome: "ok", Duration: s.b.opts.Now().Sub(start), Bytes: n,
		Change: c.change, Decision: c.decision, Rule: c.rule, Passed: c.passed, DryRun: c.dryRun, Plan: c.plan}
	if c.change != nil && c.change.Sensitive {
		e.Arguments = elideAll(c.args)
	}
	if rpcErr != nil {
		e.Outcome = "error"
		switch rpcErr.Code {
		case CodeInvalidParams:
			e.Outcome = "invalid"
			if rpcErr.Data != nil && rpcErr.Data.Reason == ReasonUnknownOperation {
				e.Outcome = "unknown"
			}
		}
		if rpcErr.Data != nil {
			e.Status, e.Reason = rpcErr.Data.Status, rpcErr.Data.Reason
		}
	}
	s.mu.Lock()
	s.ledger = append(s.ledger, e)
	s.mu.Unlock()
	if w := s.b.opts.Ledger; w != nil {
		line, _ := json.Marshal(e)
		s.b.ledgerMu.Lock()
		_, _ = w.Write(append(line, '\n'))
		s.b.ledgerMu.Unlock()
	}
}

// elideAll returns args with every string value elided but those naming
// the call's target: for changes to objects that hold secrets.
func elideAll(args json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return json.RawMessage(`"[elided]"`)
	}
	var walk func(key string, x any) any
	walk = func(key string, x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				t[k] = walk(k, val)
			}
		case []any:
			for i := range t {
				t[i] = walk(key, t[i])
			}
		case string:
			switch key {
			case "name", "namespace", "kind", "apiVersion", "op", "path", "type":
				return t
			}
			return "[elided]"
		}
		return x
	}
	b, err := json.Marshal(walk("", v))
	if err != nil {
		return json.RawMessage(`"[elided]"`)
	}
	return b
}

var secretKey = regexp.MustCompile(`(?i)(password|passwd|token|secret|credential|private.?key|^data$|^stringData$)`)

// elide returns args with the values of secret-looking keys replaced.
func elide(args json.RawMessage) json.RawMessage {
	var v any
	if len(args) == 0 || json.Unmarshal(args, &v) != nil {
		return args
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				if secretKey.MatchString(k) {
					t[k] = "[elided]"
				} else {
					t[k] = walk(val)
				}
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		}
		return x
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		return args
	}
	return b
}
