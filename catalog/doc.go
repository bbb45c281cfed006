// Package catalog describes the operations an agent can call and renders
// them as the TypeScript declarations the model reads.
//
// An Operation is a provider-neutral descriptor: adapters produce them, the
// bridge validates calls against their Input schema, search (package
// catalog/search) finds them for a question, and the broker shows their
// declarations to the model. What an adapter knows of its own domain (the
// words that lead to an operation, the fields of a result that matter, the
// types every result shares) travels on the descriptors as Hints and named
// Schemas; this package applies generic mechanisms to them and holds no
// provider's vocabulary.
//
//	d := catalog.NewDeclarer(nil)          // one per catalog version
//	text := d.Declarations(ops[:2])      // declare const tools: { ... }; interface ...
package catalog
