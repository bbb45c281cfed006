// Package secrets is kubecode's one secret boundary: a registry of the
// values the server knows are secret, kept current by whoever learns them
// (the Kubernetes adapter's watch of Secrets, the credentials kubecode
// holds for clusters and upstream MCP servers, Helm releases' secret
// values), and the filter every result passes before it reaches a script.
//
// Each value is registered in the forms a text may carry it in: raw and
// trimmed, base64 (standard and URL-safe, padded or not, and its inner
// groups at any offset in a longer text), hex, JSON- and URL-escaped, and
// for a value of several lines each line and each key=value's value. The
// filter finds every form at once with an anchored multi-pattern matcher:
// a bitset of the forms' first six bytes skips all text that starts none,
// so a scan costs the same for ten values as for ten thousand.
//
// The bridge applies it to every result, error, plan line and ledger line
// (bridge.Options.Secrets); the providers feed it. It sits beside the
// catalog, below both, because both use it: an adapter may not import the
// bridge.
//
// What it cannot catch: a value a command or a program transforms in a way
// not listed (reversed, one character a line, encrypted), values shorter
// than MinValue, and values it was never told (a Secret the server may not
// read). Those need a guard before the read: an exec read in a container
// that holds a Secret is planned, not run (package bridge).
package secrets
