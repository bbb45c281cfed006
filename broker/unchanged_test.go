package broker_test

import (
	"strings"
	"testing"

	"github.com/kubecode/kubecode/bridge/policy"
)

// TestUnchangedIsNotPlanned: a change the dry run shows changes nothing
// (a scale to the replicas the Deployment has) is not planned and asks no
// one — it stayed pending until it expired — and the answer says so; the
// same call beside a real change leaves a plan of the real change alone,
// whose approved re-run makes the no-op call again without diverging.
func TestUnchangedIsNotPlanned(t *testing.T) {
	ns := webDeployment(t)
	b, ledger := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	noop := `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 1 })`
	text, isErr, sc := execute(t, cs, map[string]any{"code": noop + "\nreturn 'done'"})
	if isErr || sc["plan"] != nil || !strings.Contains(text, "--- not planned, no one asked: the dry run shows kubernetes.deployments.scale Deployment "+ns+"/web change nothing ---") {
		t.Errorf("a no-op scale (error %v, plan %v):\n%s", isErr, sc["plan"], text)
	}
	code := noop + "\nawait tools.kubernetes.configmaps.create({ namespace: '" + ns + "', object: { metadata: { name: 'flag' }, data: { on: 'yes' } } })\nreturn 'done'"
	text, _, sc = execute(t, cs, map[string]any{"code": code})
	plan, _ := sc["plan"].(map[string]any)
	if changes, _ := plan["changes"].([]any); len(changes) != 1 || !strings.Contains(text, "ConfigMap "+ns+"/flag") {
		t.Fatalf("the plan should hold the create alone:\n%s", text)
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc)})
	if isErr || !strings.Contains(text, "1 of 1 changes applied") || strings.Contains(text, "diverged") {
		t.Errorf("approved:\n%s", text)
	}
	if v := kubectl(t, "-n", ns, "get", "configmap", "flag", "-o", "jsonpath={.data.on}"); v != "yes" {
		t.Errorf("kubectl: flag.on = %q", v)
	}
	if !strings.Contains(ledger.String(), `"decision":"unchanged"`) {
		t.Errorf("the ledger does not record the unchanged call")
	}
}
