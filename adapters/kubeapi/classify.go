package kubeapi

import (
	"cmp"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// IsSecret says whether objects of kind hold secret values: the one place
// kubecode decides what a Kubernetes Secret is, for the result rules
// (ResultRules), the policy (Change.Sensitive), plans and Helm's drift
// alike. Any kind named Secret counts, whatever its group: hiding too much
// is safe, too little is not.
func IsSecret(kind string) bool { return kind == secretKind }

// secretKind is the kind of Kubernetes Secrets.
const secretKind = "Secret"

// Classify marks a change of an object of group and c.Kind for the
// bridge's rules: Sensitive (holds secret values), Privileged (grants
// permissions, or intercepts or serves requests) and Protected (its
// deletion takes much else with it).
func Classify(c *catalog.Change, group string) {
	c.Sensitive = IsSecret(c.Kind)
	c.Rollout = rollout(c)
	c.NewNamespace = group == "" && c.Kind == "Namespace" && !c.Existed && c.Action != "delete"
	// kubecode's records (Approvals, PlanUses): a script that could write
	// them could approve its own plans or use one twice.
	c.Internal = group == "" && c.Kind == "ConfigMap" && (strings.HasPrefix(c.Name, "kubecode-approval-") || strings.HasPrefix(c.Name, "kubecode-plan-"))
	c.Critical = Critical(c, group)
	c.Privileged = group == "rbac.authorization.k8s.io" || group == "admissionregistration.k8s.io" || group == "apiregistration.k8s.io"
	switch {
	case group == "" && (c.Kind == "Namespace" || c.Kind == "PersistentVolume" || c.Kind == "PersistentVolumeClaim"),
		group == "apiextensions.k8s.io" && c.Kind == "CustomResourceDefinition",
		group == "rbac.authorization.k8s.io" && (c.Kind == "ClusterRole" || c.Kind == "ClusterRoleBinding"):
		c.Protected = true
	}
}

// rollout says whether c replaces the object's pods (catalog.Change.Rollout):
// a rollout restart asks for it; a rollback, or any change of the pod
// template, does it by itself.
func rollout(c *catalog.Change) string {
	switch {
	case c.Action == "rollout.restart":
		return catalog.RolloutRestart
	case c.Action == "rollout.undo":
		return catalog.RolloutRolls
	}
	for _, p := range c.Paths {
		if p == "spec.template" || strings.HasPrefix(p, "spec.template.") {
			return catalog.RolloutRolls
		}
	}
	return ""
}

// systemNamespaces hold the cluster's own components.
var systemNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true}

// SystemNamespace says whether ns holds the cluster's own components.
func SystemNamespace(ns string) bool { return systemNamespaces[ns] }

// Critical says why a change of an object of group touches what runs
// the cluster itself, or "".
func Critical(c *catalog.Change, group string) string {
	switch {
	case group == "" && c.Kind == "Node":
		return "nodes run every workload: changing one (deleting, tainting, cordoning it) moves or stops what runs there"
	case group == "flowcontrol.apiserver.k8s.io":
		return "API priority and fairness decides which requests the API server serves, kubecode's and the controllers' included"
	case systemNamespaces[c.Namespace], group == "" && c.Kind == "Namespace" && systemNamespaces[c.Name]:
		return "the " + cmp.Or(c.Namespace, c.Name) + " namespace holds the cluster's own components"
	case group == "" && c.Kind == "Namespace":
		for _, p := range c.Paths {
			if strings.HasPrefix(p, "metadata.labels[pod-security.kubernetes.io/") {
				return "a namespace's pod-security labels decide which pods may run in it"
			}
		}
	}
	return ""
}
