package broker_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/internal/tokencount"
)

// Search answers are what code mode pays for on every question: the
// default answer to the query table stays within p50 ≤ 250 and p95 ≤ 500
// o200k_base tokens, and an answer asked for by name stays complete.

func TestSearchAnswerTokens(t *testing.T) {
	b := newBroker(t, cp.Admin)
	var counts []int
	var table strings.Builder
	fmt.Fprintf(&table, "%-36s %6s  %s\n", "query", "tokens", "operations (full declarations first)")
	for _, q := range searchQueries {
		// Each the first question of its session: nothing sent before.
		text, isErr := callText(t, connect(t, b), "search_tools", map[string]any{"query": q.query})
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
	if p50 > 250 || p95 > 500 {
		t.Errorf("answers cost p50 %d and p95 %d tokens; the budget is 250 and 500", p50, p95)
	}
}

// TestSearchByName: an operation's name, or its result type's, answers with
// that one declaration, complete enough to write any script with it.
func TestSearchByName(t *testing.T) {
	b := newBroker(t, cp.Admin)
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
			text, isErr := callText(t, connect(t, b), "search_tools", map[string]any{"query": tc.query})
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

// TestSearchSessionAware: what a session's answers declared is referred
// to in its later answers, not repeated; another session gets it whole.
func TestSearchSessionAware(t *testing.T) {
	b := newBroker(t, cp.Admin)
	cs := connect(t, b)
	first, _ := callText(t, cs, "search_tools", map[string]any{"query": "why is my pod crashing"})
	second, _ := callText(t, cs, "search_tools", map[string]any{"query": "which pods restarted"})
	if !strings.Contains(first, "tools.kubernetes.pods.list(") || !strings.Contains(first, "interface Pod ") {
		t.Fatalf("first answer lacks pods.list or Pod:\n%s", first)
	}
	for _, want := range []string{"// Declared earlier in this session: ", "tools.kubernetes.pods.list", "Pod"} {
		if !strings.Contains(second, want) {
			t.Errorf("second answer lacks %q:\n%s", want, second)
		}
	}
	for _, repeated := range []string{"tools.kubernetes.pods.list(", "interface Pod "} {
		if strings.Contains(second, repeated) {
			t.Errorf("second answer repeats %q:\n%s", repeated, second)
		}
	}
	other, _ := callText(t, connect(t, b), "search_tools", map[string]any{"query": "which pods restarted"})
	if !strings.Contains(other, "tools.kubernetes.pods.list(") {
		t.Errorf("another session's answer refers to what it was never sent:\n%s", other)
	}
	byName, _ := callText(t, cs, "search_tools", map[string]any{"query": "Deployment"})
	again, _ := callText(t, cs, "search_tools", map[string]any{"query": "kubernetes.deployments.get"})
	if !strings.Contains(byName, "interface Deployment ") || !strings.Contains(again, "declared in full earlier in this session") {
		t.Errorf("a declaration asked for twice by name:\n%s\n---\n%s", byName, again)
	}
	t.Logf("tokens: first %d, the same operations again %d, another session %d; by name %d, again %d",
		tokencount.Count(first), tokencount.Count(second), tokencount.Count(other), tokencount.Count(byName), tokencount.Count(again))
}

// TestSearchShowsEachOnce: an answer shows an operation's signature when
// it adds to what the answer already shows — a subject the question names,
// a word of it — and only names the others, however well they score.
func TestSearchShowsEachOnce(t *testing.T) {
	b := newBroker(t, cp.Admin)
	for _, tc := range []struct {
		query       string
		whole, only []string // shown with their signatures; named only
	}{
		{"Which Secrets does each deployment reference, and which of them do not exist? Do not reveal any value.",
			[]string{"kubernetes.secrets.list", "kubernetes.deployments.list"},
			[]string{"kubernetes.deployments.rollout.history", "kubernetes.secrets.get"}},
		{"list deployments", []string{"kubernetes.deployments.list"}, []string{"kubernetes.deployments.rollout.history", "kubernetes.deployments.rollout.status"}},
		{"why is my pod crashing", []string{"kubernetes.pods.logs", "kubernetes.pods.list"}, []string{"kubernetes.events.list"}},
		{"pod logs", []string{"kubernetes.pods.logs"}, []string{"kubernetes.nodes.logs"}},
		{"events for a pod", []string{"kubernetes.events.list", "kubernetes.pods.list"}, []string{"kubernetes.events_events_k8s_io.list"}},
		{"which services have no endpoints", []string{"kubernetes.endpoints.list", "kubernetes.services.list"}, []string{"kubernetes.endpointslices.list"}},
		{"secrets in a namespace", []string{"kubernetes.secrets.list"}, []string{"kubernetes.namespaces.list"}},
		{"which service accounts can read secrets", []string{"kubernetes.serviceaccounts.list"}, nil},
		{"what is using the most memory", []string{"kubernetes.nodes.top", "kubernetes.pods.top"}, nil},
		{"rollback a release", []string{"helm.rollback"}, nil}, // HelmChange holds a HelmRelease, as helm.list returns
	} {
		t.Run(tc.query, func(t *testing.T) {
			text, isErr := callText(t, connect(t, b), "search_tools", map[string]any{"query": tc.query})
			if isErr {
				t.Fatal(text)
			}
			var whole, named []string
			types := map[string]bool{}
			for _, line := range strings.Split(text, "\n") {
				if n, ok := strings.CutPrefix(line, "interface "); ok {
					n, _, _ = strings.Cut(n, " ")
					if types[n] {
						t.Errorf("%s is declared twice:\n%s", n, text)
					}
					types[n] = true
				}
				if n, ok := strings.CutPrefix(line, "tools."); ok {
					n, _, _ = strings.Cut(n, "(")
					whole = append(whole, n)
				}
				if l, ok := strings.CutPrefix(line, "// Also: "); ok {
					for _, n := range strings.Split(l, ", ") {
						named = append(named, strings.TrimPrefix(n, "tools."))
					}
				}
			}
			for _, w := range tc.whole {
				if !slices.Contains(whole, w) {
					t.Errorf("%s is not shown whole:\n%s", w, text)
				}
			}
			for _, o := range tc.only {
				if !slices.Contains(named, o) {
					t.Errorf("%s is not only named:\n%s", o, text)
				}
			}
			if strings.Contains(text, "tools.kubernetes.services.list(") && strings.Contains(tc.query, "service accounts") {
				t.Errorf("\"service accounts\" shows Services:\n%s", text)
			}
			t.Logf("%d tokens", tokencount.Count(text))
		})
	}
}
