// Package layout holds the repository's layout (README: Architecture) as
// a test: which packages may depend on which. It has no code; go test
// ./internal/layout fails when an import breaks a rule.
package layout
