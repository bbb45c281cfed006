package kubernetes

import "github.com/kubecode/kubecode/catalog"

// Unserved lists what people ask of Kubernetes that this adapter does not
// serve as an operation, with what to do instead: search and the type
// check say so rather than offer unrelated operations.
func (a *Adapter) Unserved() []catalog.Unserved {
	return []catalog.Unserved{
		{Name: "kubernetes.pods.attach", Words: []string{"attach"},
			Why: "kubecode does not attach to containers: read their output with tools.kubernetes.pods.logs, or run a command in one with tools.kubernetes.pods.exec"},
		{Name: "kubernetes.pods.portforward", Words: []string{"port forward", "portforward", "forward a port"},
			Why: "kubecode does not forward ports (a script reaches the cluster through operations only): check what a Service reaches with tools.kubernetes.endpointslices.list, or ask the user to run kubectl port-forward"},
		{Name: "kubernetes.pods.top", Words: []string{"top", "cpu usage", "memory usage", "resource usage", "usage of cpu", "usage of memory"},
			Why: "this cluster serves no metrics.k8s.io, so there is no top: install metrics-server (kubernetes-sigs/metrics-server); meanwhile compare containers' resources.requests and limits from tools.kubernetes.pods.list, or read a node's tools.kubernetes.nodes.stats"},
		{Name: "kubernetes.pods.cp", Words: []string{"cp", "copy a file", "copy files", "copy file"},
			Why: "kubecode does not copy files in or out of containers: a ConfigMap holds small files a pod mounts (tools.kubernetes.configmaps.create)"},
	}
}
