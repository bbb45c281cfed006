package broker_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// manifest saves an object as kubectl shows it, without its status and
// server-set metadata, for kubectl diff.
func manifest(t *testing.T, ns, kind, name string) string {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(kubectl(t, "-n", ns, "get", kind, name, "-o", "json")), &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj, "status")
	md := obj["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
		delete(md, k)
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, "deployment.kubernetes.io/revision")
	}
	raw, _ := json.Marshal(obj)
	path := filepath.Join(t.TempDir(), kind+".json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectlDiff runs kubectl diff on a saved manifest: "" when the cluster
// holds exactly it.
func kubectlDiff(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "diff", "-f", path).CombinedOutput()
	if err != nil && len(out) == 0 {
		t.Fatalf("kubectl diff: %v", err)
	}
	return string(out)
}

// planApproveApply plans code, has a person approve it and applies it,
// returning the applied answer's text and structured content.
func planApproveApply(t *testing.T, b *broker.Broker, cs *mcp.ClientSession, code string) (string, map[string]any) {
	t.Helper()
	text, isErr, sc := execute(t, cs, map[string]any{"code": code})
	if isErr {
		t.Fatalf("plan:\n%s", text)
	}
	text, isErr, sc = execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc)})
	if isErr {
		t.Fatalf("approved run:\n%s", text)
	}
	return text, sc
}

// TestRevertRestoresExactly: a Deployment scaled, re-imaged and patched in
// one approved execution is restored exactly by its revert — itself a plan
// a person approves (kubectl diff against the saved object is empty);
// created objects go, deleted ones come back; an object changed since is
// reported as a conflict and left alone.
func TestRevertRestoresExactly(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	saved := manifest(t, ns, "deployment", "web")
	savedCM := manifest(t, ns, "configmap", "cfg")

	change := `const NS = '` + ns + `'
await tools.kubernetes.deployments.scale({ namespace: NS, name: 'web', replicas: 3 })
await tools.kubernetes.deployments.patch({ namespace: NS, name: 'web', patch: { spec: { template: { spec: { containers: [{ name: 'app', image: 'registry.example/web:2.0' }] } } } } })
await tools.kubernetes.deployments.patch({ namespace: NS, name: 'web', patch: { metadata: { labels: { tier: 'front' } } } })
await tools.kubernetes.configmaps.create({ namespace: NS, object: { metadata: { name: 'made' }, data: { b: '2' } } })
await tools.kubernetes.configmaps.delete({ namespace: NS, name: 'cfg' })
return 'changed'`
	text, sc := planApproveApply(t, b, cs, change)
	exec, _ := sc["execution"].(string)
	if exec == "" || !strings.Contains(text, "to undo it: tools.kubecode.revert") {
		t.Fatalf("the applied answer names no execution to revert:\n%s", text)
	}
	if d := kubectlDiff(t, saved); d == "" {
		t.Fatal("kubectl diff: the execution changed nothing")
	}

	revert := `return await tools.kubecode.revert({ execution: '` + exec + `' })`
	text, isErr, sc := execute(t, cs, map[string]any{"code": revert})
	if isErr || !strings.Contains(text, "dry run only") || !strings.Contains(text, "kubernetes.deployments.patch Deployment "+ns+"/web") ||
		!strings.Contains(text, "kubernetes.configmaps.delete ConfigMap "+ns+"/made") || !strings.Contains(text, "kubernetes.configmaps.create ConfigMap "+ns+"/cfg") {
		t.Fatalf("revert plan:\n%s", text)
	}
	if replicas(t, ns) != "3" {
		t.Fatal("planning the revert changed the Deployment")
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": revert, "approve": approved(t, b, sc)})
	if isErr || !strings.Contains(text, "3 of 3 changes applied") {
		t.Fatalf("revert:\n%s", text)
	}
	for _, path := range []string{saved, savedCM} {
		if d := kubectlDiff(t, path); d != "" {
			t.Errorf("kubectl diff after the revert:\n%s", d)
		}
	}
	if out := kubectl(t, "-n", ns, "get", "configmaps", "-o", "name"); strings.Contains(out, "configmap/made") {
		t.Errorf("the created ConfigMap is still there: %s", out)
	}

	// Changed since: the revert leaves it alone and says so.
	_, sc = planApproveApply(t, b, cs, `await tools.kubernetes.deployments.scale({ namespace: '`+ns+`', name: 'web', replicas: 4 })
return 'ok'`)
	exec = sc["execution"].(string)
	kubectl(t, "-n", ns, "scale", "deployment", "web", "--replicas=6")
	var got bridge.RevertResult
	execJSON(t, cs, `return await tools.kubecode.revert({ execution: '`+exec+`' })`, &got)
	if len(got.Restored) != 0 || len(got.Conflicts) != 1 || !strings.Contains(got.Conflicts[0], "conflict: changed since the execution (spec.replicas)") {
		t.Errorf("revert of a moved-on object: %+v", got)
	}
	if replicas(t, ns) != "6" {
		t.Errorf("kubectl: %s replicas, want 6 (left alone)", replicas(t, ns))
	}
	// An unknown execution is a clear error.
	text, _, _ = execute(t, cs, map[string]any{"code": `return await tools.kubecode.revert({ execution: 'exec-0-0' })`})
	if !strings.Contains(text, `no change of execution "exec-0-0" is recorded here`) {
		t.Errorf("unknown execution:\n%s", text)
	}
}

// TestRevertManifest: a manifest applied — one object created, one
// updated — is reverted like typed calls: the created one goes, the
// updated one is back exactly as it was (before, "no change of execution
// … is recorded here").
func TestRevertManifest(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	saved := manifest(t, ns, "configmap", "cfg")
	text, sc := planApproveApply(t, b, cs, `return await tools.kubernetes.apply({ manifest: [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'made', namespace: '`+ns+`' }, data: { b: '2' } },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: '`+ns+`' }, data: { a: '9' } },
], force: true })`)
	exec, _ := sc["execution"].(string)
	if exec == "" || !strings.Contains(text, "to undo it: tools.kubecode.revert") || strings.Contains(text, "cannot undo") {
		t.Fatalf("the applied manifest offers no undo:\n%s", text)
	}
	revert := `return await tools.kubecode.revert({ execution: '` + exec + `' })`
	text, isErr, sc := execute(t, cs, map[string]any{"code": revert})
	if isErr || !strings.Contains(text, "kubernetes.configmaps.delete ConfigMap "+ns+"/made") || !strings.Contains(text, "kubernetes.configmaps.patch ConfigMap "+ns+"/cfg") {
		t.Fatalf("revert plan:\n%s", text)
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": revert, "approve": approved(t, b, sc)})
	if isErr || !strings.Contains(text, "2 of 2 changes applied") {
		t.Fatalf("revert:\n%s", text)
	}
	if d := kubectlDiff(t, saved); d != "" {
		t.Errorf("kubectl diff of the updated ConfigMap after the revert:\n%s", d)
	}
	if out := kubectl(t, "-n", ns, "get", "configmaps", "-o", "name"); strings.Contains(out, "configmap/made") {
		t.Errorf("the created ConfigMap is still there: %s", out)
	}
}

// TestRevertHelm: an upgrade reverts by rolling the release back to the
// revision before it, then each object it updated to what it was before;
// an install reverts by uninstalling it.
func TestRevertHelm(t *testing.T) {
	skipUnderRace(t)
	ns := cp.Namespace(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	chart := filepath.Join(exampleCharts, "web-app")
	install := `return await tools.helm.install({ release: 'web', namespace: '` + ns + `', chart: '` + chart + `', wait: false })`
	_, sc := planApproveApply(t, b, cs, install)
	installed := sc["execution"].(string)
	_, sc = planApproveApply(t, b, cs, `return await tools.helm.upgrade({ release: 'web', namespace: '`+ns+`', chart: '`+chart+`', wait: false, values: { image: { tag: '1.28' } } })`)
	upgraded := sc["execution"].(string)
	image := func() string {
		return kubectl(t, "-n", ns, "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	}
	if image() != "nginx:1.28" {
		t.Fatalf("after the upgrade: %s", image())
	}
	text, _ := planApproveApply(t, b, cs, `return await tools.kubecode.revert({ execution: '`+upgraded+`' })`)
	// The release rolls back, and the Deployment it updated comes back
	// to what it was just before the upgrade.
	if !strings.Contains(text, "2 of 2 changes applied") || image() != "nginx:1.27" {
		t.Fatalf("revert of the upgrade (image %s):\n%s", image(), text)
	}
	// The install was followed by more revisions: its revert is a conflict.
	var got bridge.RevertResult
	execJSON(t, cs, `return await tools.kubecode.revert({ execution: '`+installed+`' })`, &got)
	if len(got.Conflicts) != 1 || !strings.Contains(got.Conflicts[0], "the release is at revision 3, the execution left it at 1") {
		t.Errorf("revert of the install after later revisions: %+v", got)
	}
	// A fresh install reverts by uninstalling.
	_, sc = planApproveApply(t, b, cs, strings.ReplaceAll(install, "release: 'web'", "release: 'other'"))
	text, _ = planApproveApply(t, b, cs, `return await tools.kubecode.revert({ execution: '`+sc["execution"].(string)+`' })`)
	if !strings.Contains(text, `"restored":["HelmRelease `+ns+`/other"]`) {
		t.Errorf("revert of an install:\n%s", text)
	}
	if out := kubectl(t, "-n", ns, "get", "deployments", "-o", "name"); strings.Contains(out, "other") {
		t.Errorf("kubectl: the reverted install's objects remain: %s", out)
	}
}

// TestRevertHelmToLiveState: the case — a release changed by hand
// since its install (4 replicas, nginx:1.28, no color key), then upgraded;
// the upgrade's revert rolled it back to revision 1 (2 replicas,
// nginx:1.27, color blue), not to what was live before the execution.
// Now the release rolls back and each object it updated comes back to
// what it was just before the upgrade.
func TestRevertHelmToLiveState(t *testing.T) {
	skipUnderRace(t)
	ns := cp.Namespace(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	chart := filepath.Join(exampleCharts, "web-app")
	planApproveApply(t, b, cs, `return await tools.helm.install({ release: 'web', namespace: '`+ns+`', chart: '`+chart+`', wait: false, values: { autoscaling: { enabled: false } } })`)
	kubectl(t, "-n", ns, "scale", "deployment", "web", "--replicas=4")
	kubectl(t, "-n", ns, "set", "image", "deployment/web", "web=nginx:1.28")
	kubectl(t, "-n", ns, "patch", "configmap", "web-config", "--type=json", `-p=[{"op":"remove","path":"/data/color"}]`)
	// kubectl diff does not see a key removed by hand: the fields are
	// read instead.
	live := func() string {
		return kubectl(t, "-n", ns, "get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}") + " " +
			kubectl(t, "-n", ns, "get", "configmap", "web-config", "-o", "jsonpath={.data}")
	}
	before := live()
	if before != `4 nginx:1.28 {"greeting":"hello"}` {
		t.Fatalf("the live state changed by hand: %s", before)
	}
	text, sc := planApproveApply(t, b, cs, `return await tools.helm.upgrade({ release: 'web', namespace: '`+ns+`', chart: '`+chart+`', wait: false, values: { autoscaling: { enabled: false }, image: { tag: '1.29' }, config: { color: 'green' } } })`)
	upgraded, _ := sc["execution"].(string)
	if upgraded == "" || !strings.Contains(text, "to undo it") {
		t.Fatalf("the upgrade:\n%s", text)
	}
	if got := live(); got != `2 nginx:1.29 {"color":"green","greeting":"hello"}` {
		t.Fatalf("after the upgrade: %s\n%s", got, text)
	}
	revert := `return await tools.kubecode.revert({ execution: '` + upgraded + `' })`
	text, isErr, sc := execute(t, cs, map[string]any{"code": revert})
	for _, want := range []string{
		"1. helm.rollback HelmRelease " + ns + "/web:\n   revert: brings HelmRelease " + ns + "/web back to what it was before execution " + upgraded,
		"kubernetes.deployments.patch Deployment " + ns + "/web: revert: brings Deployment " + ns + "/web back to what it was before execution " + upgraded,
		"kubernetes.configmaps.patch ConfigMap " + ns + "/web-config: revert: brings",
	} {
		if isErr || !strings.Contains(text, want) {
			t.Errorf("the revert plan does not say %q:\n%s", want, text)
		}
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": revert, "approve": approved(t, b, sc)})
	if isErr || !strings.Contains(text, "3 of 3 changes applied") {
		t.Fatalf("the approved revert:\n%s", text)
	}
	if got := live(); got != before {
		t.Errorf("after the revert: %s, want the live state before the upgrade, %s", got, before)
	}
}

// TestRevertObjectByObject: the case — one approved execution
// scaled a Deployment, added an env var and deleted a Job; its revert
// answered the API's 422 (the saved Job kept its server-set selector and
// controller-uid labels) and reverted nothing. Now the Job is made again
// as kubectl replace would (no server-set selector), every object is
// planned, each plan line says it is a revert of which execution, and an
// object that cannot be restored is reported while the rest is planned.
func TestRevertObjectByObject(t *testing.T) {
	ns := webDeployment(t)
	apply(t, ns, `apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: NS}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: "busybox:1.36", command: [sh, -c, "true"]}]
`)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	saved := manifest(t, ns, "deployment", "web")
	_, sc := planApproveApply(t, b, cs, `const NS = '`+ns+`'
await tools.kubernetes.deployments.scale({ namespace: NS, name: 'web', replicas: 2 })
await tools.kubernetes.deployments.patch({ namespace: NS, name: 'web', patch: { spec: { template: { spec: { containers: [{ name: 'app', env: [{ name: 'DEBUG', value: '1' }] }] } } } } })
await tools.kubernetes.jobs.delete({ namespace: NS, name: 'once', propagationPolicy: 'Background' })
return 'changed'`)
	exec, _ := sc["execution"].(string)
	revert := `return await tools.kubecode.revert({ execution: '` + exec + `' })`
	text, isErr, sc := execute(t, cs, map[string]any{"code": revert})
	if isErr || !strings.Contains(text, "kubernetes.jobs.create Job "+ns+"/once: revert: brings Job "+ns+"/once back to what it was before execution "+exec) ||
		!strings.Contains(text, "kubernetes.deployments.patch Deployment "+ns+"/web: revert: brings") {
		t.Fatalf("revert plan:\n%s", text)
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": revert, "approve": approved(t, b, sc)})
	if isErr || !strings.Contains(text, "of 2 changes applied") && !strings.Contains(text, "of 3 changes applied") {
		t.Fatalf("revert:\n%s", text)
	}
	if d := kubectlDiff(t, saved); d != "" {
		t.Errorf("kubectl diff of the updated ConfigMap after the revert:\n%s", d)
	}
	if out := kubectl(t, "-n", ns, "get", "job", "once", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); out != "busybox:1.36" {
		t.Errorf("the Job was not made again: %q", out)
	}
}
