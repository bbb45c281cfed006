// Package controlplane runs a real, local, living Kubernetes control plane
// for tests and `kubecode demo`: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler (v1.37.1), and KWOK (v0.8.0),
// all built once from Go modules by EnsureBinaries into
// ~/.cache/kubecode/bin, plus a simulated kubelet for KWOK's nodes that
// serves container logs, exec, node logs and statistics.
// Start returns in about 4 s once the binaries are cached.
//
// # What is real and what is simulated
//
// The API server, the controllers (Deployments, ReplicaSets, Jobs,
// StatefulSets, garbage collection, namespace deletion, ServiceAccounts,
// EndpointSlices, HPA, PersistentVolume binding, ...) and the scheduler are
// Kubernetes' own. Nodes, containers, the registry, storage and logs are
// simulated:
//
//   - Simulated nodes (kwok-node-1..3, and any Node annotated
//     kwok.x-k8s.io/node=fake) are kept Ready by KWOK, which also finishes
//     their pods' deletion (stages.yaml). Their kubelet is the node
//     simulation (nodesim.go): it decides every container's state from the
//     pod's spec, the simulated registry (Images, images.yaml) and the
//     ConfigMaps and Secrets the pod refers to (podsim.go), runs the
//     containers' programs in simulated time (program.go: shell scripts
//     through mvdan.cc/sh, with every command and file simulated), and
//     writes the pod's status and the kubelet's Events. A pod annotated
//     simulate.kubecode.io/failure: image-pull, crash-loop or oom-killed
//     fails that way whatever its spec says.
//   - The default StorageClass "standard" has a simulated provisioner
//     (storage.go) that provisions, resizes and deletes volumes.
//   - Static nodes (node-1..3) run nothing: pods bound to them keep the
//     status a scenario writes through the status subresource. They carry
//     StaticTaint, so the scheduler never places a pod there. The node
//     lifecycle controller does not run (nothing heartbeats the static
//     nodes, and it would evict their pods).
//   - The Kubelet serves the logs of every node's pods: those given to
//     SetLogs, else what a simulated container printed. It runs kubectl
//     exec in a container's simulated shell and files (exec.go, with the
//     kubelet's own streaming server from k8s.io/cri-streaming; wget, curl,
//     nc and nslookup reach Services and pods, commands.go), and answers
//     the node proxy's /stats/summary, /metrics/resource and /logs/
//     (the kubelet's journal, from its Events) per node (nodestats.go).
//
// Options.Static starts only etcd and kube-apiserver, as before any of this.
//
// In a test package, one control plane serves all tests:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplane.Main(nil, func(ctx context.Context, c *controlplane.ControlPlane) error {
//			cp = c
//			return nil
//		}, m.Run))
//	}
//
// or, seeded with the demo scenario (see package scenario), scenario.Main:
//
//	func TestMain(m *testing.M) {
//		os.Exit(scenario.Main(&cp, &truth, m.Run))
//	}
//
//	func TestSomething(t *testing.T) {
//		ns := cp.Namespace(t) // created now, deleted at the end of the test
//		cs, _ := kubernetes.NewForConfig(cp.Admin)
//		...
//	}
//
// Elsewhere: cp, err := controlplane.Start(ctx, nil); defer cp.Stop().
//
// # Identities
//
// kube-apiserver authenticates bearer tokens from a token file and
// authorizes with RBAC. Admin (user "admin", group system:masters) may do
// everything; Viewer (user "viewer") may get, list and watch pods, pods/log,
// events and namespaces, so listing secrets or configmaps is a 403. Both
// come as *rest.Config and as kubeconfig files whose CA data is the control
// plane's own CA (no insecure-skip-tls-verify). The components have
// identities of their own: system:kube-scheduler (bootstrap RBAC), and
// kubecode:kube-controller-manager and kubecode:kwok (system:masters).
//
// # Logs
//
// `GET /api/v1/namespaces/NS/pods/NAME/log` works for pods on any node:
// every Node's status has InternalIP Kubelet.IP (the machine's first
// global unicast address: the node proxy refuses loopback ones) and
// daemonEndpoints.kubeletEndpoint.Port = a port of the fake kubelet's own
// for that node (the node proxy's requests name no node). The
// kube-apiserver flags that make this work:
//
//	--kubelet-preferred-address-types=InternalIP
//	--kubelet-certificate-authority=<CA that signed the fake kubelet's cert>
//	--kubelet-client-certificate, --kubelet-client-key (issued by that CA)
//
// kube-apiserver verifies the kubelet's serving certificate (without the CA
// flag it falls back to the system roots and the request fails), so the fake
// kubelet's certificate carries the IP SANs 127.0.0.1 and Kubelet.IP and is
// signed by the same CA as the apiserver's; the fake kubelet serves only
// clients with a certificate of that CA, since it listens on an address
// others may reach. Logs come from Kubelet.SetLogs and honour
// previous, tailLines, timestamps, sinceSeconds, sinceTime and limitBytes.
// Note that client-go's DoRaw reports kubelet errors (no previous container)
// as "unknown reason"; Stream returns the server's message.
//
// # Other kube-apiserver flags
//
// --endpoint-reconciler-type=none, --service-cluster-ip-range=10.0.0.0/24,
// --disable-admission-plugins=ServiceAccount (pods need no ServiceAccount
// object, so scenarios seed pods in namespaces the ServiceAccount
// controller has not reached yet), a serving certificate from the control
// plane's CA, and an RSA service account key generated in Go, which the
// controller-manager signs ServiceAccount tokens with. etcd runs with
// --unsafe-no-fsync. KWOK allocates pod IPs from 10.96.0.0/16, apart from the
// services (10.0.0.0/24) and the seeded pods (10.244.0.0/16, 10.245.0.0/16).
//
// # Processes
//
// Every process runs in its own process group with SIGKILL as its
// parent-death signal, so it dies with the test binary even on panic,
// os.Exit or Ctrl-C. Stop ends KWOK, the scheduler and the
// controller-manager, then kube-apiserver before etcd (SIGTERM, then SIGKILL
// after 5s) and removes the data directory; data directories left by dead
// processes are removed by the next Start. Their output is in
// Dir/<name>.log, and its tail is in start errors.
package controlplane
