// Package tstest checks in tests that generated TypeScript is valid: the
// declarations kubecode shows the model must parse. Only tests import it.
//
//	tstest.Parse(t, catalog.Declarations(ops))
package tstest
