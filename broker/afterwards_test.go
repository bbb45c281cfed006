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
