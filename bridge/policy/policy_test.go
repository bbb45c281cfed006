package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/catalog"
)

// TestJudge: each rule refuses what it names, and only that, with a
// message that names the object or its namespace; a change of many
// objects (a Helm release) is refused for any of them.
func TestJudge(t *testing.T) {
	grace0 := int64(0)
	for _, tc := range []struct {
		name   string
		policy Policy
		change catalog.Change
		rule   string // the refusing rule; empty means allowed
	}{
		{"narrow patch", Policy{}, catalog.Change{Action: "patch", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Paths: []string{"spec.replicas"}}, ""},
		{"broad patch", Policy{}, catalog.Change{Action: "patch", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Edits: []string{"a", "b", "c", "d"}}, RuleMaxEdits},
		{"broad patch, bound raised", Policy{MaxEdits: 5}, catalog.Change{Action: "patch", Kind: "Deployment", Namespace: "shop", Name: "web", Edits: []string{"a", "b", "c", "d"}}, ""},
		{"broad patch, bound raised by its former name", Policy{MaxPatchPaths: 5}, catalog.Change{Action: "patch", Kind: "Deployment", Namespace: "shop", Name: "web", Edits: []string{"a", "b", "c", "d"}}, ""},
		// Many leaves, few changes: a toleration of four fields is one.
		{"one exact toleration", Policy{}, catalog.Change{Action: "patch", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true,
			Paths: []string{"spec.template.spec.tolerations[0].effect", "spec.template.spec.tolerations[0].key", "spec.template.spec.tolerations[0].operator", "spec.template.spec.tolerations[0].value"},
			Edits: []string{"spec.template.spec.tolerations[+]"}}, ""},
		{"a rollback, judged by what it restores", Policy{}, catalog.Change{Action: "rollout.undo", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true,
			Edits: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, Restores: "revision 1 of shop/web"}, ""},
		{"a dry run that failed: judged by its failure", Policy{}, catalog.Change{Action: "patch", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Paths: []string{"a", "b", "c", "d"}}, ""},
		{"a pod delete past its budget", Policy{}, catalog.Change{Action: "delete", Kind: "Pod", Namespace: "shop", Name: "web-1", Existed: true, Budget: "PodDisruptionBudget shop/web allows 0 disruptions now"}, RuleBudget},
		{"a pod delete past its budget, allowed", Policy{AllowBudgetBreaks: true}, catalog.Change{Action: "delete", Kind: "Pod", Namespace: "shop", Name: "web-1", Existed: true, Budget: "PodDisruptionBudget shop/web allows 0 disruptions now"}, ""},
		{"full apply over existing", Policy{}, catalog.Change{Action: "apply", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Edits: []string{"a", "b", "c", "d"}}, RuleFullReplace},
		{"full apply over existing, forced", Policy{ForceFullReplace: true}, catalog.Change{Action: "apply", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Edits: []string{"a", "b", "c", "d"}}, ""},
		{"full apply of a new object", Policy{}, catalog.Change{Action: "apply", Kind: "Deployment", Namespace: "shop", Name: "web", Paths: []string{"a", "b", "c", "d"}}, ""},
		{"narrow apply over existing", Policy{}, catalog.Change{Action: "apply", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Paths: []string{"spec.replicas"}}, ""},
		{"graceful delete", Policy{}, catalog.Change{Action: "delete", Kind: "Pod", Namespace: "shop", Name: "web-1", Existed: true}, ""},
		{"delete without grace", Policy{}, catalog.Change{Action: "delete", Kind: "Pod", Namespace: "shop", Name: "web-1", GraceSeconds: &grace0}, RuleUngracefulDelete},
		{"forced delete", Policy{}, catalog.Change{Action: "delete", Kind: "Pod", Namespace: "shop", Name: "web-1", Force: true}, RuleUngracefulDelete},
		{"forced delete allowed", Policy{AllowUngracefulDelete: true}, catalog.Change{Action: "delete", Kind: "Pod", Namespace: "shop", Name: "web-1", Force: true}, ""},
		{"protected delete", Policy{}, catalog.Change{Action: "delete", Kind: "Namespace", Name: "shop", Protected: true}, RuleProtectedDelete},
		{"protected delete allowed", Policy{AllowProtectedDelete: true}, catalog.Change{Action: "delete", Kind: "Namespace", Name: "shop", Protected: true}, ""},
		{"protected patch", Policy{}, catalog.Change{Action: "patch", Kind: "Namespace", Name: "shop", Protected: true, Paths: []string{"metadata.labels.team"}}, ""},
		{"secret write", Policy{}, catalog.Change{Action: "patch", Kind: "Secret", Namespace: "shop", Name: "db", Sensitive: true, Paths: []string{"data.password"}}, RuleSecretWrites},
		{"secret write allowed", Policy{AllowSecretWrites: true}, catalog.Change{Action: "patch", Kind: "Secret", Namespace: "shop", Name: "db", Sensitive: true, Paths: []string{"data.password"}}, ""},
		{"permission write, planned for people", Policy{}, catalog.Change{Action: "create", Kind: "RoleBinding", Namespace: "shop", Name: "admin", Privileged: true}, ""},
		{"permission write in apply mode", Policy{Mode: ModeApply}, catalog.Change{Action: "create", Kind: "RoleBinding", Namespace: "shop", Name: "admin", Privileged: true}, RulePermissionWrites},
		{"permission write the agent would approve", Policy{Approval: ApprovalAgent}, catalog.Change{Action: "create", Kind: "RoleBinding", Namespace: "shop", Name: "admin", Privileged: true}, RulePermissionWrites},
		{"permission write allowed in apply mode", Policy{Mode: ModeApply, AllowPermissionWrites: true}, catalog.Change{Action: "create", Kind: "RoleBinding", Namespace: "shop", Name: "admin", Privileged: true}, ""},
		{"outside the namespaces", Policy{Namespaces: []string{"live"}}, catalog.Change{Action: "scale", Kind: "Deployment", Namespace: "shop", Name: "web", Paths: []string{"spec.replicas"}}, RuleNamespaces},
		{"inside the namespaces", Policy{Namespaces: []string{"live"}}, catalog.Change{Action: "scale", Kind: "Deployment", Namespace: "live", Name: "web", Paths: []string{"spec.replicas"}}, ""},
		{"cluster-scoped with namespaces set", Policy{Namespaces: []string{"live"}}, catalog.Change{Action: "patch", Kind: "Node", Name: "node-1", Paths: []string{"spec.unschedulable"}}, RuleNamespaces},
		{"denied kind", Policy{DeniedKinds: []string{"configmap"}}, catalog.Change{Action: "patch", Kind: "ConfigMap", Namespace: "shop", Name: "cfg", Paths: []string{"data.x"}}, RuleDeniedKinds},
		// A release changes many objects: each passes the rules that judge
		// objects; only the release is bound by the patch-size rules.
		{"release of plain objects", Policy{}, catalog.Change{Action: "upgrade", Kind: "HelmRelease", Namespace: "shop", Name: "web", Existed: true, Objects: []catalog.Change{
			{Action: "update", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Paths: []string{"a", "b", "c", "d", "e"}},
			{Action: "create", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}}}, ""},
		{"release holding a Secret", Policy{}, catalog.Change{Action: "install", Kind: "HelmRelease", Namespace: "shop", Name: "web", Objects: []catalog.Change{
			{Action: "create", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"},
			{Action: "create", Kind: "Secret", Namespace: "shop", Name: "db", Sensitive: true}}}, RuleSecretWrites},
		{"release reaching another namespace", Policy{Namespaces: []string{"shop"}}, catalog.Change{Action: "install", Kind: "HelmRelease", Namespace: "shop", Name: "web", Objects: []catalog.Change{
			{Action: "create", Kind: "ConfigMap", Namespace: "kube-system", Name: "cfg"}}}, RuleNamespaces},
		{"release deleting a namespace", Policy{}, catalog.Change{Action: "uninstall", Kind: "HelmRelease", Namespace: "shop", Name: "web", Existed: true, Objects: []catalog.Change{
			{Action: "delete", Kind: "Namespace", Name: "shop-data", Protected: true}}}, RuleProtectedDelete},
		{"release granting permissions", Policy{Mode: ModeApply}, catalog.Change{Action: "install", Kind: "HelmRelease", Namespace: "shop", Name: "web", Objects: []catalog.Change{
			{Action: "create", Kind: "ClusterRoleBinding", Name: "web-admin", Privileged: true}}}, RulePermissionWrites},
		{"release denied as a kind", Policy{DeniedKinds: []string{"HelmRelease"}}, catalog.Change{Action: "install", Kind: "HelmRelease", Namespace: "shop", Name: "web"}, RuleDeniedKinds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := tc.policy.WithDefaults().Judge(&tc.change)
			got := ""
			if r != nil {
				got = r.Rule
				if !strings.Contains(r.Message, tc.change.Name) && !strings.Contains(r.Message, tc.change.Namespace) {
					t.Errorf("message %q names neither the object nor its namespace", r.Message)
				}
			}
			if got != tc.rule {
				t.Errorf("refused by %q, want %q (%v)", got, tc.rule, r)
			}
		})
	}
}

// TestTwoPersonClasses: in plan mode, a permission write needs two people
// unless the policy allows such writes or names one approver.
func TestTwoPersonClasses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy Policy
		want   []string
	}{
		{"default", Policy{}, []string{TwoPermissionWrite}},
		{"with other classes", Policy{TwoPerson: []string{TwoProtectedDelete}}, []string{TwoProtectedDelete, TwoPermissionWrite}},
		{"one approver", Policy{PermissionWriteApprovers: 1}, nil},
		{"writes allowed", Policy{AllowPermissionWrites: true}, nil},
		{"apply mode", Policy{Mode: ModeApply}, nil},
		{"agent approval", Policy{Approval: ApprovalAgent}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.policy.WithDefaults().TwoPersonClasses()); diff != "" {
				t.Errorf("TwoPersonClasses (-want +got):\n%s", diff)
			}
		})
	}
	if err := (Policy{PermissionWriteApprovers: 3}).Check(); err == nil {
		t.Error("Check accepted permissionWriteApprovers 3")
	}
}

// TestExecReads: an exact argv, or a prefix ending in "*", is a read;
// anything more or else is a change; a prefix of a command that runs
// others is refused.
func TestExecReads(t *testing.T) {
	p := Policy{ExecReads: [][]string{{"cat", "/etc/nginx/nginx.conf"}, {"ls", "*"}}}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		read bool
	}{
		{[]string{"cat", "/etc/nginx/nginx.conf"}, true},
		{[]string{"cat", "/etc/nginx/nginx.conf", "/etc/creds/password"}, false},
		{[]string{"cat"}, false},
		{[]string{"ls"}, true},
		{[]string{"ls", "-la", "/etc"}, true},
		{[]string{"lsof"}, false},
		{[]string{"sh", "-c", "cat /etc/nginx/nginx.conf"}, false},
	} {
		if got := p.ExecRead(tc.argv); got != tc.read {
			t.Errorf("ExecRead(%q) = %v, want %v", tc.argv, got, tc.read)
		}
	}
	for _, bad := range [][]string{{}, {"*"}, {"sh", "-c", "*"}, {"find", "/", "*"}, {"/usr/bin/env", "*"}, {"python3.12", "*"}, {"psql", "*"}, {"ls", "*", "x"}, {"/bin/ls", "*"}} {
		if err := (Policy{ExecReads: [][]string{bad}}).Check(); err == nil {
			t.Errorf("execReads %q passed the check", bad)
		}
	}
	if err := (Policy{ExecReads: [][]string{{"sh", "-c", "cat /etc/hostname"}}}).Check(); err != nil {
		t.Errorf("an exact shell command: %v", err)
	}
}

// TestCloneOwnsItsSlices: decoding a context's policy into a clone leaves
// the base policy as it was.
func TestCloneOwnsItsSlices(t *testing.T) {
	base := Policy{ExecReads: [][]string{{"cat", "/a"}}, Namespaces: []string{"a"}}
	c := base.Clone()
	c.ExecReads[0][1], c.Namespaces[0] = "*", "b"
	if base.ExecReads[0][1] != "/a" || base.Namespaces[0] != "a" {
		t.Errorf("the base changed: %+v", base)
	}
}
