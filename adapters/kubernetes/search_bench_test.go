package kubernetes

import (
	"slices"
	"testing"
	"time"

	"github.com/kubecode/kubecode/catalog/search"
)

// The search goal: p50 ≤ 1 ms per query over a full-size catalog (every
// built-in resource with list, get and write verbs, about 290 operations).
func BenchmarkSearch(b *testing.B) {
	x, err := search.NewIndex(fixtureOperations(b, true), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var took []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := x.Search(searchCases[i%len(searchCases)].query, 8); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		i++
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}

// Rebuilding the index when a CRD appears must be cheap.
func BenchmarkNewIndex(b *testing.B) {
	ops := fixtureOperations(b, true)
	b.ReportMetric(float64(len(ops)), "ops")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := search.NewIndex(ops, nil); err != nil {
			b.Fatal(err)
		}
	}
}
