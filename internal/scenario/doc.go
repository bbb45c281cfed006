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
// Services and EndpointSlices. These pods are static: the seeder binds them
// to the control plane's static nodes, where nothing runs them, and writes
// their status (and the Deployments' and ReplicaSets') through the status
// subresource, so the Truth holds for as long as the cluster runs. Where
// controllers run, it creates what is owned before its owner (Pod →
// ReplicaSet → Deployment) so that each controller adopts what it finds and
// makes nothing new, and the status it writes is what the controllers
// would compute; where none runs, it writes the owner references itself.
//
// The live part (fixtures/live, namespace live; Truth.Live) is what the
// cluster itself runs on KWOK's simulated nodes: a healthy Deployment that
// really rolls out, one whose image cannot be pulled, a StatefulSet, a Job
// and an HPA. Seed creates it where simulated nodes exist and waits until it
// has settled. Seeding the demo takes about 2 s plus the live part's few
// seconds; see BenchmarkSeed for 5,000 healthy pods.
//
//	cp, err := controlplane.Start(ctx, &controlplane.Options{HoldControllers: true})
//	...
//	truth, err := scenario.Seed(ctx, cp.Admin, cp.Kubelet, &scenario.SeedOptions{
//		StartControllers: cp.StartControllers, // ~200 healthy pods
//	})
//	for _, c := range truth.CrashLooping {
//		fmt.Println(c.Namespace, c.Pod, c.Restarts, c.LastLogLine)
//	}
//
// Describe returns the same Truth without a cluster.
package scenario
