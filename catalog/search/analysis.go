package search

import (
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// Question analysis beyond what Bleve's analyzers do: words run together,
// and which operations' verbs a question asks for.

// joined returns the question's adjacent words run together, for names
// written as one word: "service accounts" → serviceaccounts.
func joined(ws []string) []string {
	var out []string
	for n := 2; n <= 3; n++ {
		for i := 0; i+n <= len(ws); i++ {
			out = append(out, strings.Join(ws[i:i+n], ""))
		}
	}
	return out
}

// asksVerb reports whether a question (its words, as a set) asks for op's
// verb: by name, or by one of the words its adapter lists for it.
func asksVerb(op *catalog.Operation, ws map[string]bool) bool {
	if ws[op.Verb] {
		return true
	}
	return op.Hints != nil && slices.ContainsFunc(op.Hints.VerbWords, func(w string) bool { return ws[w] })
}

// verbWeight scales an operation's score by its verb. Unless the question
// asks for the verb, lists come first (the usual first step of an
// investigation), then other reads, and operations that change something
// last.
func verbWeight(op *catalog.Operation, ws map[string]bool) float64 {
	if h := op.Hints; h != nil && h.Weight > 0 && !asksVerb(op, ws) {
		return h.Weight * verbOnly(op, ws)
	}
	return verbOnly(op, ws)
}

func verbOnly(op *catalog.Operation, ws map[string]bool) float64 {
	switch {
	case asksVerb(op, ws):
		return 1
	case op.Verb == "list":
		return 1
	case op.Annotations.ReadOnly:
		return 0.8
	default:
		return 0.45
	}
}
