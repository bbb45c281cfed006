package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
)

// Entry is one call in the ledger.
type Entry struct {
	Trace string `json:"trace"`
	Seq   int    `json:"seq"`
	// Run is the run (an MCP session) the execution belongs to; empty
	// when unknown.
	Run string `json:"run,omitempty"`
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
	// Rule), "diverged" (from the approved Plan), "failed", or
	// DecisionUnchanged (a dry run that changes nothing, not planned).
	Change   *catalog.Change `json:"change,omitempty"`
	Decision string          `json:"decision,omitempty"`
	Rule     string          `json:"rule,omitempty"`
	Passed   []string        `json:"passed,omitempty"` // rules checked and passed
	DryRun   bool            `json:"dryRun,omitempty"`
	Plan     string          `json:"plan,omitempty"` // the approved plan's id
	// ApprovedBy is who approved the plan and how: people with their
	// channel and time ("alice (page, …)"), or "the agent".
	ApprovedBy string `json:"approvedBy,omitempty"`
	// ExitCode is the exit code of the command the call ran
	// (Annotations.Command); its output is never kept.
	ExitCode *int `json:"exitCode,omitempty"`
	// Hidden names what the secret boundary took out of the call's result
	// or error ("Secret shop/db key password (base64)", "upstream files
	// header Authorization"), never a value: a provider that returned a
	// known secret, for the operator to look into.
	Hidden []string `json:"hidden,omitempty"`
	// Runbook names the runbook run the call belongs to: the runbook, its
	// version, its parameters and the standard change that allowed it.
	Runbook *RunbookRun `json:"runbook,omitempty"`
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
	e := Entry{Trace: s.trace, Run: s.run, Seq: c.seq, AuditID: c.id, User: s.user(), Cluster: cluster, Time: start, Operation: c.name, Arguments: elide(c.args, c.secretArgs),
		Outcome: "ok", Duration: s.b.opts.Now().Sub(start), Bytes: n,
		Change: c.change, Decision: c.decision, Rule: c.rule, Passed: c.passed, DryRun: c.dryRun, Plan: c.plan, ApprovedBy: c.approvedBy, ExitCode: c.exitCode,
		Hidden: slices.Compact(slices.Sorted(slices.Values(c.hidden))), Runbook: s.runbookRun()}
	if e.Runbook != nil { // its parameters as the ledger keeps any argument
		r := *e.Runbook
		r.Params = elide(r.Params, nil)
		e.Runbook = &r
	}
	if c.sensitive || c.change != nil && (c.change.Sensitive || slices.ContainsFunc(c.change.Objects, func(o catalog.Change) bool { return o.Sensitive })) {
		e.Arguments = elideAll(c.args, c.targetArgs)
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
		line, _ = s.b.secrets.ScrubJSON(line) // a change's fields, an argument
		s.b.ledgerMu.Lock()
		_, _ = w.Write(append(line, '\n'))
		s.b.ledgerMu.Unlock()
	}
	if f := s.b.opts.Observe; f != nil {
		f(ctx, &e)
	}
}

// elideAll returns args with every value elided but those naming the
// call's target (targets: the operation's TargetArgs): for calls that may
// carry secret values.
func elideAll(args json.RawMessage, targets []catalog.Path) json.RawMessage {
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
			if slices.ContainsFunc(targets, func(t catalog.Path) bool { return slices.Equal(t, path) }) {
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

// secretKeys matches the keys whose values a record hides: secret-looking
// names (catalog.SecretName), and the operation's SecretArgs (its
// provider's keys of secret data, such as a Kubernetes object's data).
func secretKeys(args []string) func(string) bool {
	return func(k string) bool { return catalog.SecretName.MatchString(k) || slices.Contains(args, k) }
}

// elide returns args with secret-looking values replaced, whatever shape
// carries them: the value of a secret-looking key ({"apiToken": …}), of
// an entry whose name is secret-looking ({name: "API_TOKEN", value: …},
// {key: "password", value: …}, as env vars and parameters are written), of
// a JSON patch whose path names a secret-looking field or an env entry's
// value, a NAME=value or --name=value string with a secret-looking name,
// and the string after a secret-looking flag in an argument list
// (["--password", …]).
func elide(args json.RawMessage, secretArgs []string) json.RawMessage {
	var v any
	if len(args) == 0 || json.Unmarshal(args, &v) != nil {
		return args
	}
	b, err := json.Marshal(elideKeys(v, nil, secretKeys(secretArgs)))
	if err != nil {
		return args
	}
	return b
}

const elided = "[elided]"

// elideValue elides x's secret-looking values in place, calling found (if
// not nil) with each string it elides, nested ones included.
func elideValue(x any, found func(string), secretArgs []string) any {
	return elideKeys(x, found, secretKeys(secretArgs))
}

// elideKeys is elideValue with keys matches as the secret-looking keys.
func elideKeys(x any, found func(string), secret func(string) bool) any {
	switch t := x.(type) {
	case map[string]any:
		path, _ := t["path"].(string) // a JSON patch operation
		named := secretEntry(t)
		for k, val := range t {
			switch {
			case secret(k),
				k == "value" && (secretPath(path, secret) || envValuePath.MatchString(path)),
				named && entryValue(k):
				if val != nil {
					strs(val, found)
					t[k] = elided
				}
			default:
				t[k] = elideKeys(val, found, secret)
			}
		}
	case []any:
		for i := range t {
			if v, ok := t[i].(string); ok && i > 0 && secretFlag(t[i-1]) {
				strs(v, found)
				t[i] = elided
				continue
			}
			t[i] = elideKeys(t[i], found, secret)
		}
	case string:
		return elideAssignment(t, found)
	}
	return x
}

// strs calls found with every string in x.
func strs(x any, found func(string)) {
	if found == nil {
		return
	}
	switch t := x.(type) {
	case map[string]any:
		for _, v := range t {
			strs(v, found)
		}
	case []any:
		for _, v := range t {
			strs(v, found)
		}
	case string:
		found(t)
	}
}

// secretFlag says whether x is a command-line flag with a secret-looking
// name and no value of its own ("--password"), so the next argument is.
func secretFlag(x any) bool {
	flag, ok := x.(string)
	return ok && strings.HasPrefix(flag, "-") && !strings.Contains(flag, "=") && catalog.SecretName.MatchString(flag)
}

// secretEntry says whether m is a named entry (an env var, a parameter, a
// Helm --set) whose name looks secret.
func secretEntry(m map[string]any) bool {
	for _, k := range []string{"name", "key", "Name", "Key", "parameterKey", "variable"} {
		if s, ok := m[k].(string); ok && catalog.SecretName.MatchString(s) {
			return true
		}
	}
	return false
}

// entryValue says whether k carries a named entry's value.
func entryValue(k string) bool {
	switch k {
	case "value", "Value", "parameterValue", "default", "defaultValue":
		return true
	}
	return false
}

// envValuePath matches a JSON patch path to an env entry's value, whose
// name the path does not say.
var envValuePath = regexp.MustCompile(`/env/[^/]+/value$`)

// assignment matches "NAME=value", "--name=value" and "name: value".
var assignment = regexp.MustCompile(`^(-{0,2}[A-Za-z0-9_.\-]+)(=|: ?)(.+)$`)

// elideAssignment elides the value of a NAME=value string whose name looks
// secret.
func elideAssignment(s string, found func(string)) string {
	m := assignment.FindStringSubmatch(s)
	if m == nil || !catalog.SecretName.MatchString(m[1]) {
		return s
	}
	strs(m[3], found)
	return m[1] + m[2] + elided
}

// elideForReview returns a change's arguments as its reviewer sees them:
// values of secret-looking names hidden, but the data of objects that hold
// no secrets (a ConfigMap's) shown, since a person approves it.
func elideForReview(args json.RawMessage) json.RawMessage {
	var v any
	if len(args) == 0 || json.Unmarshal(args, &v) != nil {
		return args
	}
	b, err := json.Marshal(elideKeys(v, nil, catalog.SecretName.MatchString))
	if err != nil {
		return json.RawMessage(`"[elided]"`)
	}
	return b
}

// DecisionUnchanged is the decision on a change the dry run shows leaves
// its object as it was: not planned, no one asked.
const DecisionUnchanged = "unchanged"

// DecisionRead is Entry.Decision of a call of a change-class operation
// that the policy counts as a read (ExecReads, by Rule): run without a
// plan.
const DecisionRead = "read"

// DecisionRan is the decision of a call that runs a runbook: its own
// calls are judged one by one.
const DecisionRan = "ran"

// Operations of the ledger's decision lines: a person's decision on a
// plan, recorded as it is made (Bridge.Decide).
const (
	OpApprovePlan = "plan.approve"
	OpDenyPlan    = "plan.deny"
)

// Decisions returns the ledger's decision lines: who approved or denied
// which plan, approved or revoked which standard change, how and when.
func Decisions(entries []Entry) []Entry {
	var out []Entry
	for _, e := range entries {
		if e.Operation == OpApprovePlan || e.Operation == OpDenyPlan || e.Operation == OpApproveStandard || e.Operation == OpRevokeStandard {
			out = append(out, e)
		}
	}
	return out
}

// ReadLedger reads a ledger's JSON lines.
func ReadLedger(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("ledger line %d: %w", n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
