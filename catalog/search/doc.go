// Package search finds catalog operations for a natural-language question
// with a Bleve full-text index. It is kept apart from package catalog so
// that what needs only descriptors (the bridge, the adapters) does not link
// Bleve.
//
// The index weighs an operation's subject (resource, kind, short names)
// over its verb, keywords and prose, and applies the adapters' Hints:
// intent words that lead to an operation without naming it, and words that
// ask for its verb.
//
//	idx, err := search.NewIndex(ops, nil)
//	hits, err := idx.Search("which orders never shipped", 8)
//	text := catalog.Declarations([]*catalog.Operation{hits[0].Op})
package search
