// Package controlplane runs a real, local Kubernetes control plane for tests
// and `kubecode demo`: etcd and kube-apiserver (v1.37.1, built once from Go
// modules by EnsureBinaries into ~/.cache/kubecode/bin), plus a fake kubelet
// that serves container logs. No controller-manager, scheduler or kubelet
// runs: objects are stored and validated, never reconciled, so a scenario
// writes the status it wants through the status subresource.
//
// In a test package, one control plane serves all tests:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplane.Main(nil, func(ctx context.Context, c *controlplane.ControlPlane) error {
//			cp = c
//			return nil // or seed: scenario.Seed(ctx, c.Admin, c.Kubelet, nil)
//		}, m.Run))
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
// plane's own CA (no insecure-skip-tls-verify).
//
// # Logs
//
// `GET /api/v1/namespaces/NS/pods/NAME/log` works for pods whose
// spec.nodeName is one of the registered nodes (node-1..node-3): the Node's
// status has InternalIP 127.0.0.1 and daemonEndpoints.kubeletEndpoint.Port =
// the fake kubelet's port. The kube-apiserver flags that make this work:
//
//	--kubelet-preferred-address-types=InternalIP
//	--kubelet-certificate-authority=<CA that signed the fake kubelet's cert>
//
// kube-apiserver verifies the kubelet's serving certificate (without the CA
// flag it falls back to the system roots and the request fails), so the fake
// kubelet's certificate carries the IP SAN 127.0.0.1 and is signed by the
// same CA as the apiserver's. Logs come from Kubelet.SetLogs and honour
// previous, tailLines, timestamps, sinceSeconds, sinceTime and limitBytes.
// Note that client-go's DoRaw reports kubelet errors (no previous container)
// as "unknown reason"; Stream returns the server's message.
//
// # Other kube-apiserver flags
//
// --endpoint-reconciler-type=none, --service-cluster-ip-range=10.0.0.0/24,
// --disable-admission-plugins=ServiceAccount (pods need no ServiceAccount
// object, as no controller creates them), a serving certificate from the
// control plane's CA, and an RSA service account key generated in Go. etcd
// runs with --unsafe-no-fsync.
//
// # Processes
//
// Both processes run in their own process group with SIGKILL as their
// parent-death signal, so they die with the test binary even on panic,
// os.Exit or Ctrl-C. Stop ends kube-apiserver before etcd (SIGTERM, then
// SIGKILL after 5s) and removes the data directory; data directories left by
// dead processes are removed by the next Start. Their output is in
// Dir/etcd.log and Dir/kube-apiserver.log, and its tail is in start errors.
package controlplane
