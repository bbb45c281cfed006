package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/internal/helmdemo"
	"github.com/kubecode/kubecode/internal/tokencount"
)

var (
	exampleCharts, _  = filepath.Abs("../examples/charts")
	helmTestCharts, _ = filepath.Abs("../adapters/helm/testdata/charts")
)

// TestHelmLifecycle drives a release through a real MCP client: each
// change is planned first (nothing happens, kubectl agrees), then applied
// by approval; install waits for the Deployment to be Available, upgrade
// with values, history, rollback to the first revision, uninstall; drift
// is empty after install and upgrade.
func TestHelmLifecycle(t *testing.T) {
	skipUnderRace(t)
	ns := webDeploymentNamespace(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	chart := filepath.Join(exampleCharts, "web-app")
	target := fmt.Sprintf(`release: 'shop', namespace: '%s'`, ns)
	// plan runs code, checks the plan's answer, approves it and returns
	// the approved run's answer.
	plan := func(code string, wantPlan ...string) string {
		t.Helper()
		before := kubectl(t, "-n", ns, "get", "deployments,services,configmaps,hpa,secrets", "-o", "name")
		text, isErr, sc := execute(t, cs, map[string]any{"code": code})
		if isErr || !strings.Contains(text, "dry run only: nothing was applied") {
			t.Fatalf("planned run:\n%s", text)
		}
		if after := kubectl(t, "-n", ns, "get", "deployments,services,configmaps,hpa,secrets", "-o", "name"); after != before {
			t.Fatalf("planning changed the namespace: before\n%s\nafter\n%s", before, after)
		}
		for _, w := range wantPlan {
			if !strings.Contains(text, w) {
				t.Errorf("the plan lacks %q:\n%s", w, text)
			}
		}
		text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc), "timeout": 150})
		if isErr || !strings.Contains(text, "1 of 1 changes applied") {
			t.Fatalf("approved run:\n%s", text)
		}
		return text
	}
	image := func() string {
		return kubectl(t, "-n", ns, "get", "deployment", "shop", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	}
	noDrift := func(when string) {
		t.Helper()
		var d helm.Drift
		execJSON(t, cs, `return await tools.helm.drift({`+target+`})`, &d)
		if len(d.Rows) != 0 || d.Checked != 4 {
			t.Errorf("drift %s: %d objects checked, rows %v", when, d.Checked, d.Rows)
		}
	}

	install := `const r = await tools.helm.install({` + target + `, chart: '` + chart + `'})
return r.dryRun + ' revision ' + r.release.revision + ': ' + r.changes.join(', ')`
	text := plan(install, "helm.install HelmRelease "+ns+"/shop:\n   install web-app 0.1.0 as release "+ns+"/shop", "+ Deployment "+ns+"/shop", "+ HorizontalPodAutoscaler "+ns+"/shop",
		"true revision 1: create ConfigMap/shop-config, create Service/shop, create Deployment/shop, create HorizontalPodAutoscaler/shop")
	if !strings.HasPrefix(text, "false revision 1:") {
		t.Errorf("approved install:\n%s", text)
	}
	if got := kubectl(t, "-n", ns, "get", "deployment", "shop", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`); got != "True" {
		t.Errorf("kubectl: Deployment shop Available=%q after the install waited", got)
	}
	noDrift("after install")

	upgrade := `const r = await tools.helm.upgrade({` + target + `, chart: '` + chart + `', values: {image: {tag: '1.28'}}})
return r.dryRun + ' revision ' + r.release.revision + ': ' + r.changes.join(', ')`
	text = plan(upgrade, `~ Deployment `+ns+`/shop: spec.template.spec.containers[web].image: "nginx:1.27" → "nginx:1.28"`)
	if !strings.HasPrefix(text, "false revision 2: update Deployment/shop: spec.template.spec.containers[web].image") || image() != "nginx:1.28" {
		t.Errorf("approved upgrade (kubectl: image %s):\n%s", image(), text)
	}
	noDrift("after upgrade")

	var history []string
	execJSON(t, cs, `return (await tools.helm.history({`+target+`})).map((r) => r.revision + ' ' + r.status)`, &history)
	if diff := cmp.Diff([]string{"1 superseded", "2 deployed"}, history); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}

	rollback := `const r = await tools.helm.rollback({` + target + `, revision: 1})
return r.dryRun + ' revision ' + r.release.revision + ': ' + r.changes.join(', ')`
	text = plan(rollback, "roll back release "+ns+"/shop from revision 2 to revision 1")
	if !strings.HasPrefix(text, "false revision 3: update Deployment/shop") || image() != "nginx:1.27" {
		t.Errorf("approved rollback (kubectl: image %s):\n%s", image(), text)
	}
	var values map[string]any
	execJSON(t, cs, `return await tools.helm.get_values({`+target+`})`, &values)
	if len(values) != 0 {
		t.Errorf("values after rolling back to the install: %v", values)
	}

	uninstall := `const r = await tools.helm.uninstall({` + target + `})
return r.dryRun + ': ' + r.changes.length + ' objects'`
	text = plan(uninstall, "uninstall release "+ns+"/shop (revision 3, web-app 0.1.0)", "- Deployment "+ns+"/shop")
	if !strings.HasPrefix(text, "false: 4 objects") {
		t.Errorf("approved uninstall:\n%s", text)
	}
	if got := kubectl(t, "-n", ns, "get", "deployments,services,configmaps,hpa,secrets", "-l", "app.kubernetes.io/instance=shop", "-o", "name"); got != "" {
		t.Errorf("kubectl: left after uninstall: %s", got)
	}
	var list []helm.Release
	execJSON(t, cs, `return await tools.helm.list({namespace: '`+ns+`'})`, &list)
	if len(list) != 0 {
		t.Errorf("releases after uninstall: %v", list)
	}
}

// webDeploymentNamespace returns a new namespace, skipping without kubectl.
func webDeploymentNamespace(t *testing.T) string {
	t.Helper()
	kubectl(t, "version", "--client")
	return cp.Namespace(t)
}

// TestHelmPolicy: Helm's changes pass the bridge's rules like any other:
// read-only refuses them, the namespaces rule judges each object, a chart
// holding a Secret is refused while secret writes are off, and charts from
// outside the allowed sources are refused before anything renders.
func TestHelmPolicy(t *testing.T) {
	skipUnderRace(t)
	ns := webDeploymentNamespace(t)
	chart := filepath.Join(exampleCharts, "web-app")
	for _, tc := range []struct {
		name   string
		policy policy.Policy
		code   string
		want   string
	}{
		{"read-only", policy.Policy{Mode: policy.ModeReadOnly},
			`await tools.helm.install({release: 'a', namespace: '` + ns + `', chart: '` + chart + `'})`, "helm.install changes the cluster and this server is read-only"},
		{"outside the namespaces", policy.Policy{Mode: policy.ModeApply, Namespaces: []string{"elsewhere"}},
			`await tools.helm.install({release: 'a', namespace: '` + ns + `', chart: '` + chart + `'})`, `namespace "` + ns + `" is outside the namespaces changes are allowed in`},
		{"a chart with a Secret", policy.Policy{Mode: policy.ModeApply},
			`await tools.helm.install({release: 'a', namespace: '` + ns + `', chart: '` + filepath.Join(helmTestCharts, "kinds") + `'})`, "Secret " + ns + "/a-db holds secret values and writes to it are refused"},
		{"a denied kind", policy.Policy{Mode: policy.ModeApply, DeniedKinds: []string{"HorizontalPodAutoscaler"}},
			`await tools.helm.install({release: 'a', namespace: '` + ns + `', chart: '` + chart + `'})`, "changes to HorizontalPodAutoscaler objects are denied by policy"},
		{"a chart from elsewhere", policy.Policy{Mode: policy.ModeApply},
			`await tools.helm.install({release: 'a', namespace: '` + ns + `', chart: '/etc'})`, `chart "/etc" is not from an allowed chart source`},
		{"a repository not allowed", policy.Policy{Mode: policy.ModeApply},
			`await tools.helm.template({chart: 'bitnami/nginx'})`, `chart "bitnami/nginx" is not from an allowed chart source`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBrokerPolicy(t, cp.Admin, tc.policy)
			text, isErr, _ := execute(t, connect(t, b), map[string]any{"code": tc.code})
			if !isErr || !strings.Contains(text, tc.want) {
				t.Errorf("answer, want an error saying %q:\n%s", tc.want, text)
			}
			if got := kubectl(t, "-n", ns, "get", "deployments,secrets,statefulsets", "-o", "name"); got != "" {
				t.Errorf("kubectl: refused change left %s", got)
			}
		})
	}
}

var (
	helmDemoOnce sync.Once
	helmDemoErr  error
)

// seedHelmDemo installs the demo's release (helm-demo/web, edited by
// hand since), once for the tests that read it.
func seedHelmDemo(t *testing.T) {
	t.Helper()
	helmDemoOnce.Do(func() { helmDemoErr = helmdemo.Seed(context.Background(), cp.Admin, exampleCharts) })
	if helmDemoErr != nil {
		t.Fatal(helmDemoErr)
	}
}

// TestExampleHelmDriftAudit runs examples/helm-drift-audit.ts on the demo's
// release: both ways find exactly the demo's hand edits, in an answer of
// fewer than 1,000 tokens.
func TestExampleHelmDriftAudit(t *testing.T) {
	seedHelmDemo(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	text, isErr := callText(t, cs, "execute_code", map[string]any{"code": readExample(t, "helm-drift-audit.ts")})
	if isErr {
		t.Fatalf("example failed:\n%s", text)
	}
	var got struct {
		Summary    string   `json:"summary"`
		BuiltIn    []string `json:"builtIn"`
		ScriptOnly []string `json:"scriptOnly"`
	}
	execJSON(t, cs, readExample(t, "helm-drift-audit.ts"), &got)
	if len(got.BuiltIn) != len(helmdemo.Edits) || len(got.ScriptOnly) != len(helmdemo.Edits) {
		t.Errorf("want %d rows each way:\n%s", len(helmdemo.Edits), text)
	}
	for _, e := range helmdemo.Edits {
		found := false
		for _, r := range got.BuiltIn {
			found = found || strings.HasPrefix(r, e[0]+" "+e[1]+" "+e[2])
		}
		if !found {
			t.Errorf("no row for %v:\n%s", e, text)
		}
	}
	n := tokencount.Count(text)
	t.Logf("answer: %d o200k_base tokens\n%s", n, text)
	if n >= 1000 {
		t.Errorf("answer of %d tokens, want < 1,000", n)
	}
}

// TestHelmSearch asks in plain words what the Helm operations answer, over
// the whole catalog (Kubernetes and Helm): the right one comes first, or
// among the top five where another operation answers too.
func TestHelmSearch(t *testing.T) {
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	for _, tc := range []struct {
		query string
		first string
		want  []string
	}{
		{query: "what values does release web use", first: "helm.get_values"},
		{query: "roll back a release", first: "helm.rollback"},
		{query: "what changed since the release", first: "helm.drift"},
		{query: "helm drift audit", first: "helm.drift"},
		{query: "list helm releases", first: "helm.list"},
		{query: "which charts are installed", first: "helm.list"},
		{query: "release history", first: "helm.history"},
		{query: "install a chart", first: "helm.install"},
		{query: "upgrade a release with new values", first: "helm.upgrade"},
		{query: "uninstall a release", first: "helm.uninstall"},
		{query: "render a chart without installing", first: "helm.template"},
		{query: "objects a release deployed", want: []string{"helm.get_manifest", "helm.status"}},
		{query: "release notes", first: "helm.get_notes"},
		{query: "roll back a deployment", first: "kubernetes.deployments.rollout.undo"},
		{query: "scale a deployment", first: "kubernetes.deployments.scale"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			// The first question of a session: nothing was sent before.
			text, isErr := callText(t, connect(t, b), "search_tools", map[string]any{"query": tc.query})
			if isErr {
				t.Fatalf("search failed: %s", text)
			}
			got := declaredOps(text)
			if tc.first != "" && (len(got) == 0 || got[0] != tc.first) {
				t.Errorf("%q: first is not %s: %v", tc.query, tc.first, got)
			}
			for _, w := range tc.want {
				if i := slices.Index(got, w); i < 0 || i >= 5 {
					t.Errorf("%q: %s not in the top 5: %v", tc.query, w, got)
				}
			}
		})
	}
}

// TestHelmDirect: in direct mode Helm's reads are tools of their own, and
// a list of releases is a table as helm list prints it; its changes are
// not served (they need a plan and its approval).
func TestHelmDirect(t *testing.T) {
	ns := cp.Namespace(t)
	h, err := helm.New(cp.Admin, &helm.Options{ChartSources: []string{exampleCharts}})
	if err != nil {
		t.Fatal(err)
	}
	args := fmt.Sprintf(`{"release": "web", "namespace": %q, "chart": %q, "wait": false}`, ns, filepath.Join(exampleCharts, "web-app"))
	if _, err := h.Call(context.Background(), "helm.install", []byte(args)); err != nil {
		t.Fatal(err)
	}
	names, call := toolNames(t, newBrokerMode(t, cp.Admin, broker.ModeDirect))
	for _, want := range []string{"helm_list", "helm_drift", "helm_get_values"} {
		if !slices.Contains(names, want) {
			t.Errorf("direct mode lacks tool %s", want)
		}
	}
	if slices.Contains(names, "helm_install") {
		t.Error("direct mode serves helm_install")
	}
	text, isErr := call("helm_list", map[string]any{"namespace": ns})
	if isErr {
		t.Fatal(text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 2 || !slices.Equal(strings.Fields(lines[0]), []string{"NAME", "NAMESPACE", "REVISION", "STATUS", "CHART", "VERSION", "UPDATED"}) ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "web "+ns+" 1 deployed web-app 0.1.0 ") {
		t.Errorf("helm_list:\n%s", text)
	}
}
