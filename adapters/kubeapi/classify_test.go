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
	}
	for _, tc := range []struct {
		name   string
		group  string
		change catalog.Change
		want   class
	}{
		{"a Secret", "", catalog.Change{Kind: "Secret", Namespace: "shop", Name: "db"}, class{Sensitive: true}},
		{"a Secret-named kind of another group", "example.com", catalog.Change{Kind: "Secret", Namespace: "shop", Name: "db"}, class{}},
		{"kubecode's approval record", "", catalog.Change{Kind: "ConfigMap", Namespace: "kubecode", Name: "kubecode-approval-x"}, class{Internal: true}},
		{"an ordinary ConfigMap", "", catalog.Change{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}, class{}},
		{"a Role", "rbac.authorization.k8s.io", catalog.Change{Kind: "Role", Namespace: "shop", Name: "r"}, class{Privileged: true}},
		{"a ClusterRole", "rbac.authorization.k8s.io", catalog.Change{Kind: "ClusterRole", Name: "r"}, class{Privileged: true, Protected: true}},
		{"a namespace", "", catalog.Change{Kind: "Namespace", Name: "shop"}, class{Protected: true}},
		{"a node", "", catalog.Change{Kind: "Node", Name: "n1"}, class{Critical: true}},
		{"anything in kube-system", "apps", catalog.Change{Kind: "Deployment", Namespace: "kube-system", Name: "coredns"}, class{Critical: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.change
			Classify(&c, tc.group)
			got := class{c.Sensitive, c.Internal, c.Privileged, c.Protected, c.Critical != ""}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
