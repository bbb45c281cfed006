package bridge

import (
	"context"
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
	AuditID string `json:"auditID"`
	// User is whom the call was made for (Session.SetCaller); empty for
	// the server's own identity. Never a credential.
	User string `json:"user,omitempty"`
	// Cluster is the cluster called, when the bridge serves several.
	Cluster   string          `json:"cluster,omitempty"`
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
func (s *Session) record(ctx context.Context, start time.Time, c *callInfo, rpcErr *RPCError, n int) {
	cluster := ""
	if c.cluster != nil && s.b.multi() {
		cluster = c.cluster.name
	}
	e := Entry{Trace: s.trace, Seq: c.seq, AuditID: c.id, User: s.user(), Cluster: cluster, Time: start, Operation: c.name, Arguments: elide(c.args),
		Outcome: "ok", Duration: s.b.opts.Now().Sub(start), Bytes: n,
		Change: c.change, Decision: c.decision, Rule: c.rule, Passed: c.passed, DryRun: c.dryRun, Plan: c.plan}
	if c.sensitive || c.change != nil && c.change.Sensitive {
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
	if f := s.b.opts.Observe; f != nil {
		f(ctx, &e)
	}
}

// elideAll returns args with every value elided but those naming the
// call's target (name, namespace and kind at the top or in metadata, a
// JSON patch's op and path): for calls that may carry secret values.
func elideAll(args json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return json.RawMessage(`"[elided]"`)
	}
	var walk func(x any, path []string) any
	walk = func(x any, path []string) any {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				t[k] = walk(val, append(path, k))
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i], append(path, "[]"))
			}
		case nil, bool:
			return x
		default:
			if identity(path) {
				return x
			}
			return "[elided]"
		}
		return x
	}
	b, err := json.Marshal(walk(v, nil))
	if err != nil {
		return json.RawMessage(`"[elided]"`)
	}
	return b
}

// identity says whether the argument at path names the target of a call
// rather than carrying a value.
func identity(path []string) bool {
	key := path[len(path)-1]
	if len(path) == 3 && path[0] == "patch" && path[1] == "[]" {
		return key == "op" || key == "path" // a JSON patch operation's
	}
	switch len(path) {
	case 1: // name, namespace, type of the call
		return key == "name" || key == "namespace" || key == "type" || key == "propagationPolicy"
	case 2: // object.kind, manifest.apiVersion
		return key == "kind" || key == "apiVersion"
	case 3: // object.metadata.name
		return path[1] == "metadata" && (key == "name" || key == "namespace" || key == "generateName")
	}
	return false
}

// secretKey matches the keys whose values a record hides: secret-looking
// names, and the data of objects that hold secrets.
var secretKey = regexp.MustCompile(catalog.SecretName.String() + `|^data$|^stringData$`)

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
			path, _ := t["path"].(string) // a JSON patch operation
			for k, val := range t {
				if secretKey.MatchString(k) || k == "value" && secretPath(path) {
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
