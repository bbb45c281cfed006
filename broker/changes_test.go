package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog/secrets"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// newBrokerPolicy wires a code-mode broker whose bridge applies policy,
// writing its ledger to the returned buffer.
// newBrokerPolicy wires both adapters, Kubernetes and Helm (charts from the
// examples and Helm's test charts), behind a bridge with policy, as
// kubecode serve does.
func newBrokerPolicy(t testing.TB, cfg *rest.Config, policy policy.Policy) (*broker.Broker, *bytes.Buffer) {
	t.Helper()
	reg := secrets.New(nil) // one boundary, as cmd/kubecode wires it
	a, err := kubernetes.New(cfg, &kubernetes.Options{Secrets: reg})
	if err != nil {
		t.Fatal(err)
	}
	h, err := helm.New(cfg, &helm.Options{ChartSources: []string{exampleCharts, helmTestCharts}, Secrets: reg})
	if err != nil {
		t.Fatal(err)
	}
	var ledger bytes.Buffer
	br := bridge.New([]bridge.Provider{a, h}, &bridge.Options{Policy: policy, Ledger: &ledger, Secrets: reg})
	t.Cleanup(func() { _ = br.Close() })
	return broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler), ApprovalWait: 500 * time.Millisecond}), &ledger
}

// kubectl runs kubectl as the admin and returns its trimmed output: the
// tests check the cluster with a tool of its own, not only kubecode's word.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// webDeployment creates Deployment web (1 replica) and ConfigMap cfg in a
// new namespace and returns it.
func webDeployment(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	ns := cp.Namespace(t)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1.0"}}}}}}
	ctx := context.Background()
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func replicas(t *testing.T, ns string) string {
	return kubectl(t, "-n", ns, "get", "deployment", "web", "-o", "jsonpath={.spec.replicas}")
}

// execute calls execute_code and returns the answer's text and structured
// content.
func execute(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError, sc
}

// planID returns the id of the plan an execution made.
func planID(t *testing.T, sc map[string]any) string {
	t.Helper()
	plan, _ := sc["plan"].(map[string]any)
	id, _ := plan["id"].(string)
	if id == "" {
		t.Fatalf("no plan in %v", sc)
	}
	return id
}

// approved has a person (a reviewer on the CLI) approve the plan an
// execution made, and returns its id for approve.
func approved(t *testing.T, b *broker.Broker, sc map[string]any) string {
	t.Helper()
	id := planID(t, sc)
	if _, err := b.Decide(context.Background(), id, bridge.Decision{By: "reviewer", Channel: "cli", Approve: true, Verified: true}); err != nil {
		t.Fatalf("approve %s: %v", id, err)
	}
	return id
}

// TestPlanThenApprove: in plan mode a script's changes are dry runs and
// come back as a plan; approving applies exactly it; a re-run whose
// changes differ from the plan stops before the first that differs.
func TestPlanThenApprove(t *testing.T) {
	ns := webDeployment(t)
	b, ledger := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	code := `const d = await tools.kubernetes.deployments.get({ namespace: '` + ns + `', name: 'web' })
const s = await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: d.spec.replicas + 1 })
return 'scaled to ' + s.spec.replicas`

	text, isErr, sc := execute(t, cs, map[string]any{"code": code})
	if isErr || !strings.Contains(text, "scaled to 2") || !strings.Contains(text, "dry run only: nothing was applied") ||
		!strings.Contains(text, "1. kubernetes.deployments.scale Deployment "+ns+"/web: impact: starts 1 more pod of "+ns+"/web; spec.replicas: 1 → 2") {
		t.Fatalf("plan answer:\n%s", text)
	}
	if got := replicas(t, ns); got != "1" {
		t.Fatalf("kubectl: %s replicas after planning, want 1", got)
	}
	token := approved(t, b, sc)

	text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": token})
	if isErr || !strings.Contains(text, "1 of 1 changes applied") {
		t.Fatalf("approved answer:\n%s", text)
	}
	if got := replicas(t, ns); got != "2" {
		t.Fatalf("kubectl: %s replicas after approval, want 2", got)
	}
	if !strings.Contains(ledger.String(), `"decision":"planned"`) || !strings.Contains(ledger.String(), `"decision":"applied"`) {
		t.Errorf("ledger misses the decisions:\n%s", ledger)
	}

	// Plan 2 → 3; meanwhile someone scales to 5: the re-run would scale
	// to 6, which is not the plan.
	_, _, sc = execute(t, cs, map[string]any{"code": code})
	token = approved(t, b, sc)
	kubectl(t, "-n", ns, "scale", "deployment", "web", "--replicas=5")
	text, _, _ = execute(t, cs, map[string]any{"code": code, "approve": token})
	if !strings.Contains(text, "0 of 1 changes applied") || !strings.Contains(text, "with other arguments") {
		t.Errorf("divergent re-run:\n%s", text)
	}
	if got := replicas(t, ns); got != "5" {
		t.Errorf("kubectl: %s replicas after a divergent re-run, want 5", got)
	}

	text, isErr, _ = execute(t, cs, map[string]any{"code": code + "\n", "approve": token})
	if !isErr || !strings.Contains(text, "another script") {
		t.Errorf("approval of another script:\n%s", text)
	}
}

// TestPlanAppliesOnce: an approval applies its plan once. Replaying the
// token, or sending it four times at once, changes nothing more: a
// generateName create makes one object, not one per use.
func TestPlanAppliesOnce(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	count := func() string {
		return kubectl(t, "-n", ns, "get", "configmaps", "-l", "made=once", "-o", "name")
	}
	code := `await tools.kubernetes.configmaps.create({ namespace: '` + ns + `', object: { metadata: { generateName: 'once-', labels: { made: 'once' } }, data: { a: '1' } } })
return 'made'`
	_, _, sc := execute(t, cs, map[string]any{"code": code})
	token := approved(t, b, sc)
	if text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": token}); isErr || !strings.Contains(text, "1 of 1 changes applied") {
		t.Fatalf("approved answer:\n%s", text)
	}
	if got := strings.Count(count(), "configmap/once-"); got != 1 {
		t.Fatalf("kubectl: %d objects after the approval, want 1", got)
	}
	for range 2 {
		text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": token})
		if !isErr || !strings.Contains(text, "was already applied: a plan applies once") {
			t.Errorf("replay answered:\n%s", text)
		}
	}
	// A new plan, approved four times at once: one applies.
	_, _, sc = execute(t, cs, map[string]any{"code": code})
	token = approved(t, b, sc)
	answers := make(chan string, 4)
	for range 4 {
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code, "approve": token}})
			if err != nil {
				answers <- err.Error()
				return
			}
			answers <- res.Content[0].(*mcp.TextContent).Text
		}()
	}
	applied := 0
	for range 4 {
		if a := <-answers; strings.Contains(a, "1 of 1 changes applied") {
			applied++
		} else if !strings.Contains(a, "was already applied") {
			t.Errorf("a parallel approval answered:\n%s", a)
		}
	}
	if got := strings.Count(count(), "configmap/once-"); applied != 1 || got != 2 {
		t.Errorf("%d parallel approvals applied, kubectl sees %d objects; want 1 and 2", applied, got)
	}
}

// TestReadOnlyRefusesEveryChange: in read-only mode every change is
// refused at the bridge, catchably, and kubectl sees nothing changed.
func TestReadOnlyRefusesEveryChange(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{Mode: policy.ModeReadOnly})
	cs := connect(t, b)
	var got []string
	execJSON(t, cs, `const ns = '`+ns+`'
const attempts = [
  () => tools.kubernetes.deployments.scale({ namespace: ns, name: 'web', replicas: 3 }),
  () => tools.kubernetes.deployments.delete({ namespace: ns, name: 'web' }),
  () => tools.kubernetes.configmaps.patch({ namespace: ns, name: 'cfg', patch: { data: { a: '2' } } }),
  () => tools.kubernetes.configmaps.create({ namespace: ns, object: { metadata: { name: 'new' }, data: {} } }),
  () => tools.kubernetes.deployments.rollout.restart({ namespace: ns, name: 'web' }),
]
const out: string[] = []
for (const a of attempts) {
  try { await a(); out.push('made') } catch (e: any) { out.push(e.reason) }
}
return out`, &got)
	if len(got) != 5 {
		t.Fatalf("%d changes tried, want 5: %v", len(got), got)
	}
	for i, r := range got {
		if r != bridge.ReasonRefused {
			t.Errorf("change %d: %s, want Refused", i+1, r)
		}
	}
	if r := replicas(t, ns); r != "1" {
		t.Errorf("kubectl: %s replicas", r)
	}
	if v := kubectl(t, "-n", ns, "get", "configmap", "cfg", "-o", "jsonpath={.data.a}"); v != "1" {
		t.Errorf("kubectl: cfg.a = %s", v)
	}
	if out := kubectl(t, "-n", ns, "get", "configmaps", "-o", "name"); strings.Contains(out, "configmap/new") {
		t.Errorf("kubectl: a configmap was created: %s", out)
	}
	if a := kubectl(t, "-n", ns, "get", "deployment", "web", "-o", "jsonpath={.spec.template.metadata.annotations}"); a != "" {
		t.Errorf("kubectl: template annotations %s", a)
	}
}

// TestGates: each rule refuses the unsafe form of a change and lets the
// narrow form through (apply mode, so the narrow form lands).
func TestGates(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{Mode: policy.ModeApply})
	cs := connect(t, b)
	bns, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{Mode: policy.ModeApply, Namespaces: []string{ns}})
	csNamespaces := connect(t, bns)
	bdenied, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{Mode: policy.ModeApply, DeniedKinds: []string{"configmap"}})
	csDenied := connect(t, bdenied)
	for _, tc := range []struct {
		name, unsafe, narrow, rule string
	}{
		{"json patch replacing a whole map", `tools.kubernetes.configmaps.patch({ namespace: NS, name: 'cfg', type: 'json', patch: [{ op: 'replace', path: '/data', value: { z: '1', y: '1', x: '1' } }] })`,
			`tools.kubernetes.configmaps.patch({ namespace: NS, name: 'cfg', type: 'json', patch: [{ op: 'replace', path: '/data/a', value: '5' }] })`, "at most 3 are allowed"},
		{"permission write", `tools.kubernetes.roles.create({ namespace: NS, object: { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] } })`,
			`tools.kubernetes.serviceaccounts.create({ namespace: NS, object: { metadata: { name: 'sa' } } })`, "widens access"},
		{"denied kind", `tools.kubernetes.configmaps.create({ namespace: NS, object: { metadata: { name: 'denied' }, data: {} } })`,
			`tools.kubernetes.services.create({ namespace: NS, object: { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } } })`, "denied by policy"},
		{"more changes than maxChanges", `(async () => { for (let i = 0; i < 11; i++) await tools.kubernetes.configmaps.patch({ namespace: NS, name: 'cfg', patch: { data: { n: String(i) } } }) })()`,
			`(async () => { for (let i = 0; i < 10; i++) await tools.kubernetes.configmaps.patch({ namespace: NS, name: 'cfg', patch: { data: { n: String(i) } } }) })()`, "at most 10 changes"},
		{"broad patch", `tools.kubernetes.configmaps.patch({ namespace: NS, name: 'cfg', patch: { data: { a: '2', b: '2', c: '2', d: '2' } } })`,
			`tools.kubernetes.configmaps.patch({ namespace: NS, name: 'cfg', patch: { data: { a: '2' } } })`, "at most 3 are allowed"},
		{"full replace", `tools.kubernetes.configmaps.apply({ namespace: NS, manifest: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', labels: { x: 'y' } }, data: { a: '3', b: '3', c: '3' } } })`,
			`tools.kubernetes.configmaps.apply({ namespace: NS, manifest: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { e: '3' } } })`, "forceFullReplace"},
		{"delete without grace", `tools.kubernetes.configmaps.delete({ namespace: NS, name: 'cfg', force: true })`,
			`tools.kubernetes.configmaps.delete({ namespace: NS, name: 'cfg' })`, "without a grace period"},
		{"protected delete", `tools.kubernetes.namespaces.delete({ name: NS })`,
			`tools.kubernetes.deployments.scale({ namespace: NS, name: 'web', replicas: 2 })`, "takes much else with it"},
		{"secret write", `tools.kubernetes.secrets.create({ namespace: NS, object: { metadata: { name: 's' }, stringData: { k: 'v' } } })`,
			`tools.kubernetes.configmaps.create({ namespace: NS, object: { metadata: { name: 'c2' }, data: { k: 'v' } } })`, "holds secret values"},
		{"a node cordoned", `tools.kubernetes.nodes.patch({ name: 'node-1', patch: { spec: { unschedulable: true } } })`,
			`tools.kubernetes.nodes.get({ name: 'node-1' })`, "nodes run every workload"},
		{"kube-system", `tools.kubernetes.configmaps.create({ namespace: 'kube-system', object: { metadata: { name: 'agent' }, data: {} } })`,
			`tools.kubernetes.configmaps.create({ namespace: NS, object: { metadata: { name: 'agent' }, data: {} } })`, "holds the cluster's own components"},
		{"pod security relaxed", `tools.kubernetes.namespaces.patch({ name: NS, patch: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } } })`,
			`tools.kubernetes.namespaces.patch({ name: NS, patch: { metadata: { labels: { team: 'web' } } } })`, "pod-security labels decide"},
		{"outside the namespaces", `tools.kubernetes.configmaps.create({ namespace: 'default', object: { metadata: { name: 'stray' }, data: {} } })`,
			`tools.kubernetes.configmaps.create({ namespace: NS, object: { metadata: { name: 'c3' }, data: {} } })`, "outside the namespaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct{ Unsafe, Narrow string }
			cs := cs
			switch tc.name {
			case "outside the namespaces":
				cs = csNamespaces
			case "denied kind":
				cs = csDenied
			}
			// Each form in an execution of its own.
			attempt := func(form string) string {
				var out string
				execJSON(t, cs, `const NS = '`+ns+`'
try { await `+form+`; return 'ok' } catch (e: any) { return e.reason + ': ' + e.message }`, &out)
				return out
			}
			got.Unsafe, got.Narrow = attempt(tc.unsafe), attempt(tc.narrow)
			if !strings.HasPrefix(got.Unsafe, "Refused: refused: ") || !strings.Contains(got.Unsafe, tc.rule) {
				t.Errorf("unsafe form: %q, want refused with %q", got.Unsafe, tc.rule)
			}
			if got.Narrow != "ok" {
				t.Errorf("narrow form: %q", got.Narrow)
			}
		})
	}
	if out := kubectl(t, "get", "configmaps", "-n", "default", "-o", "name"); strings.Contains(out, "stray") {
		t.Errorf("kubectl: a configmap outside the namespaces: %s", out)
	}
	if out := kubectl(t, "get", "namespace", ns, "-o", "jsonpath={.status.phase}"); out != "Active" {
		t.Errorf("kubectl: namespace %s", out)
	}
}

// TestElicitation: a client that can ask its user gets the plan to
// confirm; accept applies it, decline applies nothing.
func TestElicitation(t *testing.T) {
	for _, tc := range []struct {
		action, want, note string
	}{
		{"accept", "2", "applied after the user confirmed the plan"},
		{"decline", "1", "not applied: the user did not confirm plan"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			ns := webDeployment(t)
			b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
			var asked string
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = req.Params.Message
					return &mcp.ElicitResult{Action: tc.action}, nil
				}})
			cs := connectWith(t, b, client)
			text, _, _ := execute(t, cs, map[string]any{"code": `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
return 'done'`})
			if !strings.Contains(asked, "Deployment "+ns+"/web: impact: starts 1 more pod of "+ns+"/web; spec.replicas: 1 → 2") {
				t.Errorf("the user was asked %q", asked)
			}
			if !strings.Contains(text, tc.note) {
				t.Errorf("answer:\n%s", text)
			}
			if got := replicas(t, ns); got != tc.want {
				t.Errorf("kubectl: %s replicas, want %s", got, tc.want)
			}
		})
	}
}

// TestRBACDenialOfAChange: the viewer may not scale; the API's 403 comes
// back from the dry run as a catchable error.
func TestRBACDenialOfAChange(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Viewer, policy.Policy{Mode: policy.ModeApply})
	cs := connect(t, b)
	var got map[string]any
	execJSON(t, cs, `try { await tools.kubernetes.deployments.scale({ namespace: '`+ns+`', name: 'web', replicas: 4 }); return {} }
catch (e: any) { return { code: e.code, reason: e.reason, forbidden: e.message.includes('forbidden') } }`, &got)
	if got["code"] != 403.0 || got["reason"] != "Forbidden" || got["forbidden"] != true {
		t.Errorf("caught %v", got)
	}
	if r := replicas(t, ns); r != "1" {
		t.Errorf("kubectl: %s replicas", r)
	}
}

// TestSecretCanaries: with secret writes allowed, a canary value written
// through a plan, an approval and a failing call appears in no answer, no
// plan, no console line and no ledger entry.
func TestSecretCanaries(t *testing.T) {
	ns := webDeployment(t)
	const canary = "kc-canary-7f3a9e"
	b, ledger := newBrokerPolicy(t, cp.Admin, policy.Policy{AllowSecretWrites: true})
	cs := connect(t, b)
	code := `const s = await tools.kubernetes.secrets.create({ namespace: '` + ns + `', object: { metadata: { name: 'db' }, stringData: { password: '` + canary + `' } } })
console.log(JSON.stringify(s))
return s`
	// A failing call holding the canary (a script of its own: a failed dry
	// run leaves no plan).
	failing := `try { await tools.kubernetes.secrets.patch({ namespace: '` + ns + `', name: 'nope', patch: { stringData: { password: '` + canary + `' } } }) } catch (e: any) { console.log(e.message) }
return 'tried'`
	var seen strings.Builder
	text, _, _ := execute(t, cs, map[string]any{"code": failing})
	seen.WriteString(text)
	text, _, sc := execute(t, cs, map[string]any{"code": code})
	seen.WriteString(text)
	text, _, _ = execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc)})
	seen.WriteString(text)
	if v := kubectl(t, "-n", ns, "get", "secret", "db", "-o", "jsonpath={.data.password}"); v == "" {
		t.Fatal("kubectl: the approved secret was not created")
	}
	for what, s := range map[string]string{"answers": seen.String(), "ledger": ledger.String()} {
		for _, form := range []string{canary, "a2MtY2FuYXJ5LTdmM2E5ZQ"} { // and its base64
			if strings.Contains(s, form) {
				t.Errorf("the %s hold the canary (%s):\n%s", what, form, s)
			}
		}
	}
}

// TestAuditIDs: every API request of a call carries the call's Audit-ID,
// so kube-apiserver's audit log lines up with the ledger, the dry run and
// the change of an approved plan included.
func TestAuditIDs(t *testing.T) {
	ns := webDeployment(t)
	b, ledger := newBrokerPolicy(t, cp.Admin, policy.Policy{Mode: policy.ModeApply})
	cs := connect(t, b)
	execJSON(t, cs, `await tools.kubernetes.deployments.get({ namespace: '`+ns+`', name: 'web' })
await tools.kubernetes.deployments.scale({ namespace: '`+ns+`', name: 'web', replicas: 2 })
return 1`, new(int))
	var entries []bridge.Entry
	for _, line := range strings.Split(strings.TrimSpace(ledger.String()), "\n") {
		var e bridge.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if len(entries) != 2 {
		t.Fatalf("%d ledger entries", len(entries))
	}
	audit, err := os.ReadFile(cp.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	// auditID → the verbs of the requests logged under it
	verbs := map[string][]string{}
	for _, line := range strings.Split(string(audit), "\n") {
		var ev struct {
			AuditID   string `json:"auditID"`
			Verb      string `json:"verb"`
			ObjectRef struct {
				Namespace string `json:"namespace"`
			} `json:"objectRef"`
			RequestURI string `json:"requestURI"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.ObjectRef.Namespace == ns {
			v := ev.Verb
			if strings.Contains(ev.RequestURI, "dryRun=All") {
				v += "(dry run)"
			}
			verbs[ev.AuditID] = append(verbs[ev.AuditID], v)
		}
	}
	want := map[string][]string{
		entries[0].AuditID: {"get"},
		// read, preview, what acts on it afterwards (the Deployment, its
		// autoscalers, the quotas new pods count against), the snapshot a
		// revert needs, change
		entries[1].AuditID: {"get", "patch(dry run)", "get", "list", "list", "get", "patch"},
	}
	for id, w := range want {
		if d := cmp.Diff(w, verbs[id]); d != "" {
			t.Errorf("audit log under %s (-want +got):\n%s", id, d)
		}
	}
}

// TestUndoPlanBindsTheRevision: a planned rollback binds the template it
// would restore; when a rollout meanwhile makes "the previous revision"
// another one, the approval diverges instead of restoring that.
func TestUndoPlanBindsTheRevision(t *testing.T) {
	ns := webDeployment(t)
	revision := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := kubectl(t, "-n", ns, "get", "deployment", "web", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`)
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("revision %q, want %s", got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	revision("1")
	kubectl(t, "-n", ns, "set", "image", "deployment/web", "app=registry.example/web:2.0")
	revision("2")
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	code := `await tools.kubernetes.deployments.rollout.undo({ namespace: '` + ns + `', name: 'web' }); return 'undone'`
	text, _, sc := execute(t, cs, map[string]any{"code": code})
	if !strings.Contains(text, `"registry.example/web:2.0" → "registry.example/web:1.0"`) {
		t.Fatalf("plan:\n%s", text)
	}
	kubectl(t, "-n", ns, "set", "image", "deployment/web", "app=registry.example/web:3.0")
	revision("3")
	text, _, _ = execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc)})
	if !strings.Contains(text, "0 of 1 changes applied") || !strings.Contains(text, "with other arguments") {
		t.Errorf("approval after another rollout:\n%s", text)
	}
	if img := kubectl(t, "-n", ns, "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); img != "registry.example/web:3.0" {
		t.Errorf("kubectl: image %s, want 3.0 untouched", img)
	}
}

// TestUnboundClaimDelete: a claim bound to no volume holds no data, so
// deleting it is an ordinary change; a namespace stays protected.
func TestUnboundClaimDelete(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{Mode: policy.ModeApply})
	cs := connect(t, b)
	text, isErr, _ := execute(t, cs, map[string]any{"code": `await tools.kubernetes.persistentvolumeclaims.create({ namespace: '` + ns + `', object: { metadata: { name: 'pending' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'none' } } })
await tools.kubernetes.persistentvolumeclaims.delete({ namespace: '` + ns + `', name: 'pending' })
return 'deleted'`})
	if isErr || !strings.HasPrefix(text, "deleted") {
		t.Fatalf("deleting a pending claim:\n%s", text)
	}
	// One read: the claim may go between two (its finalizer is removed as
	// it is deleted); if it is listed, it must be deleting.
	out := kubectl(t, "-n", ns, "get", "pvc", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.deletionTimestamp}{"\n"}{end}`)
	for _, line := range strings.Split(out, "\n") {
		if name, deleting, _ := strings.Cut(line, "="); name == "pending" && deleting == "" {
			t.Errorf("kubectl: the claim is still there, not deleting: %s", out)
		}
	}
}
