package broker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/bridge/policy"
)

// TestPlanForeseesTheCluster: a plan names first what will act on the
// object once the change is made — an autoscaler that sets the replicas
// back, a GitOps controller, a Helm release, a quota without room, a
// limit range, an owning Deployment — and what would last; approved, the
// answer reads the object again and says whether the change held.
func TestPlanForeseesTheCluster(t *testing.T) {
	ns := webDeployment(t)
	autoscale(t, ns, 1, 2)
	apply(t, ns, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: synced
  namespace: NS
  annotations: {argocd.argoproj.io/tracking-id: "shop:apps/Deployment:NS/synced", meta.helm.sh/release-name: shop, meta.helm.sh/release-namespace: NS}
spec:
  replicas: 1
  selector: {matchLabels: {app: synced}}
  template:
    metadata: {labels: {app: synced}}
    spec:
      containers: [{name: app, image: registry.example/synced:1, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods, namespace: NS}
spec: {hard: {pods: "3"}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: small, namespace: NS}
spec:
  limits:
  - type: Container
    max: {cpu: 500m}
`)
	// The quota controller fills status.used; the autoscaler its status.
	eventually(t, func(s string) bool { return s != "" }, "-n", ns, "get", "resourcequota", "pods", "-o", "jsonpath={.status.used.pods}")
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	for _, tc := range []struct {
		name, code string
		first      string // the plan's first line of the change, after its op and object
		also       []string
	}{{
		name:  "autoscaler above its max",
		code:  `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 5 }); return 'ok'`,
		first: "will not last: HorizontalPodAutoscaler " + ns + "/web keeps Deployment " + ns + "/web between 1 and 2 replicas: within seconds it sets spec.replicas back to 2; what would last: set the autoscaler's maxReplicas to 5",
		also:  []string{"will not happen in full: ResourceQuota " + ns + "/pods has room for"},
	}, {
		name:  "GitOps and Helm",
		code:  `await tools.kubernetes.deployments.patch({ namespace: '` + ns + `', name: 'synced', patch: { spec: { template: { spec: { containers: [{ name: 'app', image: 'registry.example/synced:2' }] } } } } }); return 'ok'`,
		first: "will not last: Argo CD application shop manages it from git: a sync puts back what git holds",
		also:  []string{"afterwards: Helm release " + ns + "/shop owns it: the next helm upgrade of shop puts back what its chart renders"},
	}, {
		name:  "limit range",
		code:  `await tools.kubernetes.deployments.patch({ namespace: '` + ns + `', name: 'synced', patch: { spec: { template: { spec: { containers: [{ name: 'app', resources: { requests: { cpu: '1' } } }] } } } } }); return 'ok'`,
		first: "will not last: Argo CD application shop",
		also:  []string{"will not happen in full: LimitRange " + ns + "/small refuses the pods of Deployment " + ns + "/synced: container app's cpu request 1 is above the most, 500m"},
	}, {
		name:  "a new workload beyond the quota",
		code:  `await tools.kubernetes.deployments.create({ namespace: '` + ns + `', object: { metadata: { name: 'extra' }, spec: { replicas: 5, selector: { matchLabels: { app: 'extra' } }, template: { metadata: { labels: { app: 'extra' } }, spec: { containers: [{ name: 'app', image: 'registry.example/extra:1', resources: { requests: { cpu: '100m' } } }] } } } } }); return 'ok'`,
		first: "will not happen in full: ResourceQuota " + ns + "/pods has room for ",
		also:  []string{" of the 5 new pods of Deployment " + ns + "/extra (pods: "},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			text, isErr, _ := execute(t, cs, map[string]any{"code": tc.code})
			line := planLine(text)
			if isErr || !strings.Contains(line, ": "+tc.first) {
				t.Fatalf("the plan's line does not start with %q:\n%s", tc.first, text)
			}
			for _, a := range tc.also {
				if !strings.Contains(line, a) {
					t.Errorf("the plan does not say %q:\n%s", a, text)
				}
			}
		})
	}

	// Approved, the scale is made, the autoscaler sets it back, and the
	// answer says so.
	code := `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 5 }); return 'scaled'`
	_, _, sc := execute(t, cs, map[string]any{"code": code})
	text, isErr, sc := execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc)})
	if isErr || !strings.Contains(text, "did not hold: 5 s later Deployment "+ns+"/web has spec.replicas: 5 → 2 — as the plan foresaw: HorizontalPodAutoscaler "+ns+"/web") {
		t.Fatalf("the approved scale's answer:\n%s", text)
	}
	if held, _ := sc["held"].([]any); len(held) != 1 || fmt.Sprint(held[0].(map[string]any)["held"]) != "false" {
		t.Errorf("structured held: %v", sc["held"])
	}
	if got := replicas(t, ns); got != "2" {
		t.Errorf("kubectl: %s replicas, want the autoscaler's 2", got)
	}
}

// planLine is the numbered line of a one-change plan in an answer.
func planLine(text string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, "1. ") {
			return l
		}
	}
	return ""
}

// autoscale gives Deployment web of namespace ns an autoscaler keeping it
// between lo and hi replicas on cpu at 70 % of requests.
func autoscale(t *testing.T, ns string, lo, hi int) {
	t.Helper()
	apply(t, ns, fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: NS}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: %d
  maxReplicas: %d
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
`, lo, hi))
}

// TestPlanReadsGitOpsObjects: what a GitOps controller does to a hand-made
// change is read from its own object — an Argo CD Application's automated
// sync and self-heal, a Flux Kustomization's interval or suspension, a
// Flux HelmRelease's drift detection — so the plan says whether the change
// will not last, or lasts until the next sync.
func TestPlanReadsGitOpsObjects(t *testing.T) {
	crd := func(group, kind, plural string, versions ...string) string {
		var vs strings.Builder
		for i, v := range versions {
			fmt.Fprintf(&vs, "  - {name: %s, served: true, storage: %t, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n", v, i == 0)
		}
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s.%s}
spec:
  group: %s
  scope: Namespaced
  names: {kind: %s, plural: %s, singular: %s}
  versions:
%s`, plural, group, group, kind, plural, strings.ToLower(kind), vs.String())
	}
	apply(t, "", crd("argoproj.io", "Application", "applications", "v1alpha1")+"---\n"+
		crd("kustomize.toolkit.fluxcd.io", "Kustomization", "kustomizations", "v1")+"---\n"+
		crd("helm.toolkit.fluxcd.io", "HelmRelease", "helmreleases", "v2"))
	crds := []string{"applications.argoproj.io", "kustomizations.kustomize.toolkit.fluxcd.io", "helmreleases.helm.toolkit.fluxcd.io"}
	t.Cleanup(func() {
		// The other tests' catalog has none of them (HelmRelease would
		// answer "list helm releases").
		kubectl(t, append([]string{"delete", "--wait", "--timeout", "120s"}, prefixed("crd/", crds)...)...)
	})
	for _, name := range crds {
		kubectl(t, "wait", "--for", "condition=established", "crd/"+name, "--timeout", "60s")
	}
	ns := webDeployment(t)
	apply(t, ns, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: healer, namespace: NS}
spec: {syncPolicy: {automated: {prune: true, selfHeal: true}}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: manual, namespace: NS}
spec: {project: default}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: NS}
spec: {interval: 5m, suspend: true}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: shop, namespace: NS}
spec: {interval: 10m, driftDetection: {mode: enabled}}
`)
	workload := func(name, labels string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: NS, labels: {%s}}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec: {containers: [{name: app, image: registry.example/%s:1}]}
`, name, labels, name, name, name)
	}
	// Applications in any namespace: the tracking label names it ns_app.
	apply(t, ns, workload("healed", "argocd.argoproj.io/instance: NS_healer")+"---\n"+
		workload("manual", "argocd.argoproj.io/instance: NS_manual")+"---\n"+
		workload("kustomized", "kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: NS")+"---\n"+
		workload("released", "helm.toolkit.fluxcd.io/name: shop, helm.toolkit.fluxcd.io/namespace: NS"))
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	for _, tc := range []struct{ name, want string }{
		{"healed", "will not last: Argo CD application " + ns + "/healer syncs it from git with self-heal on: within seconds it puts back what git holds; what would last: change it in git, or turn the application's self-heal off first"},
		{"manual", "afterwards: Argo CD application " + ns + "/manual syncs it from git when someone syncs it (no automated sync): the change lasts until then"},
		{"kustomized", "afterwards: Flux Kustomization " + ns + "/apps is suspended: the change lasts until the Kustomization is resumed"},
		{"released", "will not last: Flux HelmRelease " + ns + "/shop corrects drift every 10m (driftDetection: enabled)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, isErr, _ := execute(t, cs, map[string]any{"code": `await tools.kubernetes.deployments.patch({ namespace: '` + ns + `', name: '` + tc.name + `', patch: { metadata: { annotations: { note: 'by hand' } } } }); return 'ok'`})
			if isErr || !strings.Contains(text, tc.want) {
				t.Errorf("the plan does not say %q:\n%s", tc.want, text)
			}
		})
	}
}

// prefixed is each of names after prefix.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}
