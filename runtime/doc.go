// Package runtime runs an agent's TypeScript in a fresh, bounded JavaScript
// sandbox.
//
// The script is transpiled with esbuild and executed by goja. Host operations
// (plain JSON in, plain JSON out) appear to the script as async functions on
// the global tools object; the runtime knows nothing of what they do.
package runtime
