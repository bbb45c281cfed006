// Package catalog describes the operations an agent can call and finds them
// for a natural-language query.
//
// An Operation is a provider-neutral descriptor: adapters (Kubernetes, Helm)
// produce them, the bridge validates calls against their Input schema, and
// the broker shows their TypeScript declarations to the model. An Index is a
// Bleve full-text index over a set of operations.
//
//	idx, err := catalog.NewIndex(ops, nil)
//	hits, err := idx.Search("why is my pod crashing", 8)
//	text := catalog.Declarations([]*catalog.Operation{hits[0].Op})
package catalog
