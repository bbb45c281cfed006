package kubernetes

import (
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// Search hints: what this adapter knows about the words people use for
// Kubernetes. The catalog's index matches an agent's question ("why is my
// pod crashing") against keywords and intents as well as against names and
// descriptions, so these tables hold the words people use for a resource's
// problems and uses rather than its API vocabulary. They reach the catalog
// only on the descriptors (Operation.Keywords and Operation.Hints).

// resourceKeywordTable is keyed by "<group>/<plural>", or "<plural>" for the
// core group.
var resourceKeywordTable = map[string][]string{
	// core/v1
	"pods":                   {"crash", "crashloopbackoff", "restart", "restarts", "oomkilled", "imagepullbackoff", "errimagepull", "pending", "running", "container", "containers", "workload", "status", "exit", "terminated", "evicted"},
	"services":               {"endpoints", "network", "networking", "selector", "port", "clusterip", "loadbalancer", "nodeport", "dns", "expose", "traffic", "unreachable"},
	"endpoints":              {"backends", "addresses", "service", "ready", "network", "selector", "port"},
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
	"discovery.k8s.io/endpointslices":   {"endpoints", "backends", "addresses", "service", "ready", "network", "selector", "port"},

	// storage
	"storage.k8s.io/storageclasses":    {"storage", "provisioner", "volume", "disk", "default"},
	"storage.k8s.io/volumeattachments": {"storage", "volume", "attach", "csi"},
	"storage.k8s.io/csidrivers":        {"storage", "csi", "driver"},
	"storage.k8s.io/csinodes":          {"storage", "csi", "node"},

	// rbac and access ("can I …?" is kubernetes.auth.can_i's question)
	"rbac.authorization.k8s.io/roles":                {"rbac", "permissions", "access", "who", "authorization", "rules"},
	"rbac.authorization.k8s.io/rolebindings":         {"rbac", "permissions", "access", "who", "subjects", "grant"},
	"rbac.authorization.k8s.io/clusterroles":         {"rbac", "permissions", "access", "who", "authorization", "rules"},
	"rbac.authorization.k8s.io/clusterrolebindings":  {"rbac", "permissions", "access", "who", "subjects", "grant"},
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
	"page":   {"paginate", "pages", "continue", "chunk", "large", "huge", "stream", "iterate"},
	"get":    {"read", "describe", "inspect", "one", "details", "fetch"},
	"logs":   {"log", "output", "stdout", "stderr", "tail", "print", "previous", "crashed"},
	"exec":   {"command", "shell", "execute", "wget", "curl", "cat", "connectivity", "inside"},
	"create": {"new", "add", "make"},
	"patch":  {"update", "modify", "change", "edit", "set", "label", "annotate", "switch"},
	"apply":  {"declarative", "manifest", "yaml", "upsert", "update"},
	"delete": {"remove", "destroy", "drop", "kill", "evict"},
	"scale":  {"replicas", "resize", "up", "down", "count"},
	"watch":  {"follow", "stream", "changes", "wait"},

	"rollout.restart": {"restart", "bounce", "redeploy", "recycle", "rollout"},
	"rollout.status":  {"rollout", "progress", "finished", "done", "wait", "verify", "status"},
	"rollout.undo":    {"rollback", "roll", "back", "revert", "undo", "previous"},
	"rollout.history": {"revisions", "revision", "history", "rollout", "versions"},
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

// intentTable maps a question word to the resources (plurals) and verbs of
// the operations that answer it: "crashing" → pods, logs, events. Matching
// is on the question's lower-case words before stemming, so inflections
// are listed.
var intentTable = map[string]string{
	"crash":            "pods logs events",
	"crashes":          "pods logs events",
	"crashing":         "pods logs events",
	"crashed":          "pods logs events",
	"crashloop":        "pods logs events",
	"crashloopbackoff": "pods logs events",
	"backoff":          "pods events",
	"restart":          "pods",
	"restarts":         "pods",
	"restarted":        "pods",
	"restarting":       "pods",
	"oom":              "pods events",
	"oomkilled":        "pods events",
	"memory":           "pods top",
	"cpu":              "top",
	"imagepullbackoff": "pods events",
	"errimagepull":     "pods events",
	"pull":             "pods events",
	"image":            "pods deployments",
	"evicted":          "pods events",
	"pending":          "pods events",
	"container":        "pods",
	"containers":       "pods",
	"log":              "logs",
	"stdout":           "logs",
	"stderr":           "logs",
	"output":           "logs",
	"scale":            "deployments statefulsets scale",
	"scaling":          "deployments statefulsets scale",
	"resize":           "deployments statefulsets scale persistentvolumeclaims",
	"expand":           "persistentvolumeclaims",
	"claim":            "persistentvolumeclaims",
	"claims":           "persistentvolumeclaims",
	"cordon":           "nodes drain",
	"cordoned":         "nodes drain",
	"uncordon":         "nodes",
	"unschedulable":    "nodes",
	"replicas":         "deployments statefulsets",
	"autoscale":        "horizontalpodautoscalers",
	"autoscaler":       "horizontalpodautoscalers",
	"autoscaling":      "horizontalpodautoscalers",
	"endpoint":         "services endpoints endpointslices",
	"endpoints":        "services endpoints endpointslices",
	"backends":         "services endpointslices",
	"why":              "events logs",
	"usage":            "top stats",
	"consumption":      "top",
	"heaviest":         "top",
	"kubelet":          "nodes logs stats",
	"journal":          "nodes logs",
	"command":          "pods exec",
	"commands":         "pods exec",
	"shell":            "pods exec",
	"broken":           "events logs",
	"failing":          "events logs",
	"fail":             "events logs",
	"fails":            "events logs",
	"error":            "events logs",
	"errors":           "events logs",
	"wrong":            "events logs",
	"debug":            "events logs",
	"diagnose":         "events logs",
	"troubleshoot":     "events logs",
	"happened":         "events",
	"warning":          "events",
	"warnings":         "events",
	"permission":       "roles rolebindings clusterroles clusterrolebindings",
	"permissions":      "roles rolebindings clusterroles clusterrolebindings",
	"access":           "roles rolebindings clusterroles clusterrolebindings",
	"who":              "rolebindings clusterrolebindings",
	"crd":              "customresourcedefinitions",
	"crds":             "customresourcedefinitions",
	"custom":           "customresourcedefinitions",
	"certificate":      "secrets certificatesigningrequests",
	"cert":             "secrets certificatesigningrequests",
	"password":         "secrets",
	"credentials":      "secrets",
	"disk":             "persistentvolumeclaims",
	"storage":          "persistentvolumeclaims storageclasses",
	"volume":           "persistentvolumeclaims persistentvolumes",
	"host":             "ingresses",
	"hosts":            "ingresses",
	"url":              "ingresses",
	"domain":           "ingresses",
	"schedule":         "cronjobs",
	"cron":             "cronjobs",
	"deploy":           "deployments",
	"rollout":          "deployments",
	"config":           "configmaps",
	"kinds":            "api_resources",
	"types":            "api_resources",
	"discovery":        "api_resources",

	// A Service nothing reaches: its selector and ports, and the endpoints
	// they select (reads; patching Endpoints by hand is not the fix).
	"selector":     "services endpointslices endpoints",
	"port":         "services endpointslices endpoints",
	"ports":        "services endpointslices endpoints",
	"reachable":    "services endpointslices endpoints",
	"unreachable":  "services endpointslices endpoints",
	"accessible":   "services endpointslices endpoints",
	"inaccessible": "services endpointslices endpoints",
	"connect":      "services endpointslices endpoints",
	"connection":   "services endpointslices endpoints",
	"refused":      "services endpointslices endpoints",

	// Bindings are what grant a role's permissions to users, groups and
	// service accounts.
	"grant":    "rolebindings clusterrolebindings",
	"grants":   "rolebindings clusterrolebindings",
	"granted":  "rolebindings clusterrolebindings",
	"bound":    "rolebindings clusterrolebindings",
	"binding":  "rolebindings clusterrolebindings",
	"bindings": "rolebindings clusterrolebindings",

	// What is created goes in a namespace, which may have to be created
	// (or looked up) first: "create namespace, configmaps and a pod", where
	// the namespace, named beside other subjects, would rank as a scope.
	"create": "namespaces",
}

// verbSynonyms are the words that ask for a verb other than by its name.
var verbSynonyms = map[string][]string{
	"delete": {"remove", "destroy", "kill", "evict"},
	"patch":  {"update", "edit", "change", "modify", "set", "label", "annotate", "switch", "cordon", "uncordon", "resize", "expand", "grow"},
	"scale":  {"resize", "replicas", "autoscale"},
	"create": {"new", "add", "make"},
	"apply":  {"manifest", "yaml", "declarative"},
	"logs":   {"log", "output", "stdout", "stderr", "tail"},
	"exec":   {"command", "commands", "shell", "execute", "wget", "curl", "cat", "inside"},
	"get":    {"describe", "inspect", "details"},

	"rollout.restart": {"restart", "bounce", "redeploy", "recycle"},
	"rollout.status":  {"progress", "finished", "verify", "wait"},
	"rollout.undo":    {"rollback", "revert", "undo", "back"},
	"rollout.history": {"revisions", "history", "versions"},
}

// narrowVerbs take no intents from their subject.
var narrowVerbs = map[string]bool{"top": true, "exec": true, "evict": true, "drain": true, "stats": true}

// searchHints returns the intent and verb words of the operation verb on
// subject (a resource's plural, or the name of an operation on no
// resource): an intent naming the verb also asks for it.
func searchHints(subject, verb string) (intents, verbWords []string) {
	verbWords = slices.Clone(verbSynonyms[verb])
	for w, targets := range intentTable {
		ts := strings.Fields(targets)
		// A diagnostic or disruptive verb answers only the intents that
		// name it: "crashing" asks for a pod's logs and events, not for its
		// top or an exec.
		if nodeLogs := subject == "nodes" && verb == "logs"; (slices.Contains(ts, verb) && (!nodeLogs || slices.Contains(ts, subject))) || slices.Contains(ts, subject) && !narrowVerbs[verb] {
			intents = append(intents, w)
		}
		if slices.Contains(ts, verb) {
			verbWords = append(verbWords, w)
		}
	}
	slices.Sort(intents)
	slices.Sort(verbWords)
	return slices.Compact(intents), slices.Compact(verbWords)
}

// hintsCache shares one *catalog.Hints among the operations of one
// resource and verb in one discovery.
type hintsCache map[string]*catalog.Hints

// hints returns the hints of verb on subject for a result of kind.
func (c hintsCache) hints(subject, verb, kind string) *catalog.Hints {
	key := subject + "|" + verb + "|" + kind
	if h, ok := c[key]; ok {
		return h
	}
	intents, verbWords := searchHints(subject, verb)
	weight := 0.0
	switch {
	case kind == "PodMetrics" || kind == "NodeMetrics":
		weight = 0.4 // pods.top and nodes.top answer better
	case narrowVerbs[verb], subject == "nodes" && verb == "logs":
		weight = 0.6 // asked for by name, not by their subject alone
	case verb == "page":
		weight = 0.3 // list answers, unless pages are asked for
	}
	h := &catalog.Hints{Intents: intents, VerbWords: verbWords, Weight: weight, Leading: leadingFields,
		Important: importantFields, Keep: keepPaths[kind], Detail: detailPaths[kind], Columns: columnsOf(kind),
		// "pods in a namespace": the namespace is where, not what.
		Scope: subject == "namespaces"}
	c[key] = h
	return h
}
