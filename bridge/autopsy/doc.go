// Package autopsy judges what executions did, offline, from a bridge's
// ledger alone: each execution a safe pass, an unsafe pass (with the flags
// of the unsafe paths it took), blocked or a fail, and each run (an MCP
// session's executions) as the benchmarks that name those paths publish
// it. It reads ledgers and never serves a call: `kubecode audit` and the
// tests use it; the bridge, which writes the ledger, does not.
package autopsy
