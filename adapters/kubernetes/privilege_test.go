package kubernetes

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// TestPrivilegeByWhatItGrants: the red-team's RBAC findings, each as
// written. A change is judged by what it grants wherever the grant lands
// (a label that a ClusterRole's aggregationRule selects hands the role's
// rules to every holder of the aggregating role), and a channel into
// workloads (pods/exec, attach, portforward, proxy, serviceaccounts/token)
// is never a read. A widening stays privileged, is spelled out in the
// plan's diff, and is refused in apply mode; narrow changes stay ordinary.
func TestPrivilegeByWhatItGrants(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	ctx := context.Background()
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	// A custom aggregating role and a leaf it does not select yet.
	agg, leaf := "agg-"+ns, "leaf-"+ns
	label := "kubecode.test/aggregate-to-" + ns
	for _, r := range []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: agg}, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: leaf}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}},
	} {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), r.Name, metav1.DeleteOptions{}) })
	}
	apply := policy.Policy{Mode: policy.ModeApply}.WithDefaults()
	plan := policy.Policy{}.WithDefaults()
	for _, tc := range []struct {
		name, op, args string
		privileged     bool
		diff           []string // each appears in the change's diff
	}{
		{"cluster-admin labelled aggregate-to-view", "kubernetes.clusterroles.patch",
			`{"name":"cluster-admin","patch":{"metadata":{"labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}}}}`,
			true, []string{"grants whoever holds ClusterRole view (it aggregates this role by its labels) anew: * on *"}},
		{"a leaf labelled for a custom aggregationRule", "kubernetes.clusterroles.patch",
			`{"name":"` + leaf + `","patch":{"metadata":{"labels":{"` + label + `":"true"}}}}`,
			true, []string{"grants whoever holds ClusterRole " + agg + " (it aggregates this role by its labels) anew: get on secrets"}},
		{"a leaf labelled for no aggregationRule", "kubernetes.clusterroles.patch",
			`{"name":"` + leaf + `","patch":{"metadata":{"labels":{"team":"web"}}}}`,
			false, nil},
		{"a ClusterRole gaining an aggregationRule", "kubernetes.clusterroles.patch",
			`{"name":"` + leaf + `","patch":{"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"rbac.authorization.k8s.io/aggregate-to-admin":"true"}}]}}}`,
			true, []string{"grants: the rules of every ClusterRole its aggregationRule selects"}},
		{"get pods/exec", "kubernetes.roles.create",
			`{"namespace":"` + ns + `","object":{"metadata":{"name":"exec"},"rules":[{"apiGroups":[""],"resources":["pods/exec"],"verbs":["get"]}]}}`,
			true, []string{"grants whoever holds Role exec anew: what matters first: runs commands in pods, attaches to them or forwards their ports (pods/exec, attach, portforward) — the full list: get on pods/exec"}},
		{"get pods/attach", "kubernetes.roles.create",
			`{"namespace":"` + ns + `","object":{"metadata":{"name":"attach"},"rules":[{"apiGroups":[""],"resources":["pods/attach"],"verbs":["get"]}]}}`, true, nil},
		{"get pods/portforward", "kubernetes.roles.create",
			`{"namespace":"` + ns + `","object":{"metadata":{"name":"pf"},"rules":[{"apiGroups":[""],"resources":["pods/portforward"],"verbs":["get"]}]}}`, true, nil},
		{"get services/proxy", "kubernetes.roles.create",
			`{"namespace":"` + ns + `","object":{"metadata":{"name":"proxy"},"rules":[{"apiGroups":[""],"resources":["services/proxy"],"verbs":["get"]}]}}`, true, nil},
		{"reads of pods and their logs", "kubernetes.roles.create",
			`{"namespace":"` + ns + `","object":{"metadata":{"name":"reader"},"rules":[{"apiGroups":[""],"resources":["pods","pods/log"],"verbs":["get","list"]}]}}`, false, nil},
		{"a developer made admin of their namespace", "kubernetes.rolebindings.create",
			`{"namespace":"` + ns + `","object":{"metadata":{"name":"alice-admin"},"subjects":[{"kind":"User","name":"alice","apiGroup":"rbac.authorization.k8s.io"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"}}}`,
			true, []string{"grants User/alice in namespace " + ns + ", through ClusterRole admin: ", "pods/exec", "(and whatever is aggregated into admin later)"}},
		// ClusterRole edit is about 80 grants: what matters comes first.
		{"alice given edit", "kubernetes.rolebindings.create",
			`{"namespace":"` + ns + `","object":{"metadata":{"name":"alice-edit"},"subjects":[{"kind":"User","name":"alice","apiGroup":"rbac.authorization.k8s.io"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}}`,
			true, []string{"grants User/alice in namespace " + ns + ", through ClusterRole edit: what matters first: writes Secrets; reads Secrets' values; runs commands in pods, attaches to them or forwards their ports (pods/exec, attach, portforward); impersonates users, groups or ServiceAccounts;",
				"creates pods or workloads, which run as any ServiceAccount of the namespace and read its Secrets — the full list: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := a.Preview(ctx, tc.op, json.RawMessage(tc.args))
			if err != nil {
				t.Fatalf("Preview: %v", err)
			}
			if c.Privileged != tc.privileged {
				t.Errorf("privileged %v, want %v (checked: %q, diff %q)", c.Privileged, tc.privileged, c.Validated, c.Diff)
			}
			diff := strings.Join(c.Diff, "\n")
			for _, want := range tc.diff {
				if !strings.Contains(diff, want) {
					t.Errorf("the diff does not say %q:\n%s", want, diff)
				}
			}
			if tc.privileged && strings.Contains(c.Validated, "narrows") {
				t.Errorf("a widening reads as a narrowing: %q", c.Validated)
			}
			r, _ := apply.Judge(c)
			if refused := r != nil && r.Rule == policy.RulePermissionWrites; refused != tc.privileged {
				t.Errorf("apply mode: refusal %v, want refused %v", r, tc.privileged)
			}
			if r, _ := plan.Judge(c); r != nil {
				t.Errorf("plan mode refused it (%s): a person should decide", r.Message)
			}
		})
	}
	// An aggregating role the same plan creates first counts too.
	pctx := catalog.WithPlanState(ctx, &catalog.PlanState{})
	label2 := "kubecode.test/planned-" + ns
	if _, _, err := a.Preview(pctx, "kubernetes.clusterroles.create", json.RawMessage(`{"object":{"metadata":{"name":"planned-`+ns+`"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"`+label2+`":"true"}}]}}}`)); err != nil {
		t.Fatal(err)
	}
	c, _, err := a.Preview(pctx, "kubernetes.clusterroles.patch", json.RawMessage(`{"name":"`+leaf+`","patch":{"metadata":{"labels":{"`+label2+`":"true"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Privileged || !strings.Contains(strings.Join(c.Diff, "\n"), "grants whoever holds ClusterRole planned-"+ns+" (it aggregates this role by its labels) anew: get on secrets") {
		t.Errorf("a label for a role the plan creates: privileged %v, diff %q, checked %q", c.Privileged, c.Diff, c.Validated)
	}
	// Nothing above changed the cluster: view still grants no Secret.
	if r, err := cs.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil || r.Labels["rbac.authorization.k8s.io/aggregate-to-view"] != "" {
		t.Errorf("cluster-admin was changed: %v %v", r.Labels, err)
	}
}

// TestOneJudgmentPerObject: each rule judges the object as the change
// leaves it, through every path that can reach it — a typed create, a
// server-side apply, a patch, a manifest (kubernetes.apply) — so no path
// is the one the rule forgot (the red-team's namespaces.create with
// enforce: privileged was planned as "created" while the same Namespace
// through kubernetes.apply was refused). Helm's objects: tricks_test.go.
func TestOneJudgmentPerObject(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	ctx := context.Background()
	var v map[string]any
	call(t, a, "kubernetes.deployments.create", `{"namespace":"`+ns+`","object":`+deploymentManifest("web", "nginx:1.27", 1)+`}`, &v)
	open := func(name, level string) string {
		return `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `","labels":{"pod-security.kubernetes.io/enforce":"` + level + `"}}}`
	}
	// The red-team's pod: 3 edits of a Deployment, then a create.
	const bad = `"hostPID":true,"securityContext":{"runAsUser":0,"seccompProfile":{"type":"Unconfined"}},"containers":[{"name":"app","image":"nginx:1.27","securityContext":{"privileged":true,"capabilities":{"add":["SYS_ADMIN"]}}}]`
	badDeployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},"spec":{` + bad + `}}}}`
	type judged struct{ Critical, PodSecurity bool }
	for _, tc := range []struct {
		name, op, args string
		want           judged
	}{
		{"namespace opened by a typed create", "kubernetes.namespaces.create", `{"object":` + open(ns+"-a", "privileged") + `}`, judged{Critical: true}},
		{"namespace opened by a manifest", ApplyOp, `{"manifest":` + open(ns+"-b", "privileged") + `}`, judged{Critical: true}},
		{"namespace opened by a patch", "kubernetes.namespaces.patch", `{"name":"` + ns + `","patch":{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}}`, judged{Critical: true}},
		{"a warn level added to a namespace", "kubernetes.namespaces.patch", `{"name":"` + ns + `","patch":{"metadata":{"labels":{"pod-security.kubernetes.io/warn":"baseline"}}}}`, judged{}},
		{"namespace closed by a typed create", "kubernetes.namespaces.create", `{"object":` + open(ns+"-c", "restricted") + `}`, judged{}},
		{"namespace closed by a manifest", ApplyOp, `{"manifest":` + open(ns+"-d", "restricted") + `}`, judged{}},
		{"privileged pod by a typed create", "kubernetes.pods.create", `{"namespace":"` + ns + `","object":{"metadata":{"name":"p"},"spec":{` + bad + `}}}`, judged{PodSecurity: true}},
		{"privileged template by a typed create", "kubernetes.deployments.create", `{"namespace":"` + ns + `","object":` + badDeployment + `}`, judged{PodSecurity: true}},
		{"privileged template by a server-side apply", "kubernetes.deployments.apply", `{"namespace":"` + ns + `","manifest":` + badDeployment + `}`, judged{PodSecurity: true}},
		{"privileged template by a manifest", ApplyOp, `{"namespace":"` + ns + `","manifest":[` + badDeployment + `]}`, judged{PodSecurity: true}},
		{"privileged template by a patch of three edits", "kubernetes.deployments.patch", `{"namespace":"` + ns + `","name":"web","patch":{"spec":{"template":{"spec":{"hostPID":true,"containers":[{"name":"app","securityContext":{"privileged":true}}]}}}}}`, judged{PodSecurity: true}},
		{"an ordinary template by a typed create", "kubernetes.deployments.create", `{"namespace":"` + ns + `","object":` + deploymentManifest("plain", "nginx:1.27", 1) + `}`, judged{}},
		{"a scale of the workload", "kubernetes.deployments.scale", `{"namespace":"` + ns + `","name":"web","replicas":2}`, judged{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := a.Preview(ctx, tc.op, json.RawMessage(tc.args))
			if err != nil {
				t.Fatalf("Preview: %v", err)
			}
			got := judged{Critical: c.Critical != "", PodSecurity: c.PodSecurity != ""}
			for _, o := range c.Objects {
				got.Critical = got.Critical || o.Critical != ""
				got.PodSecurity = got.PodSecurity || o.PodSecurity != ""
			}
			if got != tc.want {
				t.Errorf("judged %+v, want %+v (critical %q, pod security %q, diff %q)", got, tc.want, c.Critical, c.PodSecurity, c.Diff)
			}
			r, _ := policy.Policy{}.WithDefaults().Judge(c)
			if refused := r != nil; refused != (tc.want != judged{}) {
				t.Errorf("plan mode: refusal %v", r)
			}
			if tc.want.PodSecurity {
				diff := strings.Join(c.Diff, "\n")
				if !strings.Contains(diff, "⚠ pod security: its pods would violate the baseline Pod Security Standard") {
					t.Errorf("the plan does not say it:\n%s", diff)
				}
				if r, _ := (policy.Policy{AllowPrivilegedPods: true}).WithDefaults().Judge(c); r != nil && r.Rule == policy.RulePodSecurity {
					t.Errorf("allowPrivilegedPods: still refused: %s", r.Message)
				}
			}
		})
	}
	// What a create makes says where its pods stand.
	c, _, err := a.Preview(ctx, "kubernetes.deployments.create", json.RawMessage(`{"namespace":"`+ns+`","object":`+deploymentManifest("named", "nginx:1.27", 1)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := strings.Join(c.Diff, "\n"); !strings.Contains(diff, "pod security: baseline; not restricted: allowPrivilegeEscalation != false") {
		t.Errorf("the create does not name its restricted violations:\n%s", diff)
	}
}

// TestDisguisedRestart: a patch of the pod template's annotations on a
// healthy Deployment rolls every pod exactly as rollout.restart does, and
// raises the same signal for the audit (the red-team's "safe pass").
func TestDisguisedRestart(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	var v map[string]any
	call(t, a, "kubernetes.deployments.create", `{"namespace":"`+ns+`","object":`+deploymentManifest("web", "nginx:1.27", 2)+`}`, &v)
	if st := waitRollout(t, a, ns, "web"); !st.Done {
		t.Fatalf("rollout: %+v", st)
	}
	for _, tc := range []struct {
		name, op, args string
		want           bool
	}{
		{"an annotation of the template", "kubernetes.deployments.patch", `{"namespace":"` + ns + `","name":"web","patch":{"spec":{"template":{"metadata":{"annotations":{"team":"web"}}}}}}`, true},
		{"a label of the Deployment itself", "kubernetes.deployments.patch", `{"namespace":"` + ns + `","name":"web","patch":{"metadata":{"labels":{"team":"web"}}}}`, false},
		{"a new image", "kubernetes.deployments.patch", `{"namespace":"` + ns + `","name":"web","patch":{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := a.Preview(context.Background(), tc.op, json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			got := false
			for _, s := range c.Signals {
				got = got || s.Name == "healthy-restart"
			}
			if got != tc.want {
				t.Errorf("healthy-restart %v, want %v (signals %+v, impact %q)", got, tc.want, c.Signals, c.Impact)
			}
		})
	}
}

// TestDangers: what matters most in a list of grants, in a fixed order,
// each once.
func TestDangers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grants []string
		want   []string
	}{
		{"reads of pods", []string{"/pods/*:get", "/pods/*:list"}, nil},
		{"everything", []string{"*/*/*:*"}, []string{
			"* — every resource or every verb, those added later too", "writes Secrets", "reads Secrets' values",
			"runs commands in pods, attaches to them or forwards their ports (pods/exec, attach, portforward)",
			"impersonates users, groups or ServiceAccounts", "escalate: grants itself permissions it lacks", "bind: binds roles it does not hold",
			"mints ServiceAccount tokens", "changes nodes or proxies to them",
			"creates pods or workloads, which run as any ServiceAccount of the namespace and read its Secrets"}},
		{"escalate and bind roles", []string{"rbac.authorization.k8s.io/roles/*:escalate", "rbac.authorization.k8s.io/clusterroles/*:bind"},
			[]string{"escalate: grants itself permissions it lacks", "bind: binds roles it does not hold"}},
		{"a token and a node proxy", []string{"/serviceaccounts/token/*:create", "/nodes/proxy/*:get"},
			[]string{"mints ServiceAccount tokens", "changes nodes or proxies to them"}},
		{"reading one named Secret", []string{"/secrets/db:get"}, []string{"reads Secrets' values"}},
		{"every URL", []string{"url *:get"}, []string{"* — every resource or every verb, those added later too"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, dangers(tc.grants)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
