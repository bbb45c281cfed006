package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
)

// TestReviewPagesInABrowser: the approval page as a reviewer reads a
// Kubernetes, a Helm and a revert plan in a real browser — the summary
// line, one card per change with its impact and before → after table —
// also at a phone's width (nothing wider than the screen). With
// KUBECODE_SCREENSHOTS=DIR it saves each page there (docs/ holds them:
// KUBECODE_SCREENSHOTS=$PWD/docs go test ./broker -run TestReviewPagesInABrowser).
func TestReviewPagesInABrowser(t *testing.T) {
	ctx := browser(t)
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	_, announced := servePage(t, b)
	cs := connect(t, b)
	do, text := steps(t, ctx), pageText(t, ctx)
	// open plans code and opens its page through the link the server
	// printed, and checks what the page says.
	open := func(code, shot string, want map[string][]string) string {
		t.Helper()
		out, isErr, sc := execute(t, cs, map[string]any{"code": code})
		if isErr {
			t.Fatalf("plan:\n%s", out)
		}
		id := planID(t, sc)
		link := ""
		for _, m := range announcedLink.FindAllStringSubmatch(announced.String(), -1) {
			if m[1] == id {
				link = m[2]
			}
		}
		do(chromedp.EmulateViewport(1000, 900), chromedp.Navigate(link), chromedp.Click(chromedp.ID("open")), chromedp.WaitVisible(chromedp.ID("plan")))
		for sel, parts := range want {
			got := text(sel)
			for _, p := range parts {
				if !strings.Contains(got, p) {
					t.Errorf("%s: %s lacks %q:\n%s", shot, sel, p, got)
				}
			}
		}
		if dir := os.Getenv("KUBECODE_SCREENSHOTS"); dir != "" {
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if err = os.WriteFile(filepath.Join(dir, shot), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// At a phone's width nothing is wider than the screen.
		do(chromedp.EmulateViewport(390, 844))
		width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if width > 390 {
			t.Errorf("%s at 390 px: the page is %d px wide", shot, width)
		}
		return id
	}

	// A Kubernetes change of three fields.
	k8s := `await tools.kubernetes.deployments.patch({ namespace: '` + ns + `', name: 'web', patch: { spec: { replicas: 3, template: { spec: { containers: [{ name: 'app', image: 'registry.example/web:1.1', env: [{ name: 'LOG_LEVEL', value: 'debug' }] }] } } } } })`
	id := open(k8s, "approval-kubernetes.png", map[string][]string{
		"#summary":     {"0 to create, 1 to change, 0 to delete; pods: 1 replaced, 2 started"},
		"section.card": {"spec.replicas", "spec.template.spec.containers[app].image", `"registry.example/web:1.0"`, `"registry.example/web:1.1"`, `"debug"`},
		".impact":      {"rolls 1 pod of " + ns + "/web; starts 2 more pods of " + ns + "/web"},
	})
	if _, err := b.Decide(context.Background(), id, bridge.Decision{By: "reviewer", Channel: "cli", Approve: true, Verified: true}); err != nil {
		t.Fatal(err)
	}
	out, isErr, sc := execute(t, cs, map[string]any{"code": k8s, "approve": id})
	if isErr {
		t.Fatalf("approved run:\n%s", out)
	}
	execution := sc["execution"].(string)

	// A revert of it.
	open(`return await tools.kubecode.revert({ execution: '`+execution+`' })`, "approval-revert.png", map[string][]string{
		"h1":           {"Revert plan"},
		"#revert":      {"before execution " + execution},
		"section.card": {"spec.replicas", "3", "1", `"registry.example/web:1.1"`, `"registry.example/web:1.0"`},
		"#summary":     {"0 to create, 1 to change, 0 to delete"},
	})

	// A Helm upgrade against a cluster someone changed by hand: the page
	// reads as the scale-down it is.
	chart := filepath.Join(exampleCharts, "web-app")
	hns := webDeploymentNamespace(t)
	planApproveApply(t, b, cs, `return await tools.helm.install({ release: 'web', namespace: '`+hns+`', chart: '`+chart+`', wait: false, values: { autoscaling: { enabled: false } } })`)
	kubectl(t, "-n", hns, "scale", "deployment/web", "--replicas=4")
	kubectl(t, "-n", hns, "patch", "configmap/web-config", "--type=merge", "-p", `{"data":{"color":"red"}}`)
	open(`return await tools.helm.upgrade({ release: 'web', namespace: '`+hns+`', chart: '`+chart+`', wait: false, reuseValues: true, values: { replicaCount: 3, image: { tag: '1.28' } } })`,
		"approval-helm.png", map[string][]string{
			"#summary":     {"0 to create, 2 to change, 0 to delete; pods: 3 replaced, 1 stopped"},
			".impact":      {"rolls 3 pods of " + hns + "/web; stops 1 of the 4 pods of " + hns + "/web"},
			"section.card": {"data.color", `"red"`, `"blue"`, "spec.replicas", "4", "3", `"nginx:1.27"`, `"nginx:1.28"`},
		})

	// What the cluster will do afterwards comes first: the autoscaler
	// sets the replicas back.
	autoscale(t, ns, 1, 2)
	open(`await tools.kubernetes.deployments.scale({ namespace: '`+ns+`', name: 'web', replicas: 5 })`, "approval-will-not-last.png", map[string][]string{
		"#lasts":              {"1 of these changes will not last"},
		"section.card .lasts": {"will not last: HorizontalPodAutoscaler " + ns + "/web keeps Deployment " + ns + "/web between 1 and 2 replicas", "what would last: set the autoscaler's maxReplicas to 5"},
	})

	// A value of several lines is ordinary: no warning of invisible
	// characters.
	open(`await tools.kubernetes.configmaps.patch({ namespace: '`+ns+`', name: 'cfg', patch: { data: { 'site.conf': 'server {\n  listen 80;\n}\n' } } })`, "approval-lines.png", map[string][]string{
		"section.card": {"site.conf", `server {\n  listen 80;\n}\n`},
	})
	if body := text("body"); strings.Contains(body, "invisible") {
		t.Errorf("a value of several lines raises a warning:\n%s", body)
	}

	// A create says what it makes: a claim's size and class, every field
	// with its value.
	open(`await tools.kubernetes.persistentvolumeclaims.create({ namespace: '`+ns+`', object: { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '5Gi' } } } } })`, "approval-create.png", map[string][]string{
		"#summary":           {"1 to create, 0 to change, 0 to delete"},
		"section.card":       {"claims 5Gi of storage class fast, ReadWriteOnce"},
		"section.card table": {"Field", "Value", "spec.resources.requests.storage", `"5Gi"`, "spec.storageClassName", `"fast"`},
	})
	if card := text("section.card table"); strings.Contains(card, "Before") {
		t.Errorf("a create's table has a Before column:\n%s", card)
	}

	// A grant says what matters first; it needs two people, and the
	// page's one-time link (one local user) cannot be both: no Approve.
	open(`await tools.kubernetes.rolebindings.create({ namespace: '`+ns+`', object: { metadata: { name: 'alice-edit' }, subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }], roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' } } })`, "approval-grant.png", map[string][]string{
		"section.card .warn": {"grants permissions — what matters: writes Secrets; reads Secrets' values; runs commands in pods"},
		"#cannot":            {"You cannot approve this plan: ", "needs two people, each approving as themselves"},
	})
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#approve').length`)); err != nil || n != 0 {
		t.Errorf("a seat that cannot approve the plan shows %d Approve buttons (%v)", n, err)
	}

	// A command is a call: no object to change, no Before column.
	ens := execPods(t)
	open(`await tools.kubernetes.pods.exec({ namespace: '`+ens+`', name: 'client', command: ['sh', '-c', 'echo hi > /tmp/x'] })`, "approval-command.png", map[string][]string{
		"#summary":           {"1 command(s) to run in containers; no object created, changed or deleted"},
		"section.card h3":    {"run a command in Pod " + ens + "/client"},
		"section.card table": {"Argument", "Value sent", "command", "echo hi"},
	})
	if card := text("section.card table"); strings.Contains(card, "Before") || strings.Contains(card, "(none)") {
		t.Errorf("a command's table has a Before column:\n%s", card)
	}
}
