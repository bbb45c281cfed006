package kubernetes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/catalog/search"
)

// searchCases are natural questions an agent asks, each with operations
// that must be among the top five hits. Each runs on the lean catalog (the
// fixture's reads and its few writes) and on the full one (every resource
// with create, patch and delete, as an admin sees it).
var searchCases = []struct {
	query string
	want  []string // operation names, each in the top 5
	first string   // if set, must be the first hit
	not   []string // operation names that must not be in the top 5
	full  bool     // only on the full catalog: it names writes the lean one lacks
}{
	{query: "why is my pod crashing", want: []string{"kubernetes.pods.list", "kubernetes.pods.logs", "kubernetes.events.list"}},
	{query: "which pods restarted", want: []string{"kubernetes.pods.list"}},
	{query: "pod logs", want: []string{"kubernetes.pods.logs"}, first: "kubernetes.pods.logs"},
	{query: "can this service account read secrets", want: []string{"kubernetes.auth.can_i"}},
	{query: "who am i", want: []string{"kubernetes.auth.whoami"}},
	{query: "previous container logs", want: []string{"kubernetes.pods.logs"}},
	{query: "scale a deployment", want: []string{"kubernetes.deployments.scale"}},
	{query: "which services have no endpoints", want: []string{"kubernetes.services.list", "kubernetes.endpointslices.list"}},
	{query: "list deployments", want: []string{"kubernetes.deployments.list"}, first: "kubernetes.deployments.list"},
	{query: "get configmap", want: []string{"kubernetes.configmaps.get"}, first: "kubernetes.configmaps.get"},
	{query: "secrets in namespace", want: []string{"kubernetes.secrets.list"}},
	{query: "nodes not ready", want: []string{"kubernetes.nodes.list"}},
	{query: "events for a pod", want: []string{"kubernetes.events.list"}},
	{query: "failed jobs", want: []string{"kubernetes.jobs.list"}},
	{query: "cronjobs schedule", want: []string{"kubernetes.cronjobs.list"}},
	{query: "ingress hosts", want: []string{"kubernetes.ingresses.list"}},
	{query: "persistent volume claims pending", want: []string{"kubernetes.persistentvolumeclaims.list"}},
	{query: "api resources", want: []string{"kubernetes.api_resources"}, first: "kubernetes.api_resources"},
	{query: "custom resource definitions", want: []string{"kubernetes.customresourcedefinitions.list"}},
	{query: "rbac roles who can", want: []string{"kubernetes.roles.list"}},
	{query: "statefulset replicas", want: []string{"kubernetes.statefulsets.list"}},
	{query: "daemonset", want: []string{"kubernetes.daemonsets.list"}},
	{query: "hpa autoscaler", want: []string{"kubernetes.horizontalpodautoscalers.list"}},
	{query: "namespaces", want: []string{"kubernetes.namespaces.list"}, first: "kubernetes.namespaces.list"},
	{query: "service accounts", want: []string{"kubernetes.serviceaccounts.list"}, first: "kubernetes.serviceaccounts.list"},
	{query: "kubernetes.pods.get", first: "kubernetes.pods.get"},
	{query: "pods.list", first: "kubernetes.pods.list"},
	{query: "kubernetes.po.logs", first: "kubernetes.pods.logs"},
	{query: "kubernetes.api_resources", first: "kubernetes.api_resources"},
	{query: "deploy", want: []string{"kubernetes.deployments.list"}},
	{query: "po", want: []string{"kubernetes.pods.list"}},
	{query: "crashloopbackoff", want: []string{"kubernetes.pods.list", "kubernetes.events.list"}},
	{query: "imagepullbackoff", want: []string{"kubernetes.pods.list", "kubernetes.events.list"}},
	{query: "oomkilled", want: []string{"kubernetes.pods.list"}},
	{query: "deploymnet", want: []string{"kubernetes.deployments.list"}},
	{query: "delete a pod", want: []string{"kubernetes.pods.delete"}, first: "kubernetes.pods.delete"},
	{query: "scale a deployment to 5 replicas", first: "kubernetes.deployments.scale"},
	{query: "restart a deployment", first: "kubernetes.deployments.rollout.restart"},
	{query: "roll back a deployment", first: "kubernetes.deployments.rollout.undo"},
	{query: "rollback", want: []string{"kubernetes.deployments.rollout.undo"}},
	{query: "is the rollout done", want: []string{"kubernetes.deployments.rollout.status"}},
	{query: "deployment revision history", want: []string{"kubernetes.deployments.rollout.history"}},
	{query: "apply this deployment manifest", first: "kubernetes.deployments.apply"},
	{query: "set the image of a deployment", want: []string{"kubernetes.deployments.patch"}},
	{query: "create a configmap", first: "kubernetes.configmaps.create"},
	{query: "network policies", want: []string{"kubernetes.networkpolicies.list"}},
	{query: "storage classes", want: []string{"kubernetes.storageclasses.list"}},
	{query: "pod disruption budget", want: []string{"kubernetes.poddisruptionbudgets.list"}},
	// Three first questions search once answered with nothing to act on.
	{query: "cordon a node", want: []string{"kubernetes.nodes.patch", "kubernetes.nodes.drain"}},
	{query: "resize a persistent volume claim", want: []string{"kubernetes.persistentvolumeclaims.patch"}, full: true},
	{query: "what permissions does a service account have", want: []string{"kubernetes.auth.can_i"}},

	// "namespace" says where: the resource a question names comes first.
	{query: "pods in a namespace", first: "kubernetes.pods.list"},
	{query: "list pods in namespace shop", first: "kubernetes.pods.list"},
	{query: "secrets in the payments namespace", first: "kubernetes.secrets.list"},
	{query: "deployments in namespace", first: "kubernetes.deployments.list"},
	{query: "services of a namespace", first: "kubernetes.services.list"},
	{query: "configmaps in each namespace", first: "kubernetes.configmaps.list"},
	{query: "ingresses across all namespaces", first: "kubernetes.ingresses.list"},
	{query: "events in namespace data", want: []string{"kubernetes.events.list", "kubernetes.events_events_k8s_io.list"}},
	{query: "jobs per namespace", first: "kubernetes.jobs.list"},
	{query: "service accounts in a namespace", first: "kubernetes.serviceaccounts.list"},
	{query: "resource quotas of a namespace", first: "kubernetes.resourcequotas.list"},
	{query: "network policies in namespace", first: "kubernetes.networkpolicies.list"},
	{query: "namespace labels", first: "kubernetes.namespaces.list"},
	{query: "delete a namespace", first: "kubernetes.namespaces.delete"},
	{query: "which namespaces exist", first: "kubernetes.namespaces.list"},

	// Access: bindings grant, access reviews answer "can …?".
	{query: "which roles and rolebindings grant a service account permissions", want: []string{"kubernetes.rolebindings.list", "kubernetes.roles.list"}, first: "kubernetes.rolebindings.list"},
	{query: "who can delete pods in namespace shop", want: []string{"kubernetes.auth.can_i"}},
	{query: "what can I do in this namespace", want: []string{"kubernetes.auth.can_i", "kubernetes.auth.rules"}},

	// A Service nothing reaches is read first; its Endpoints are not patched.
	{query: "service not accessible: selector mismatch, target port", want: []string{"kubernetes.services.list", "kubernetes.endpointslices.list"},
		first: "kubernetes.services.list", not: []string{"kubernetes.endpoints.patch"}},
	{query: "switch service selector from blue to green", want: []string{"kubernetes.services.patch"}},
	{query: "apply a YAML manifest (create or update)", first: "kubernetes.apply"},
	{query: "apply a manifest", first: "kubernetes.apply"},
	{query: "kubectl apply -f deployment and service yaml", want: []string{"kubernetes.apply"}},
	{query: "create namespace, configmaps, and a pod that uses the configmap", full: true,
		want: []string{"kubernetes.namespaces.create", "kubernetes.pods.create", "kubernetes.configmaps.create"}},
}

func TestSearch(t *testing.T) {
	lean, err := search.NewIndex(fixtureOperations(t, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := search.NewIndex(fixtureOperations(t, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range searchCases {
		for _, x := range []*search.Index{lean, full} {
			if c.full && x == lean {
				continue
			}
			name := "lean/" + c.query
			if x == full {
				name = "full/" + c.query
			}
			t.Run(name, func(t *testing.T) { checkSearch(t, x, c.query, c.want, c.first, c.not) })
		}
	}
}

// checkSearch checks the top five hits of query on x.
func checkSearch(t *testing.T, x *search.Index, query string, want []string, first string, not []string) {
	hits, err := x.Search(query, 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, h.Op.Name)
	}
	if testing.Verbose() {
		var b strings.Builder
		for _, h := range hits {
			fmt.Fprintf(&b, " %s(%.2f)", strings.TrimPrefix(h.Op.Name, "kubernetes."), h.Score)
		}
		t.Logf("%q →%s", query, b.String())
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%q: %s not in top 5: %v", query, w, got)
		}
	}
	for _, w := range not {
		if slices.Contains(got, w) {
			t.Errorf("%q: %s in top 5: %v", query, w, got)
		}
	}
	if first != "" && (len(got) == 0 || got[0] != first) {
		t.Errorf("%q: first hit is not %s: %v", query, first, got)
	}
}
