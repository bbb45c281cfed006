package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configure Start. A nil *Options is the same as the zero value.
type Options struct {
	// Binaries are the programs to run. Zero means EnsureBinaries with
	// BinariesOptions{Progress: Progress}, which builds them once if needed.
	Binaries Binaries
	// Nodes is the number of static Node objects (node-1, node-2, ...):
	// nothing runs their pods, which keep the status a scenario writes.
	// They are tainted NoSchedule (StaticTaint) unless Static is set. Zero
	// means 3.
	Nodes int
	// SimulatedNodes is the number of Nodes KWOK manages (kwok-node-1, ...):
	// pods scheduled there start, become Ready, complete or fail as on a
	// real cluster. Zero means 3.
	SimulatedNodes int
	// Static starts only etcd and kube-apiserver: no controller-manager,
	// scheduler or KWOK, so nothing reconciles.
	Static bool
	// HoldControllers starts everything but kube-controller-manager, until
	// StartControllers: a scenario of 50,000 pods is written several times
	// faster with its owners at creation, owner first, and no controller
	// acting on each write (a ReplicaSet's controller would make pods of
	// its own before the scenario's were written).
	HoldControllers bool
	// TempDir is where the data directory is created. Zero means os.TempDir().
	TempDir string
	// Timeout bounds the start once the binaries exist. Zero means 60s.
	Timeout time.Duration
	// Progress receives binary build progress. Zero means os.Stderr.
	Progress io.Writer
}

// ControlPlane is a running etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and KWOK on 127.0.0.1, plus a fake kubelet serving logs.
// Stop it with Stop.
type ControlPlane struct {
	// Dir is the data directory: certificates, kubeconfigs, etcd data and
	// the logs of every process (etcd.log, kube-apiserver.log, ...). Stop
	// removes it.
	Dir string
	// AdminKubeconfig is the path of a kubeconfig for AdminUser
	// (system:masters).
	AdminKubeconfig string
	// ViewerKubeconfig is the path of a kubeconfig for ViewerUser.
	ViewerKubeconfig string
	// Admin and Viewer are client configurations for the same identities.
	// Copy them (rest.CopyConfig) before changing them.
	Admin  *rest.Config
	Viewer *rest.Config
	// Kubelet serves container logs for pods on every node.
	Kubelet *Kubelet
	// SimulatedNodes are the nodes KWOK manages; nil when Static.
	SimulatedNodes []string
	// ReviewerTokens are the bearer tokens of ReviewerUsers, by user: two
	// people who may approve a two-person plan, each as themselves.
	ReviewerTokens map[string]string
	// AuditLog is kube-apiserver's audit log (JSON lines, Metadata level)
	// of the requests of AdminUser and ViewerUser: each line's auditID
	// is the Audit-ID header a client sent, or one the server made.
	AuditLog string

	etcd, apiserver                    *process
	controllerManager, scheduler, kwok *process
	// startControllerManager starts kube-controller-manager, serving its
	// health on controllerManagerPort. Once Start returns, mu guards it
	// and controllerManager.
	mu                     sync.Mutex
	startControllerManager func() (*process, error)
	controllerManagerPort  int
	metricsServer          *process
	stopOnce               sync.Once
	stopErr                error
}

// auditPolicy logs the requests of the people (the admin and the viewer),
// not of the controllers and KWOK, at Metadata level, once each.
var auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + AdminUser + `", "` + ViewerUser + `"]
- level: None
`

// errPortInUse marks a start that failed because a port chosen as free was
// taken before the child bound it; Start retries those.
var errPortInUse = errors.New("port in use")

// Start runs a new control plane and returns when it is ready: /readyz is
// ok, the viewer's RBAC is effective and the nodes are registered.
func Start(ctx context.Context, opts *Options) (*ControlPlane, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if o.Binaries == (Binaries{}) {
		bins, err := EnsureBinaries(ctx, &BinariesOptions{Progress: o.Progress})
		if err != nil {
			return nil, err
		}
		o.Binaries = bins
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.SimulatedNodes == 0 {
		o.SimulatedNodes = 3
	}
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	sweepStale(o.TempDir)
	// A child that exits during start-up gets a fresh start: a port taken
	// meanwhile, or KWOK's rare panic while it builds its CEL environment
	// (seen once in eight suites on this machine).
	for attempt := 1; ; attempt++ {
		cp, err := start(ctx, &o)
		if err == nil || !errors.Is(err, errExited) || attempt == 3 || ctx.Err() != nil {
			return cp, err
		}
	}
}

func start(ctx context.Context, o *Options) (_ *ControlPlane, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	dir, err := os.MkdirTemp(o.TempDir, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	cp := &ControlPlane{Dir: dir}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}

	ca, err := newAuthority()
	if err != nil {
		return nil, fmt.Errorf("controlplane: certificate authority: %w", err)
	}
	servingCert, servingKey, err := ca.servingCert("kube-apiserver")
	if err != nil {
		return nil, fmt.Errorf("controlplane: serving certificate: %w", err)
	}
	kubeletClientCert, kubeletClientKey, err := ca.clientCert("kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return nil, fmt.Errorf("controlplane: kubelet client certificate: %w", err)
	}
	saKey, err := serviceAccountKey()
	if err != nil {
		return nil, fmt.Errorf("controlplane: service account key: %w", err)
	}
	adminToken, viewerToken := randomToken(), randomToken()
	kcmToken, schedulerToken, kwokToken, kubeletToken := randomToken(), randomToken(), randomToken(), randomToken()
	metricsToken := randomToken()
	cp.ReviewerTokens = map[string]string{}
	reviewers := ""
	for _, u := range ReviewerUsers {
		cp.ReviewerTokens[u] = randomToken()
		reviewers += fmt.Sprintf("%s,%s,%s,%s\n", cp.ReviewerTokens[u], u, u, ReviewerGroup)
	}
	tokens := reviewers + fmt.Sprintf("%s,%s,%s,system:masters\n%s,%s,%s\n%s,%s,%s,system:masters\n%s,%s,%s\n%s,%s,%s,system:masters\n%s,%s,%s,system:masters\n%s,%s,%s,system:masters\n",
		adminToken, AdminUser, AdminUser, viewerToken, ViewerUser, ViewerUser,
		kcmToken, controllerManagerUser, controllerManagerUser, schedulerToken, schedulerUser, schedulerUser,
		kwokToken, kwokUser, kwokUser, kubeletToken, kubeletUser, kubeletUser, metricsToken, metricsServerUser, metricsServerUser)
	file := func(name string) string { return filepath.Join(dir, name) }
	if err := writeFiles(map[string][]byte{
		file("ca.crt"):              ca.certPEM,
		file("apiserver.crt"):       servingCert,
		file("apiserver.key"):       servingKey,
		file("kubelet-client.crt"):  kubeletClientCert,
		file("kubelet-client.key"):  kubeletClientKey,
		file("service-account.key"): saKey,
		file("tokens.csv"):          []byte(tokens),
		file("audit-policy.yaml"):   []byte(auditPolicy),
	}); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}

	aggregator, err := aggregatorFiles(ca, file)
	if err != nil {
		return nil, fmt.Errorf("controlplane: front proxy certificate: %w", err)
	}
	if err := writeFiles(aggregator); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}

	nodes := make([]string, o.Nodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%d", i+1)
	}
	if cp.Kubelet, err = startKubelet(ca, nodes); err != nil {
		return nil, fmt.Errorf("controlplane: fake kubelet: %w", err)
	}

	ports, err := freePorts(3)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cp.etcd, err = startProcess("etcd", o.Binaries.Etcd, []string{
		"--name=default",
		"--data-dir=" + file("etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, file("etcd.log"))
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	if err := waitReady(ctx, cp.etcd, http.DefaultClient, etcdURL+"/health"); err != nil {
		return nil, fmt.Errorf("controlplane: etcd: %w", err)
	}

	host := fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	cp.apiserver, err = startProcess("kube-apiserver", o.Binaries.KubeAPIServer, append([]string{
		"--etcd-servers=" + etcdURL,
		"--cert-dir=" + file("certs"),
		"--tls-cert-file=" + file("apiserver.crt"),
		"--tls-private-key-file=" + file("apiserver.key"),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[2]),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + file("service-account.key"),
		"--service-account-signing-key-file=" + file("service-account.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--authorization-mode=RBAC",
		"--token-auth-file=" + file("tokens.csv"),
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority=" + file("ca.crt"),
		"--kubelet-client-certificate=" + file("kubelet-client.crt"),
		"--kubelet-client-key=" + file("kubelet-client.key"),
		"--profiling=false",
		"--audit-policy-file=" + file("audit-policy.yaml"),
		"--audit-log-path=" + file("audit.log"),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
	}, aggregatorFlags(file)...), file("kube-apiserver.log"))
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}

	cp.AuditLog = file("audit.log")
	cp.Admin = restConfig(host, ca.certPEM, adminToken)
	cp.Viewer = restConfig(host, ca.certPEM, viewerToken)
	httpClient, err := rest.HTTPClientFor(cp.Admin)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	defer httpClient.CloseIdleConnections()
	if err := waitReady(ctx, cp.apiserver, httpClient, host+"/readyz"); err != nil {
		return nil, fmt.Errorf("controlplane: kube-apiserver: %w", err)
	}

	// The components start at once and boot while the API is set up.
	var waitComponents func(context.Context) error
	if !o.Static {
		files := componentFiles{dir: dir, caFile: file("ca.crt"), saKeyFile: file("service-account.key"),
			controllerManagerConfig: file("controller-manager.kubeconfig"),
			schedulerConfig:         file("scheduler.kubeconfig"),
			kwokConfig:              file("kwok.kubeconfig")}
		for _, k := range []struct{ path, user, token string }{
			{files.controllerManagerConfig, controllerManagerUser, kcmToken},
			{files.schedulerConfig, schedulerUser, schedulerToken},
			{files.kwokConfig, kwokUser, kwokToken},
		} {
			if err := writeKubeconfig(k.path, k.user, restConfig(host, ca.certPEM, k.token)); err != nil {
				return nil, fmt.Errorf("controlplane: %w", err)
			}
		}
		if waitComponents, err = cp.startComponents(o, files); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
	}

	admin, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	viewer, err := kubernetes.NewForConfig(cp.Viewer)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	if err := grantViewer(ctx, admin, viewer); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	var taints []corev1.Taint
	if !o.Static {
		taints = []corev1.Taint{StaticTaint}
	}
	if err := cp.Kubelet.registerNodes(ctx, admin, nodes, nil, taints); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	if !o.Static {
		cp.SimulatedNodes = make([]string, o.SimulatedNodes)
		for i := range cp.SimulatedNodes {
			cp.SimulatedNodes[i] = fmt.Sprintf("kwok-node-%d", i+1)
		}
		kwok := map[string]string{kwokAnnotation: kwokManaged}
		if err := cp.Kubelet.registerNodes(ctx, admin, cp.SimulatedNodes, kwok, nil); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
		if err := ensureStorageClass(ctx, admin); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
		// The simulated kubelets read in protobuf: metrics-server asks each
		// node's stats every few seconds, and each asks the API server for
		// the node's pods, which at 20,000 pods in JSON took longer than
		// metrics-server waits — asked again and again, they held the API
		// server's CPU while the demo seeded.
		kcfg := restConfig(host, ca.certPEM, kubeletToken)
		kcfg.ContentType = "application/vnd.kubernetes.protobuf"
		kcfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		kubelet, err := kubernetes.NewForConfig(kcfg)
		if err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
		sim, err := startNodeSim(ctx, kubelet, cp.Kubelet.images)
		if err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
		cp.Kubelet.mu.Lock()
		cp.Kubelet.sim = sim
		cp.Kubelet.mu.Unlock()
		if err := waitComponents(ctx); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
		if !o.HoldControllers {
			if err := waitReconciling(ctx, admin); err != nil {
				return nil, fmt.Errorf("controlplane: %w", err)
			}
		}
		if o.Binaries.MetricsServer != "" {
			if err := cp.startMetricsServer(ctx, o.Binaries.MetricsServer, ca, host, metricsToken, admin); err != nil {
				return nil, fmt.Errorf("controlplane: %w", err)
			}
		}
	}

	cp.AdminKubeconfig = file("admin.kubeconfig")
	cp.ViewerKubeconfig = file("viewer.kubeconfig")
	if err := writeKubeconfig(cp.AdminKubeconfig, AdminUser, cp.Admin); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	if err := writeKubeconfig(cp.ViewerKubeconfig, ViewerUser, cp.Viewer); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	return cp, nil
}

// waitReady polls url until it answers 200, the process exits or ctx ends.
func waitReady(ctx context.Context, p *process, client *http.Client, url string) error {
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			logs := p.logTail()
			if strings.Contains(logs, "address already in use") {
				return fmt.Errorf("%w: %w (%v)\n%s", errExited, errPortInUse, p.err, logs)
			}
			return fmt.Errorf("%w (%v)\n%s", errExited, p.err, logs)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last answer: %s)\n%s", ctx.Err(), last, p.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops KWOK, the scheduler and the controller-manager, then
// kube-apiserver, then etcd (the other order makes kube-apiserver hang on
// its storage), then the fake kubelet, and removes Dir. It is safe to call
// more than once.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		var errs []error
		if cp.Kubelet != nil {
			cp.Kubelet.mu.Lock()
			sim := cp.Kubelet.sim
			cp.Kubelet.sim = nil
			cp.Kubelet.mu.Unlock()
			if sim != nil {
				sim.stop()
			}
		}
		cp.mu.Lock()
		kcm := cp.controllerManager
		cp.startControllerManager = nil // StartControllers after Stop does nothing
		cp.mu.Unlock()
		for _, p := range []*process{cp.metricsServer, cp.kwok, cp.scheduler, kcm} {
			if p != nil {
				errs = append(errs, p.stop(5*time.Second))
			}
		}
		if cp.apiserver != nil {
			errs = append(errs, cp.apiserver.stop(5*time.Second))
		}
		if cp.etcd != nil {
			errs = append(errs, cp.etcd.stop(5*time.Second))
		}
		if cp.Kubelet != nil {
			errs = append(errs, cp.Kubelet.close())
		}
		if cp.Dir != "" {
			errs = append(errs, os.RemoveAll(cp.Dir))
		}
		cp.stopErr = errors.Join(errs...)
	})
	return cp.stopErr
}

// PIDs returns the process ids of every process the control plane runs.
func (cp *ControlPlane) PIDs() []int {
	var pids []int
	cp.mu.Lock()
	kcm := cp.controllerManager
	cp.mu.Unlock()
	for _, p := range []*process{cp.etcd, cp.apiserver, kcm, cp.scheduler, cp.kwok, cp.metricsServer} {
		if p != nil {
			pids = append(pids, p.pid())
		}
	}
	return pids
}

// dirPrefix names data directories, so stale ones can be found.
const dirPrefix = "kubecode-controlplane-"

// sweepStale removes data directories left by processes that died without
// Stop (their children died with them through the parent-death signal).
func sweepStale(tempDir string) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(tempDir, dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// freePorts returns n distinct ports that were free on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
