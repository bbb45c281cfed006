// Package upstream makes other MCP servers providers of kubecode
// operations: each upstream an operator declares (--upstreams FILE: a stdio
// command or a streamable HTTP URL, credentials the bridge alone reads)
// serves its pinned tools as tools.<upstream>.<tool>, typed from their JSON
// Schemas, found by search, and called through the bridge like any other
// operation.
//
// The gate is the same: a tool is a read only if the operator trusts the
// server's annotations and it says readOnlyHint, or the operator says so
// per tool; every other call is a change, planned in plan mode (the plan
// shows the upstream, the tool and the exact arguments), made once on a
// person's approval, refused in read-only mode, recorded in the ledger.
//
// A tool is served only as an operator pinned it (kubecode upstreams pin):
// a new tool, or one whose declaration (description, schemas, annotations)
// moved, is quarantined until pinned again. Descriptions are cleaned of
// hidden characters and instructions to the model before they reach the
// declarations or the index. Each upstream's calls are bounded (slots,
// timeout within the execution's deadline, a circuit breaker, result
// size): a hung or crashing upstream fails its own calls and nothing else.
package upstream
