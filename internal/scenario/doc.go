// Package scenario seeds a Kubernetes cluster with a realistic, partly
// broken workload for tests and `kubecode demo`, and describes what it
// seeded as a Truth that tests compare answers against.
//
// The demo scenario is declarative: YAML fixtures embedded from
// fixtures/demo (namespaces shop, payments, monitoring and data; a CRD
// widgets.demo.kubecode.io with instances; ConfigMaps; Secrets holding
// canary values; crash-looping, image-pull-failing and unschedulable pods; a
// Deployment whose rollout is stuck; a Service without endpoints; Events;
// container logs), plus a generator of healthy pods with their Deployments,
// Services and EndpointSlices. No controller runs on the local control
// plane, so the seeder writes pod and deployment status through the status
// subresource, binds pods to the registered nodes itself, derives the
// ReplicaSets a deployment controller would have made (with ownerReferences
// Deployment → ReplicaSet → Pod) and creates EndpointSlices explicitly.
// Seeding the demo (209 pods) takes about 2 s; 5,000 healthy pods about 22 s
// (BenchmarkSeed).
//
//	truth, err := scenario.Seed(ctx, cp.Admin, cp.Kubelet, nil) // ~200 healthy pods
//	for _, c := range truth.CrashLooping {
//		fmt.Println(c.Namespace, c.Pod, c.Restarts, c.LastLogLine)
//	}
//
// Describe returns the same Truth without a cluster.
package scenario
