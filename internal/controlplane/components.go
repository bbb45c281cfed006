package controlplane

import (
	"context"
	"crypto/tls"
	_ "embed" // the KWOK stages
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The living part of the control plane: kube-controller-manager and
// kube-scheduler, each with an identity of its own, and KWOK, which plays
// the kubelet of the simulated nodes by the stages in stages.yaml.

// Identities of the components, known to kube-apiserver through its token
// file. The scheduler's is the user Kubernetes' bootstrap RBAC policy
// grants its permissions to. The controller-manager runs every controller
// under its own identity (--use-service-account-credentials=false: one
// token per controller costs about 5 s of start-up), so it and KWOK, which
// writes any node's and pod's status, are in group system:masters.
const (
	controllerManagerUser = "kubecode:kube-controller-manager"
	schedulerUser         = "system:kube-scheduler"
	kwokUser              = "kubecode:kwok"
	kubeletUser           = "kubecode:kubelet"
)

// kwokStages are KWOK's stage definitions: simulated nodes become Ready and
// their deleted pods go away.
//
//go:embed stages.yaml
var kwokStages []byte

// Simulated nodes are managed by KWOK because they carry this annotation.
const (
	kwokAnnotation = "kwok.x-k8s.io/node"
	kwokManaged    = "fake"
)

// StaticTaint keeps the scheduler off the static nodes (node-1, ...), where
// nothing would run a pod: only pods bound to them explicitly live there.
var StaticTaint = corev1.Taint{Key: "node.kubecode.io/static", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// podCIDR is where the node simulation allocates pod IPs, apart from the service range
// (10.0.0.0/24) and the seeded pods' IPs (10.244.0.0/16, 10.245.0.0/16).
const podCIDR = "10.96.0.0/16"

// disabledControllers are left out of kube-controller-manager's default
// set: nothing heartbeats the static nodes, so the node lifecycle
// controller would mark them NotReady and evict the scenario's pods.
var disabledControllers = []string{"node-lifecycle-controller"}

// componentFiles are the kubeconfigs and credentials of the components.
type componentFiles struct {
	dir                     string
	caFile, saKeyFile       string
	controllerManagerConfig string
	schedulerConfig         string
	kwokConfig              string
}

// startComponents starts kube-controller-manager, kube-scheduler and KWOK
// at once, and returns a function that waits until each is healthy.
func (cp *ControlPlane) startComponents(o *Options, f componentFiles) (wait func(context.Context) error, err error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	file := func(name string) string { return filepath.Join(f.dir, name) }
	cp.startControllerManager = func() (*process, error) {
		return startProcess("kube-controller-manager", o.Binaries.KubeControllerManager, cp.controllerManagerArgs(f, ports[0]), file("kube-controller-manager.log"))
	}
	cp.controllerManagerPort = ports[0]
	if !o.HoldControllers {
		if cp.controllerManager, err = cp.startControllerManager(); err != nil {
			return nil, err
		}
	}
	cp.scheduler, err = startProcess("kube-scheduler", o.Binaries.KubeScheduler, []string{
		"--kubeconfig=" + f.schedulerConfig,
		"--authentication-kubeconfig=" + f.schedulerConfig,
		"--authorization-kubeconfig=" + f.schedulerConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[1]),
		"--cert-dir=" + file("scheduler-certs"),
		"--leader-elect=false",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--profiling=false",
	}, file("kube-scheduler.log"))
	if err != nil {
		return nil, err
	}
	if err := writeFiles(map[string][]byte{file("kwok-stages.yaml"): kwokStages}); err != nil {
		return nil, err
	}
	cp.kwok, err = startProcess("kwok", o.Binaries.Kwok, []string{
		"--kubeconfig=" + f.kwokConfig,
		"--config=" + file("kwok-stages.yaml"),
		"--manage-nodes-with-annotation-selector=" + kwokAnnotation + "=" + kwokManaged,
		"--cidr=" + podCIDR,
		"--node-ip=127.0.0.1",
		"--server-address=127.0.0.1:" + strconv.Itoa(ports[2]),
	}, file("kwok.log"))
	if err != nil {
		return nil, err
	}

	return func(ctx context.Context) error { return cp.waitComponents(ctx, ports) }, nil
}

// controllerManagerArgs are kube-controller-manager's arguments, serving
// its health on port.
func (cp *ControlPlane) controllerManagerArgs(f componentFiles, port int) []string {
	return []string{
		"--kubeconfig=" + f.controllerManagerConfig,
		"--authentication-kubeconfig=" + f.controllerManagerConfig,
		"--authorization-kubeconfig=" + f.controllerManagerConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(f.dir, "controller-manager-certs"),
		"--leader-elect=false",
		"--controllers=*," + "-" + strings.Join(disabledControllers, ",-"),
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + f.saKeyFile,
		"--root-ca-file=" + f.caFile,
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		// Autoscalers act within seconds, not the default 15 s, so that
		// Helm drift tests and the demo see them keep their bounds.
		"--horizontal-pod-autoscaler-sync-period=2s",
		// A Service's endpoints are written once a second, not once per
		// pod change: seeding 20,000 pods behind sixteen Services wrote
		// each Service's Endpoints (a thousand addresses) and its slices
		// after every one of the pods' writes, which grew with the square
		// of the pods and held the API server.
		"--endpoint-updates-batch-period=1s",
		"--endpointslice-updates-batch-period=1s",
		// One client serves every controller: the default 20 requests a
		// second would take minutes to adopt a 5,000-pod scenario.
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--profiling=false",
	}
}

// waitComponents waits until the components answer /healthz on ports.
func (cp *ControlPlane) waitComponents(ctx context.Context, ports []int) error {
	// The components serve /healthz on self-signed certificates.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health checks
	defer insecure.CloseIdleConnections()
	type check struct {
		p      *process
		client *http.Client
		url    string
	}
	checks := []check{
		{cp.scheduler, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[1])},
		{cp.kwok, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[2])},
	}
	if cp.controllerManager != nil {
		checks = append(checks, check{cp.controllerManager, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])})
	}
	errs := make(chan error, len(checks))
	for _, c := range checks {
		go func() {
			if err := waitReady(ctx, c.p, c.client, c.url); err != nil {
				errs <- fmt.Errorf("%s: %w", c.p.name, err)
				return
			}
			errs <- nil
		}()
	}
	for range checks {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// waitReconciling waits until the controllers act: the service account
// controller has made the default namespace's ServiceAccount.
func waitReconciling(ctx context.Context, cs kubernetes.Interface) error {
	for {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("controllers: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controllers are not reconciling: no default ServiceAccount: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StartControllers starts kube-controller-manager, held back by
// Options.HoldControllers, and returns once its controllers reconcile. It
// does nothing when they already run (or the control plane is Static).
func (cp *ControlPlane) StartControllers(ctx context.Context) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.controllerManager != nil || cp.startControllerManager == nil {
		return nil
	}
	p, err := cp.startControllerManager()
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	cp.controllerManager = p
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health checks
	defer insecure.CloseIdleConnections()
	if err := waitReady(ctx, p, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", cp.controllerManagerPort)); err != nil {
		return fmt.Errorf("controlplane: %s: %w", p.name, err)
	}
	admin, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	if err := waitReconciling(ctx, admin); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	return nil
}
