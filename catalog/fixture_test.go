package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The fixture catalog testdata/kubernetes-ops.json mirrors what the
// Kubernetes adapter produces for the built-in resources of Kubernetes
// v1.37 (names, descriptions, aliases, keywords), plus a few write verbs
// that later adapters add. TestFixture regenerates it with -update and
// otherwise checks that it is current, keywords included: they are read
// from ../adapters/kubernetes/keywords.go, so search tuning done here holds
// for the real catalog.

type fixtureResource struct {
	group, version, resource, singular, kind string
	shortNames                               []string
	namespaced                               bool
	verbs                                    []string // operation verbs beyond list and get
}

// builtinResources are the resources a v1.37 API server serves with list
// and get at their preferred versions (create-only review resources such
// as tokenreviews have no list/get operations).
var builtinResources = []fixtureResource{
	{"", "v1", "componentstatuses", "componentstatus", "ComponentStatus", []string{"cs"}, false, nil},
	{"", "v1", "configmaps", "configmap", "ConfigMap", []string{"cm"}, true, []string{"create", "patch", "delete", "apply"}},
	{"", "v1", "endpoints", "endpoints", "Endpoints", []string{"ep"}, true, nil},
	{"", "v1", "events", "event", "Event", []string{"ev"}, true, nil},
	{"", "v1", "limitranges", "limitrange", "LimitRange", []string{"limits"}, true, nil},
	{"", "v1", "namespaces", "namespace", "Namespace", []string{"ns"}, false, []string{"create", "delete"}},
	{"", "v1", "nodes", "node", "Node", []string{"no"}, false, []string{"patch"}},
	{"", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", []string{"pvc"}, true, nil},
	{"", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", []string{"pv"}, false, nil},
	{"", "v1", "pods", "pod", "Pod", []string{"po"}, true, []string{"logs", "delete"}},
	{"", "v1", "podtemplates", "podtemplate", "PodTemplate", nil, true, nil},
	{"", "v1", "replicationcontrollers", "replicationcontroller", "ReplicationController", []string{"rc"}, true, nil},
	{"", "v1", "resourcequotas", "resourcequota", "ResourceQuota", []string{"quota"}, true, nil},
	{"", "v1", "secrets", "secret", "Secret", nil, true, []string{"create", "delete"}},
	{"", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", []string{"sa"}, true, nil},
	{"", "v1", "services", "service", "Service", []string{"svc"}, true, []string{"create", "patch", "delete", "apply"}},
	{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", nil, false, nil},
	{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "validatingadmissionpolicy", "ValidatingAdmissionPolicy", nil, false, nil},
	{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", "ValidatingAdmissionPolicyBinding", nil, false, nil},
	{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", nil, false, nil},
	{"apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", []string{"crd", "crds"}, false, nil},
	{"apiregistration.k8s.io", "v1", "apiservices", "apiservice", "APIService", nil, false, nil},
	{"apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision", nil, true, nil},
	{"apps", "v1", "daemonsets", "daemonset", "DaemonSet", []string{"ds"}, true, []string{"patch", "apply"}},
	{"apps", "v1", "deployments", "deployment", "Deployment", []string{"deploy"}, true, []string{"create", "patch", "delete", "scale", "apply"}},
	{"apps", "v1", "replicasets", "replicaset", "ReplicaSet", []string{"rs"}, true, []string{"scale"}},
	{"apps", "v1", "statefulsets", "statefulset", "StatefulSet", []string{"sts"}, true, []string{"patch", "scale", "apply"}},
	{"autoscaling", "v2", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", []string{"hpa"}, true, nil},
	{"batch", "v1", "cronjobs", "cronjob", "CronJob", []string{"cj"}, true, []string{"patch"}},
	{"batch", "v1", "jobs", "job", "Job", nil, true, []string{"create", "delete"}},
	{"certificates.k8s.io", "v1", "certificatesigningrequests", "certificatesigningrequest", "CertificateSigningRequest", []string{"csr"}, false, nil},
	{"coordination.k8s.io", "v1", "leases", "lease", "Lease", nil, true, nil},
	{"discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", nil, true, nil},
	{"events.k8s.io", "v1", "events", "event", "Event", []string{"ev"}, true, nil},
	{"flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "flowschema", "FlowSchema", nil, false, nil},
	{"flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "prioritylevelconfiguration", "PriorityLevelConfiguration", nil, false, nil},
	{"networking.k8s.io", "v1", "ingressclasses", "ingressclass", "IngressClass", nil, false, nil},
	{"networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", []string{"ing"}, true, nil},
	{"networking.k8s.io", "v1", "ipaddresses", "ipaddress", "IPAddress", []string{"ip"}, false, nil},
	{"networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", []string{"netpol"}, true, nil},
	{"networking.k8s.io", "v1", "servicecidrs", "servicecidr", "ServiceCIDR", nil, false, nil},
	{"node.k8s.io", "v1", "runtimeclasses", "runtimeclass", "RuntimeClass", nil, false, nil},
	{"policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", []string{"pdb"}, true, nil},
	{"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", nil, false, nil},
	{"rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", nil, false, nil},
	{"rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", nil, true, nil},
	{"rbac.authorization.k8s.io", "v1", "roles", "role", "Role", nil, true, nil},
	{"resource.k8s.io", "v1", "deviceclasses", "deviceclass", "DeviceClass", nil, false, nil},
	{"resource.k8s.io", "v1", "resourceclaims", "resourceclaim", "ResourceClaim", nil, true, nil},
	{"resource.k8s.io", "v1", "resourceclaimtemplates", "resourceclaimtemplate", "ResourceClaimTemplate", nil, true, nil},
	{"resource.k8s.io", "v1", "resourceslices", "resourceslice", "ResourceSlice", nil, false, nil},
	{"scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", []string{"pc"}, false, nil},
	{"storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", nil, false, nil},
	{"storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", nil, false, nil},
	{"storage.k8s.io", "v1", "csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity", nil, true, nil},
	{"storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", []string{"sc"}, false, nil},
	{"storage.k8s.io", "v1", "volumeattachments", "volumeattachment", "VolumeAttachment", nil, false, nil},
	{"storage.k8s.io", "v1", "volumeattributesclasses", "volumeattributesclass", "VolumeAttributesClass", []string{"vac"}, false, nil},
}

// keywordTables reads the keyword literals of the Kubernetes adapter.
func keywordTables(t testing.TB) (resources, verbs map[string][]string) {
	t.Helper()
	const path = "../adapters/kubernetes/keywords.go"
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			return true
		}
		m := map[string][]string{}
		for _, e := range lit.Elts {
			kv := e.(*ast.KeyValueExpr)
			key, err := strconv.Unquote(kv.Key.(*ast.BasicLit).Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range kv.Value.(*ast.CompositeLit).Elts {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				m[key] = append(m[key], s)
			}
		}
		tables[vs.Names[0].Name] = m
		return false
	})
	resources, verbs = tables["resourceKeywordTable"], tables["verbKeywordTable"]
	if resources == nil || verbs == nil {
		t.Fatalf("%s: resourceKeywordTable or verbKeywordTable not found", path)
	}
	return resources, verbs
}

// fixtureOperations builds the fixture catalog the way the Kubernetes
// adapter builds descriptors. With writes, every resource also gets
// create, patch, delete and apply operations: the full-size catalog of
// the benchmarks.
func fixtureOperations(t testing.TB, writes bool) []*Operation {
	resKW, verbKW := keywordTables(t)
	groupsOf := map[string]int{}
	taken := map[string]bool{}
	for _, r := range builtinResources {
		groupsOf[r.resource]++
	}
	seg := func(r fixtureResource) string {
		if groupsOf[r.resource] > 1 && r.group != "" {
			return r.resource + "_" + strings.NewReplacer(".", "_", "-", "_").Replace(r.group)
		}
		return r.resource
	}
	for _, r := range builtinResources {
		taken[seg(r)] = true
	}
	var ops []*Operation
	for _, r := range builtinResources {
		verbs := append([]string{"list", "get"}, r.verbs...)
		if writes {
			for _, v := range []string{"create", "patch", "delete", "apply"} {
				if !contains(verbs, v) {
					verbs = append(verbs, v)
				}
			}
		}
		for _, verb := range verbs {
			ops = append(ops, fixtureOperation(r, seg(r), verb, taken, resKW, verbKW))
		}
	}
	ops = append(ops, &Operation{
		Name:        "kubernetes.api_resources",
		Provider:    "kubernetes",
		Verb:        "list",
		Description: "List the API resources the cluster serves (CRDs included) with kind, group, scope, short names and their kubecode operation names.",
		Keywords:    append([]string{"discovery", "api-resources", "crd", "custom resources", "kinds", "types"}, verbKW["list"]...),
		OutputName:  "APIResource",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
	})
	return ops
}

func fixtureOperation(r fixtureResource, seg, verb string, taken map[string]bool, resKW, verbKW map[string][]string) *Operation {
	gv := r.group + "/" + r.version
	key := r.group + "/" + r.resource
	if r.group == "" {
		gv, key = "core/"+r.version, r.resource
	}
	scope := "cluster-scoped"
	if r.namespaced {
		scope = "namespaced"
	}
	op := &Operation{
		Name:        "kubernetes." + seg + "." + verb,
		Provider:    "kubernetes",
		Group:       r.group,
		Version:     r.version,
		Resource:    r.resource,
		Kind:        r.kind,
		ShortNames:  r.shortNames,
		Namespaced:  r.namespaced,
		Verb:        verb,
		Keywords:    append(append([]string{r.singular}, resKW[key]...), verbKW[verb]...),
		OutputName:  r.kind,
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
	}
	seen := map[string]bool{seg: true}
	for _, s := range append([]string{r.singular, strings.ToLower(r.kind)}, r.shortNames...) {
		if s == "" || seen[s] || taken[s] {
			continue
		}
		seen[s] = true
		op.Aliases = append(op.Aliases, "kubernetes."+s+"."+verb)
	}
	switch verb {
	case "list":
		op.Description = fmt.Sprintf("List %s (%s, %s). Returns a plain array; every page is fetched.", r.resource, gv, scope)
		if r.namespaced {
			op.Description = fmt.Sprintf("List %s in a namespace or across all namespaces (%s). Returns a plain array; every page is fetched.", r.resource, gv)
		}
		if seg == "events" {
			op.Description = "List events: the cluster's record of why things fail (BackOff, FailedScheduling, Failed pulls), optionally only those about one object."
		}
	case "get":
		op.Description = fmt.Sprintf("Get one %s by name (%s, %s).", r.singular, gv, scope)
	case "logs":
		op.Description = "Read a pod container's logs as text (tailLines, sinceSeconds, previous terminated container)."
		op.OutputName = ""
	case "create":
		op.Description = fmt.Sprintf("Create a %s from a manifest (%s, %s).", r.singular, gv, scope)
		op.Annotations = Annotations{}
	case "patch":
		op.Description = fmt.Sprintf("Patch one %s by name with a merge or JSON patch (%s, %s).", r.singular, gv, scope)
		op.Annotations = Annotations{}
	case "apply":
		op.Description = fmt.Sprintf("Server-side apply a %s manifest: create it or update the fields you manage (%s, %s).", r.singular, gv, scope)
		op.Annotations = Annotations{Idempotent: true}
	case "delete":
		op.Description = fmt.Sprintf("Delete one %s by name (%s, %s).", r.singular, gv, scope)
		op.Annotations = Annotations{Destructive: true, Idempotent: true}
	case "scale":
		op.Description = fmt.Sprintf("Set the number of replicas of one %s through its scale subresource (%s, %s).", r.singular, gv, scope)
		op.Annotations = Annotations{Idempotent: true}
	}
	if r.kind == "Secret" {
		op.Description += " Secret values are redacted: only data keys are returned."
	}
	return op
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// loadFixture reads testdata/kubernetes-ops.json.
func loadFixture(t testing.TB) []*Operation {
	t.Helper()
	data, err := os.ReadFile("testdata/kubernetes-ops.json")
	if err != nil {
		t.Fatal(err)
	}
	var ops []*Operation
	if err := json.Unmarshal(data, &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

func TestFixture(t *testing.T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(fixtureOperations(t, false)); err != nil {
		t.Fatal(err)
	}
	golden(t, "kubernetes-ops.json", buf.Bytes())
}
