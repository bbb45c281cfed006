package broker_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/internal/tokencount"
)

// Search answers are what code mode pays for on every question: the
// default answer to the query table stays within p50 ≤ 450 and p95 ≤ 800
// o200k_base tokens, and an answer asked for by name stays complete.

func TestSearchAnswerTokens(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	var counts []int
	var table strings.Builder
	fmt.Fprintf(&table, "%-36s %6s  %s\n", "query", "tokens", "operations (full declarations first)")
	for _, q := range searchQueries {
		text, isErr := callText(t, cs, "search_tools", map[string]any{"query": q.query})
		if isErr {
			t.Fatalf("%q: %s", q.query, text)
		}
		n := tokencount.Count(text)
		counts = append(counts, n)
		fmt.Fprintf(&table, "%-36s %6d  %s\n", q.query, n, strings.Join(declaredOps(text), " "))
	}
	slices.Sort(counts)
	p50, p95 := counts[len(counts)/2], counts[(len(counts)*95+99)/100-1]
	t.Logf("search_tools answers, o200k_base tokens (p50 %d, p95 %d, max %d):\n%s", p50, p95, counts[len(counts)-1], table.String())
	if p50 > 450 || p95 > 800 {
		t.Errorf("answers cost p50 %d and p95 %d tokens; the budget is 450 and 800", p50, p95)
	}
}

// TestSearchByName: an operation's name, or its result type's, answers with
// that one declaration, complete enough to write any script with it.
func TestSearchByName(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	for _, tc := range []struct {
		query string
		op    string
		has   []string // fragments the declaration must hold
	}{
		{"kubernetes.pods.get", "kubernetes.pods.get", []string{"interface Pod ", "livenessProbe", "readinessProbe", "env", "ports", "securityContext", "containerStatuses", "restartCount"}},
		{"Pod", "kubernetes.pods.get", []string{"interface Pod ", "livenessProbe", "securityContext"}},
		{"pods.list", "kubernetes.pods.list", []string{"Promise<Pod[]>", "interface Pod "}},
		{"Deployment", "kubernetes.deployments.get", []string{"interface Deployment ", "replicas", "strategy", "availableReplicas"}},
		{"tools.kubernetes.po.logs", "kubernetes.pods.logs", []string{"previous?: boolean", "Promise<string>"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			text, isErr := callText(t, cs, "search_tools", map[string]any{"query": tc.query})
			if isErr {
				t.Fatalf("%q: %s", tc.query, text)
			}
			if got := declaredOps(text); !slices.Equal(got, []string{tc.op}) {
				t.Errorf("%q declares %v, want only %s", tc.query, got, tc.op)
			}
			for _, h := range tc.has {
				if !strings.Contains(text, h) {
					t.Errorf("%q: the declaration lacks %q", tc.query, h)
				}
			}
			t.Logf("%q: %d tokens", tc.query, tokencount.Count(text))
		})
	}
}
