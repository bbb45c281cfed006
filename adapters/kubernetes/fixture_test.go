package kubernetes

import (
	"slices"
	"testing"

	"github.com/kubecode/kubecode/catalog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The search fixture: the built-in resources of Kubernetes v1.37 as
// discovery lists them, turned into descriptors by this package's own code
// (collect, buildOperations, describe), plus the write verbs later work
// adds. The search-quality table and benchmarks run on it without a
// cluster.

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

// fixtureOperations describes builtinResources the way Discover does,
// from the API verbs their operation verbs need. With writes, every
// resource also serves create, patch and delete: the full-size catalog of
// the benchmarks.
func fixtureOperations(t testing.TB, writes bool) []*catalog.Operation {
	t.Helper()
	lists := map[string]*metav1.APIResourceList{}
	var order []string
	for _, r := range builtinResources {
		gv := r.version
		if r.group != "" {
			gv = r.group + "/" + r.version
		}
		if lists[gv] == nil {
			lists[gv] = &metav1.APIResourceList{GroupVersion: gv}
			order = append(order, gv)
		}
		verbs := []string{"list", "get"}
		for _, v := range r.verbs {
			switch v {
			case "create", "delete":
				verbs = append(verbs, v)
			case "patch", "apply", "scale":
				verbs = append(verbs, "patch")
			}
		}
		if writes {
			verbs = append(verbs, "create", "patch", "delete")
		}
		slices.Sort(verbs)
		lists[gv].APIResources = append(lists[gv].APIResources, metav1.APIResource{Name: r.resource, SingularName: r.singular,
			Kind: r.kind, ShortNames: r.shortNames, Namespaced: r.namespaced, Verbs: slices.Compact(verbs)})
	}
	var ls []*metav1.APIResourceList
	for _, gv := range order {
		ls = append(ls, lists[gv])
	}
	ops, _ := buildOperations(collect(ls, allCore), nil)
	return ops
}
