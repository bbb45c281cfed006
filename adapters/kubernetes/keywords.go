package kubernetes

import "slices"

// Extra search terms for operation descriptors. The catalog's index matches
// an agent's question ("why is my pod crashing") against these as well as
// against names and descriptions, so they hold the words people use for a
// resource's problems and uses rather than its API vocabulary.
//
// The tables are plain literals on purpose: catalog's tests read this file
// to check that their fixture catalog carries exactly these keywords.

// resourceKeywordTable is keyed by "<group>/<plural>", or "<plural>" for the
// core group.
var resourceKeywordTable = map[string][]string{
	// core/v1
	"pods":                   {"crash", "crashloopbackoff", "restart", "restarts", "oomkilled", "imagepullbackoff", "errimagepull", "pending", "running", "container", "containers", "workload", "status", "exit", "terminated", "evicted"},
	"services":               {"endpoints", "network", "networking", "selector", "port", "clusterip", "loadbalancer", "nodeport", "dns", "expose", "traffic"},
	"endpoints":              {"backends", "addresses", "service", "ready", "network", "selector"},
	"events":                 {"why", "warning", "failing", "failed", "error", "diagnose", "troubleshoot", "reason", "backoff", "history", "happened"},
	"nodes":                  {"ready", "notready", "capacity", "allocatable", "kubelet", "machine", "host", "taint", "cordon", "schedulable", "pressure"},
	"namespaces":             {"project", "tenant", "environment"},
	"configmaps":             {"config", "configuration", "settings", "data", "environment"},
	"secrets":                {"credentials", "password", "token", "tls", "certificate", "key", "sensitive"},
	"serviceaccounts":        {"identity", "token", "rbac", "workload"},
	"persistentvolumeclaims": {"storage", "volume", "disk", "pending", "bound", "capacity"},
	"persistentvolumes":      {"storage", "volume", "disk", "bound", "released", "capacity"},
	"replicationcontrollers": {"replicas", "legacy", "workload"},
	"resourcequotas":         {"quota", "limits", "usage", "exceeded"},
	"limitranges":            {"defaults", "limits", "requests", "constraints"},
	"podtemplates":           {"template"},
	"componentstatuses":      {"health", "controlplane", "scheduler", "etcd"},

	// apps/v1
	"apps/deployments":         {"workload", "rollout", "replicas", "scale", "image", "app", "application", "available", "unavailable", "progressing"},
	"apps/statefulsets":        {"workload", "replicas", "scale", "stateful", "database", "ordinal", "rollout"},
	"apps/daemonsets":          {"workload", "every", "node", "agent", "rollout", "scheduled"},
	"apps/replicasets":         {"workload", "replicas", "scale", "rollout", "revision"},
	"apps/controllerrevisions": {"revision", "history", "rollback"},

	// batch/v1
	"batch/jobs":     {"batch", "workload", "completed", "failed", "succeeded", "backofflimit", "run", "task"},
	"batch/cronjobs": {"schedule", "cron", "periodic", "scheduled", "suspend", "batch", "timer"},

	// autoscaling, policy, scheduling
	"autoscaling/horizontalpodautoscalers": {"autoscaler", "autoscaling", "scale", "replicas", "cpu", "metrics", "target"},
	"policy/poddisruptionbudgets":          {"disruption", "eviction", "availability", "drain", "minavailable"},
	"scheduling.k8s.io/priorityclasses":    {"priority", "preemption", "scheduling"},

	// networking
	"networking.k8s.io/ingresses":       {"host", "hosts", "url", "http", "https", "tls", "route", "routing", "path", "network", "external"},
	"networking.k8s.io/ingressclasses":  {"controller", "ingress"},
	"networking.k8s.io/networkpolicies": {"firewall", "network", "traffic", "allow", "deny", "isolation"},
	"discovery.k8s.io/endpointslices":   {"endpoints", "backends", "addresses", "service", "ready", "network"},

	// storage
	"storage.k8s.io/storageclasses":    {"storage", "provisioner", "volume", "disk", "default"},
	"storage.k8s.io/volumeattachments": {"storage", "volume", "attach", "csi"},
	"storage.k8s.io/csidrivers":        {"storage", "csi", "driver"},
	"storage.k8s.io/csinodes":          {"storage", "csi", "node"},

	// rbac and access
	"rbac.authorization.k8s.io/roles":                {"rbac", "permissions", "access", "who", "can", "authorization", "rules"},
	"rbac.authorization.k8s.io/rolebindings":         {"rbac", "permissions", "access", "who", "can", "subjects", "grant"},
	"rbac.authorization.k8s.io/clusterroles":         {"rbac", "permissions", "access", "who", "can", "authorization", "rules"},
	"rbac.authorization.k8s.io/clusterrolebindings":  {"rbac", "permissions", "access", "who", "can", "subjects", "grant"},
	"certificates.k8s.io/certificatesigningrequests": {"certificate", "csr", "approve", "tls"},

	// extension points and control plane
	"apiextensions.k8s.io/customresourcedefinitions":                 {"crd", "custom", "resources", "schema", "extension", "operator", "types"},
	"apiregistration.k8s.io/apiservices":                             {"aggregation", "aggregated", "api", "extension", "available"},
	"admissionregistration.k8s.io/mutatingwebhookconfigurations":     {"webhook", "admission", "mutating"},
	"admissionregistration.k8s.io/validatingwebhookconfigurations":   {"webhook", "admission", "validating"},
	"admissionregistration.k8s.io/validatingadmissionpolicies":       {"admission", "policy", "cel", "validation"},
	"admissionregistration.k8s.io/validatingadmissionpolicybindings": {"admission", "policy", "cel", "validation"},
	"coordination.k8s.io/leases":                                     {"leader", "election", "lock", "heartbeat"},
	"events.k8s.io/events":                                           {"why", "warning", "failing", "failed", "error", "diagnose", "troubleshoot", "reason", "backoff", "history", "happened"},
	"node.k8s.io/runtimeclasses":                                     {"runtime", "sandbox", "container"},
}

// verbKeywordTable holds the words people use for each operation verb.
var verbKeywordTable = map[string][]string{
	"list":   {"find", "all", "which", "show", "search", "every", "count"},
	"get":    {"read", "describe", "inspect", "one", "details", "fetch"},
	"logs":   {"log", "output", "stdout", "stderr", "tail", "print", "previous", "crashed"},
	"create": {"new", "add", "make"},
	"patch":  {"update", "modify", "change", "edit", "set", "label", "annotate"},
	"apply":  {"declarative", "manifest", "yaml", "upsert", "update"},
	"delete": {"remove", "destroy", "drop", "kill", "evict"},
	"scale":  {"replicas", "resize", "up", "down", "count"},
	"watch":  {"follow", "stream", "changes", "wait"},
}

// resourceKeywords returns extra search terms for a well-known resource, or
// nil for one it does not know (CRDs, say). The slice is the caller's.
func resourceKeywords(group, resource string) []string {
	key := resource
	if group != "" {
		key = group + "/" + resource
	}
	return slices.Clone(resourceKeywordTable[key])
}

// verbKeywords returns extra search terms for an operation verb, or nil.
// The slice is the caller's.
func verbKeywords(verb string) []string {
	return slices.Clone(verbKeywordTable[verb])
}
