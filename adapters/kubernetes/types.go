package kubernetes

import (
	"slices"

	"github.com/kubecode/kubecode/catalog"
)

// Declaration hints: which fields of Kubernetes objects an agent needs.
// The catalog compacts result types within a budget; these keep what
// matters visible and share the object metadata type.

// objectMeta is the compact, shared form of every object's metadata: the
// catalog declares it once per answer as ObjectMeta.
var objectMeta = &catalog.Schema{
	Name: "ObjectMeta", Title: "ObjectMeta", Type: "object", Required: []string{"name"},
	Properties: map[string]*catalog.Schema{
		"name":              {Type: "string"},
		"namespace":         {Type: "string"},
		"uid":               {Type: "string"},
		"labels":            {Type: "object", AdditionalProperties: &catalog.Schema{Type: "string"}},
		"annotations":       {Type: "object", AdditionalProperties: &catalog.Schema{Type: "string"}},
		"creationTimestamp": {Type: "string"},
		"deletionTimestamp": {Type: "string"},
		"ownerReferences": {Type: "array", Items: &catalog.Schema{
			Type: "object", Required: []string{"kind", "name"},
			Properties: map[string]*catalog.Schema{
				"kind": {Type: "string"}, "name": {Type: "string"}, "controller": {Type: "boolean"},
			},
			AdditionalProperties: &catalog.Schema{},
		}},
	},
	AdditionalProperties: &catalog.Schema{},
}

// withObjectMeta returns obj with every metadata field replaced by the
// shared ObjectMeta, and metadata required at the top: every object the
// API returns has it.
func withObjectMeta(obj *catalog.Schema) *catalog.Schema {
	var walk func(s *catalog.Schema, top bool)
	walk = func(s *catalog.Schema, top bool) {
		if s == nil || s == objectMeta {
			return
		}
		for k, p := range s.Properties {
			if k == "metadata" && p != nil && (p.Type == "object" || p.Type == "") {
				s.Properties[k] = objectMeta
				if top && !slices.Contains(s.Required, k) {
					s.Required = append(append([]string(nil), s.Required...), k)
				}
				continue
			}
			walk(p, false)
		}
		walk(s.Items, false)
		walk(s.AdditionalProperties, false)
	}
	walk(obj, true)
	return obj
}

// leadingFields come first in objects, in this order.
var leadingFields = []string{"apiVersion", "kind", "metadata", "name", "namespace", "allNamespaces", "type", "spec", "status"}

// importantFields are kept ahead of their depth in any schema (CRDs too).
var importantFields = []string{
	"name", "namespace", "type", "status", "phase", "reason", "message", "ready", "replicas", "readyReplicas",
	"availableReplicas", "conditions", "image", "selector", "state", "nodeName", "host", "schedule", "data",
	"count", "lastTransitionTime", "observedGeneration",
}

// keepPaths are the fields an agent needs of well-known kinds, shown
// whatever the budget. Paths go through arrays and maps as if they were
// not there: spec.containers.name is spec.containers[].name.
var keepPaths = map[string][]string{
	"Pod": {
		"spec.nodeName", "spec.containers.name", "spec.containers.image", "spec.containers.resources.requests",
		"spec.containers.resources.limits", "spec.restartPolicy", "spec.serviceAccountName",
		"status.phase", "status.reason", "status.message", "status.podIP", "status.startTime",
		"status.conditions.type", "status.conditions.status", "status.conditions.reason", "status.conditions.message",
		"status.containerStatuses.name", "status.containerStatuses.ready", "status.containerStatuses.restartCount",
		"status.containerStatuses.image", "status.containerStatuses.state.waiting.reason",
		"status.containerStatuses.state.waiting.message", "status.containerStatuses.state.running.startedAt",
		"status.containerStatuses.state.terminated.reason", "status.containerStatuses.state.terminated.exitCode",
		"status.containerStatuses.lastState.terminated.reason", "status.containerStatuses.lastState.terminated.exitCode",
		"status.containerStatuses.lastState.terminated.finishedAt",
	},
	"Deployment":  workloadPaths,
	"StatefulSet": workloadPaths,
	"ReplicaSet":  workloadPaths,
	"DaemonSet": {
		"spec.selector", "spec.template.spec.containers.name", "spec.template.spec.containers.image",
		"status.desiredNumberScheduled", "status.currentNumberScheduled", "status.numberReady",
		"status.numberAvailable", "status.numberUnavailable", "status.updatedNumberScheduled", "status.conditions",
	},
	"Event": {
		"type", "reason", "message", "count", "firstTimestamp", "lastTimestamp", "eventTime",
		"involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "involvedObject.uid",
		"source.component", "regarding.kind", "regarding.name", "regarding.namespace", "note",
	},
	"Service": {
		"spec.type", "spec.selector", "spec.clusterIP", "spec.ports.name", "spec.ports.port",
		"spec.ports.targetPort", "spec.ports.protocol", "spec.ports.nodePort",
		"status.loadBalancer.ingress.ip", "status.loadBalancer.ingress.hostname",
	},
	"Node": {
		"spec.unschedulable", "spec.taints", "status.conditions.type", "status.conditions.status",
		"status.conditions.reason", "status.conditions.message", "status.capacity", "status.allocatable",
		"status.nodeInfo.kubeletVersion", "status.addresses",
	},
	"Job": {
		"spec.completions", "spec.parallelism", "spec.backoffLimit", "status.active", "status.succeeded",
		"status.failed", "status.startTime", "status.completionTime", "status.conditions",
	},
	"CronJob": {"spec.schedule", "spec.suspend", "status.lastScheduleTime", "status.lastSuccessfulTime", "status.active"},
	"Ingress": {
		"spec.ingressClassName", "spec.rules.host", "spec.rules.http.paths.path",
		"spec.rules.http.paths.backend.service.name", "spec.rules.http.paths.backend.service.port",
		"spec.tls.hosts", "status.loadBalancer",
	},
	"PersistentVolumeClaim": {
		"spec.storageClassName", "spec.accessModes", "spec.resources.requests", "spec.volumeName",
		"status.phase", "status.capacity", "status.conditions",
	},
	"EndpointSlice": {"addressType", "endpoints.addresses", "endpoints.conditions.ready", "endpoints.targetRef", "ports"},
	"Endpoints":     {"subsets.addresses.ip", "subsets.addresses.targetRef", "subsets.notReadyAddresses.ip", "subsets.ports"},
	"HorizontalPodAutoscaler": {
		"spec.scaleTargetRef", "spec.minReplicas", "spec.maxReplicas", "status.currentReplicas",
		"status.desiredReplicas", "status.conditions",
	},
	"ConfigMap": {"data"},
	"Secret":    {"type", "data"},
}

// detailPaths are the further fields a declaration asked for by name shows
// (search "Pod" or "kubernetes.pods.get"): what scripts that audit or
// change workloads read.
var detailPaths = map[string][]string{
	"Pod":         podSpecDetail("spec."),
	"Deployment":  append(podSpecDetail("spec.template.spec."), "spec.strategy", "spec.paused", "spec.minReadySeconds", "spec.progressDeadlineSeconds", "spec.revisionHistoryLimit"),
	"StatefulSet": podSpecDetail("spec.template.spec."),
	"DaemonSet":   podSpecDetail("spec.template.spec."),
	"ReplicaSet":  podSpecDetail("spec.template.spec."),
	"Job":         podSpecDetail("spec.template.spec."),
}

func podSpecDetail(prefix string) []string {
	var out []string
	for _, p := range []string{
		"containers.ports", "containers.env", "containers.envFrom", "containers.command", "containers.args",
		"containers.livenessProbe", "containers.readinessProbe", "containers.startupProbe",
		"containers.securityContext", "containers.volumeMounts", "containers.imagePullPolicy",
		"initContainers.name", "initContainers.image", "securityContext", "volumes.name",
		"volumes.secret", "volumes.configMap", "volumes.persistentVolumeClaim", "nodeSelector", "tolerations",
		"hostNetwork", "serviceAccountName",
	} {
		out = append(out, prefix+p)
	}
	return out
}

var workloadPaths = []string{
	"spec.replicas", "spec.selector", "spec.template.spec.containers.name", "spec.template.spec.containers.image",
	"status.replicas", "status.readyReplicas", "status.availableReplicas", "status.updatedReplicas",
	"status.unavailableReplicas", "status.conditions.type", "status.conditions.status",
	"status.conditions.reason", "status.conditions.message",
}

// Table columns of direct mode's lists, as kubectl get shows them.

func col(name string, paths ...string) catalog.Column {
	return catalog.Column{Name: name, Paths: paths}
}

var (
	namespaceCol = col("NAMESPACE", "metadata.namespace")
	nameCol      = col("NAME", "metadata.name")
	createdCol   = col("CREATED", "metadata.creationTimestamp")
)

// kindColumns are the columns of well-known kinds after namespace and name.
var kindColumns = map[string][]catalog.Column{
	"Pod": {col("STATUS", "status.containerStatuses.state.waiting.reason", "status.containerStatuses.state.terminated.reason", "status.phase"),
		col("RESTARTS", "status.containerStatuses.restartCount"), col("NODE", "spec.nodeName"), col("IP", "status.podIP")},
	"Deployment": {col("DESIRED", "spec.replicas"), col("READY", "status.readyReplicas"), col("UP-TO-DATE", "status.updatedReplicas"),
		col("AVAILABLE", "status.availableReplicas"), col("IMAGES", "spec.template.spec.containers.image")},
	"StatefulSet": {col("DESIRED", "spec.replicas"), col("READY", "status.readyReplicas"), col("IMAGES", "spec.template.spec.containers.image")},
	"ReplicaSet":  {col("DESIRED", "spec.replicas"), col("READY", "status.readyReplicas"), col("OWNER", "metadata.ownerReferences.name")},
	"DaemonSet":   {col("DESIRED", "status.desiredNumberScheduled"), col("READY", "status.numberReady"), col("IMAGES", "spec.template.spec.containers.image")},
	"Service": {col("TYPE", "spec.type"), col("CLUSTER-IP", "spec.clusterIP"), col("PORTS", "spec.ports.port"),
		col("SELECTOR", "spec.selector")},
	"Event": {col("TYPE", "type"), col("REASON", "reason"), col("OBJECT", "involvedObject.kind", "regarding.kind"),
		col("OBJECT-NAME", "involvedObject.name", "regarding.name"), col("COUNT", "count"), col("MESSAGE", "message", "note")},
	"Node":                    {col("READY", "status.conditions.status"), col("VERSION", "status.nodeInfo.kubeletVersion")},
	"Job":                     {col("SUCCEEDED", "status.succeeded"), col("FAILED", "status.failed"), col("ACTIVE", "status.active")},
	"CronJob":                 {col("SCHEDULE", "spec.schedule"), col("SUSPEND", "spec.suspend"), col("LAST", "status.lastScheduleTime")},
	"Ingress":                 {col("CLASS", "spec.ingressClassName"), col("HOSTS", "spec.rules.host")},
	"Secret":                  {col("TYPE", "type")},
	"EndpointSlice":           {col("ADDRESSES", "endpoints.addresses"), col("READY", "endpoints.conditions.ready")},
	"PersistentVolumeClaim":   {col("STATUS", "status.phase"), col("VOLUME", "spec.volumeName"), col("CAPACITY", "status.capacity.storage")},
	"HorizontalPodAutoscaler": {col("TARGET", "spec.scaleTargetRef.name"), col("MIN", "spec.minReplicas"), col("MAX", "spec.maxReplicas"), col("REPLICAS", "status.currentReplicas")},
	"Namespace":               {col("STATUS", "status.phase")},
}

// columnsOf returns the table columns of kind: namespace (left out of
// tables where no row has one), name, the kind's own, and creation time.
func columnsOf(kind string) []catalog.Column {
	return append(append([]catalog.Column{namespaceCol, nameCol}, kindColumns[kind]...), createdCol)
}
