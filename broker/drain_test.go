package broker_test

import (
	"strings"
	"testing"

	"github.com/kubecode/kubecode/bridge/policy"
)

// TestDrainIsHandedToAPerson: search for draining ranks nodes.drain first
// (never a budget's delete); a script's drain is refused under the default
// policy, saying to hand it to a person with the kubectl command.
func TestDrainIsHandedToAPerson(t *testing.T) {
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	for q, want := range map[string]string{
		"drain a node":                    "tools.kubernetes.nodes.drain(",
		"evict a pod":                     "tools.kubernetes.pods.evict(",
		"kubelet logs of a node":          "tools.kubernetes.nodes.logs(",
		"kubelet stats summary of a node": "tools.kubernetes.nodes.stats(",
		"memory of the pods on a node":    "tools.kubernetes.nodes.top(",
	} {
		text, _ := callText(t, connect(t, b), "search_tools", map[string]any{"query": q})
		if first := firstDeclaration(text); !strings.Contains(first, want) || strings.Contains(first, "poddisruptionbudgets.delete") {
			t.Errorf("search %q ranks first %q, want %s:\n%s", q, first, want, text)
		}
	}
	node := cp.SimulatedNodes[0]
	text, isErr, _ := execute(t, connect(t, b), map[string]any{"code": `return await tools.kubernetes.nodes.drain({ name: '` + node + `' })`})
	if !isErr || !strings.Contains(text, "hand it to a person (kubectl drain "+node+" --ignore-daemonsets)") || !strings.Contains(text, "refused") {
		t.Errorf("a drain under the default policy:\n%s", text)
	}
}
