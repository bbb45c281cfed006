// Package kubernetes implements kubecode's Kubernetes operations on top of
// client-go: it discovers every served resource (CRDs included), describes
// each as catalog operations with schemas taken from the API server's
// OpenAPI v3, and executes them with the dynamic client.
//
// Operation names read like code: kubernetes.<plural>.<verb>, e.g.
// kubernetes.pods.list, kubernetes.deployments.get, kubernetes.pods.logs,
// kubernetes.events.list and kubernetes.api_resources. A plural served by
// two groups is group-qualified for the non-core group
// (kubernetes.events_events_k8s_io.list).
//
//	a, err := kubernetes.New(restConfig, nil)
//	ops, version, err := a.Discover(ctx)     // []*catalog.Operation
//	out, err := a.Call(ctx, "kubernetes.pods.list", json.RawMessage(`{"namespace":"shop"}`))
package kubernetes
