package broker_test

import (
	"strings"
	"testing"

	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
)

// TestWhatIsNotServedIsSaid: a question or a guess for something kubecode
// does not serve (attach, port-forward, cp) is answered plainly,
// with what to do instead — by search, by the type check and, with the
// type check off, by the runtime's error — not with unrelated operations.
func TestWhatIsNotServedIsSaid(t *testing.T) {
	ns := webDeployment(t)
	for _, tc := range []struct{ query, want string }{
		{"attach to a container", "// Not served: tools.kubernetes.pods.attach: kubecode does not attach to containers"},
		{"port-forward to a service", "// Not served: tools.kubernetes.pods.portforward: "},
		{"copy a file into a container", "// Not served: tools.kubernetes.pods.cp: "},
	} {
		text, isErr := callText(t, connect(t, newBroker(t, cp.Admin)), "search_tools", map[string]any{"query": tc.query})
		if isErr || !strings.HasPrefix(text, tc.want) {
			t.Errorf("search %q:\n%s\nwant it to begin %q", tc.query, text, tc.want)
		}
	}
	if text, _ := callText(t, connect(t, newBroker(t, cp.Admin)), "search_tools", map[string]any{"query": "list pods"}); strings.Contains(text, "Not served") {
		t.Errorf("a question about what is served says Not served:\n%s", text)
	}
	code := `return await tools.kubernetes.pods.attach({ namespace: '` + ns + `', name: 'web' })`
	for _, mode := range []broker.TypecheckMode{broker.TypecheckCalls, broker.TypecheckOff} {
		text, isErr, _ := execute(t, connect(t, newBrokerTypecheck(t, cp.Admin, policy.Policy{}, mode)), map[string]any{"code": code})
		if !isErr || !strings.Contains(text, "tools.kubernetes.pods.attach is not an operation kubecode serves: kubecode does not attach to containers") || strings.Contains(text, "did you mean") {
			t.Errorf("typecheck %v: pods.attach:\n%s", mode, text)
		}
	}
}
