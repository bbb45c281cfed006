package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ErrorKind classifies why an execution failed.
type ErrorKind string

// The kinds of execution errors.
const (
	// KindSyntax: the TypeScript did not parse or transpile.
	KindSyntax ErrorKind = "syntax"
	// KindRuntime: the script threw, or its result could not be returned.
	KindRuntime ErrorKind = "runtime"
	// KindTimeout: the script ran past its deadline.
	KindTimeout ErrorKind = "timeout"
	// KindLimit: the script exceeded a resource limit (host calls, stack depth, code size).
	KindLimit ErrorKind = "limit"
	// KindTool: a host operation failed and the script did not catch it.
	KindTool ErrorKind = "tool"
	// KindType: a type check before the run refused the script (set by
	// whoever checks; the runtime itself does not type-check).
	KindType ErrorKind = "type"
)

// Error describes a failed execution in terms of the agent's own TypeScript.
// Line and Column are 1-based positions in user.ts (zero when unknown).
type Error struct {
	Kind    ErrorKind       `json:"kind"`
	Name    string          `json:"name,omitempty"` // JavaScript error name, e.g. "TypeError"
	Message string          `json:"message"`
	Line    int             `json:"line,omitempty"`
	Column  int             `json:"column,omitempty"`
	Stack   []string        `json:"stack,omitempty"` // user frames only, innermost first: "fn (user.ts:3:7)"
	Tool    string          `json:"tool,omitempty"`  // the failing host operation, for KindTool
	Code    json.RawMessage `json:"code,omitempty"`  // the host's error code, e.g. 403
	Hint    string          `json:"hint,omitempty"`  // what to do about it
}

// Error formats the error as "user.ts:3:7: kind: Name: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "user.ts:%d:%d: ", e.Line, e.Column)
	}
	fmt.Fprintf(&b, "%s error: ", e.Kind)
	if e.Name != "" && e.Name != "Error" {
		b.WriteString(e.Name + ": ")
	}
	b.WriteString(e.Message)
	if e.Tool != "" {
		fmt.Fprintf(&b, " (tool %s", e.Tool)
		if len(e.Code) > 0 {
			fmt.Fprintf(&b, ", code %s", e.Code)
		}
		b.WriteString(")")
	}
	return b.String()
}

// CallError is the error a host operation returns to make the script see a
// structured failure: the script's catch block gets an Error whose name,
// message and code are these fields. Any other error a host returns becomes a
// CallError with Name "ToolError" and no code.
type CallError struct {
	Name    string          // JavaScript error name; zero means "ToolError"
	Message string          // human-readable message
	Code    json.RawMessage // JSON value, typically an HTTP status such as 403; nil means none
	Reason  string          // machine-readable reason, e.g. "Forbidden"; empty means none
}

func (e *CallError) Error() string {
	if len(e.Code) > 0 {
		return fmt.Sprintf("%s (code %s)", e.Message, e.Code)
	}
	return e.Message
}
