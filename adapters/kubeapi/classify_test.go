package kubeapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/catalog"
)

// TestClassify: what the bridge's rules learn of a change from the kind
// and group of its object.
func TestClassify(t *testing.T) {
	type class struct {
		Sensitive, Internal, Privileged, Protected, Critical bool
		Rollout                                              string
		NewNamespace                                         bool
	}
	for _, tc := range []struct {
		name   string
		group  string
		change catalog.Change
		want   class
	}{
		{"a Secret", "", catalog.Change{Kind: "Secret", Namespace: "shop", Name: "db"}, class{Sensitive: true}},
		{"a Secret-named kind of another group: hidden too", "example.com", catalog.Change{Kind: "Secret", Namespace: "shop", Name: "db"}, class{Sensitive: true}},
		{"kubecode's approval record", "", catalog.Change{Kind: "ConfigMap", Namespace: "kubecode", Name: "kubecode-approval-x"}, class{Internal: true}},
		{"an ordinary ConfigMap", "", catalog.Change{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}, class{}},
		{"a Role", "rbac.authorization.k8s.io", catalog.Change{Kind: "Role", Namespace: "shop", Name: "r"}, class{Privileged: true}},
		{"a ClusterRole", "rbac.authorization.k8s.io", catalog.Change{Kind: "ClusterRole", Name: "r"}, class{Privileged: true, Protected: true}},
		{"a namespace", "", catalog.Change{Kind: "Namespace", Name: "shop", Existed: true}, class{Protected: true}},
		{"a new namespace", "", catalog.Change{Action: "create", Kind: "Namespace", Name: "shop"}, class{Protected: true, NewNamespace: true}},
		{"a namespace deleted", "", catalog.Change{Action: "delete", Kind: "Namespace", Name: "shop"}, class{Protected: true}},
		{"a node", "", catalog.Change{Kind: "Node", Name: "n1"}, class{Critical: true}},
		{"anything in kube-system", "apps", catalog.Change{Kind: "Deployment", Namespace: "kube-system", Name: "coredns"}, class{Critical: true}},
		{"a rollout restart", "apps", catalog.Change{Action: "rollout.restart", Kind: "Deployment", Namespace: "shop", Name: "web"}, class{Rollout: catalog.RolloutRestart}},
		{"a rollback", "apps", catalog.Change{Action: "rollout.undo", Kind: "Deployment", Namespace: "shop", Name: "web"}, class{Rollout: catalog.RolloutRolls}},
		{"a new pod template", "apps", catalog.Change{Action: "patch", Kind: "Deployment", Namespace: "shop", Name: "web", Paths: []string{"spec.template.spec.containers"}}, class{Rollout: catalog.RolloutRolls}},
		{"a scale", "apps", catalog.Change{Action: "scale", Kind: "Deployment", Namespace: "shop", Name: "web", Paths: []string{"spec.replicas"}}, class{}},
		{"a namespace's pod-security label", "", catalog.Change{Action: "patch", Kind: "Namespace", Name: "shop", Existed: true, Paths: []string{JoinPath("metadata.labels", "pod-security.kubernetes.io/enforce")}}, class{Protected: true, Critical: true}},
		{"a namespace's team label", "", catalog.Change{Action: "patch", Kind: "Namespace", Name: "shop", Existed: true, Paths: []string{"metadata.labels.team"}}, class{Protected: true}},
		{"a field named like the template", "example.com", catalog.Change{Action: "patch", Kind: "Widget", Namespace: "shop", Name: "w", Paths: []string{"spec.templates"}}, class{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.change
			Classify(&c, tc.group)
			got := class{c.Sensitive, c.Internal, c.Privileged, c.Protected, c.Critical != "", c.Rollout, c.NewNamespace}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
