// Package examples holds kubecode's example scripts, runbooks
// (runbooks/*.ts: serve them with --runbooks examples/runbooks) and
// charts. The
// scripts of the MCP prompts (prompts/*.ts) are embedded for the server:
// each begins with the line "const args = { ... }" naming the prompt's
// arguments, which the server replaces with the values asked for.
package examples
