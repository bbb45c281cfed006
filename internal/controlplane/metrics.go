package controlplane

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The real metrics-server, built from Go modules like the other side
// binaries, serves metrics.k8s.io behind an APIService, as on a real
// cluster: it scrapes each node's /metrics/resource (the simulated usage,
// nodestats.go) every 10 s, so `kubectl top` works about 20 s after a pod
// starts. It listens on the nodes' address (the aggregator, like the node
// proxy, refuses loopback endpoints); kube-apiserver reaches it with the
// front proxy's client certificate and routes to its endpoint
// (--enable-aggregator-routing: no kube-proxy runs).

const (
	metricsServerUser   = "kubecode:metrics-server"
	frontProxyUser      = "front-proxy-client"
	metricsAPIService   = "v1beta1.metrics.k8s.io"
	metricsResolution   = "10s"
	metricsAvailability = 60 * time.Second
)

// aggregatorFlags are kube-apiserver's flags for aggregated API servers.
func aggregatorFlags(file func(string) string) []string {
	return []string{
		"--requestheader-client-ca-file=" + file("ca.crt"),
		"--requestheader-allowed-names=" + frontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + file("front-proxy.crt"),
		"--proxy-client-key-file=" + file("front-proxy.key"),
		"--enable-aggregator-routing=true",
	}
}

// aggregatorFiles are the front proxy's certificate and key.
func aggregatorFiles(ca *authority, file func(string) string) (map[string][]byte, error) {
	crt, key, err := ca.clientCert(frontProxyUser)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{file("front-proxy.crt"): crt, file("front-proxy.key"): key}, nil
}

// startMetricsServer runs metrics-server and registers it as
// metrics.k8s.io, waiting until the aggregator finds it available.
func (cp *ControlPlane) startMetricsServer(ctx context.Context, bin string, ca *authority, host, token string, admin kubernetes.Interface) error {
	ip := cp.Kubelet.IP()
	if ip.IsLoopback() {
		return nil // no address the aggregator would route to: no metrics API
	}
	file := func(name string) string { return filepath.Join(cp.Dir, name) }
	crt, key, err := ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "metrics-server"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{ip},
		// The name the aggregator checks: its Service's.
		DNSNames: []string{"metrics-server.kube-system.svc"},
	})
	if err != nil {
		return err
	}
	cfg := restConfig(host, ca.certPEM, token)
	if err := writeKubeconfig(file("metrics-server.kubeconfig"), metricsServerUser, cfg); err != nil {
		return err
	}
	if err := writeFiles(map[string][]byte{file("metrics-server.crt"): crt, file("metrics-server.key"): key}); err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cp.metricsServer, err = startProcess("metrics-server", bin, []string{
		"--bind-address=" + ip.String(),
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + file("metrics-server.crt"),
		"--tls-private-key-file=" + file("metrics-server.key"),
		"--kubeconfig=" + file("metrics-server.kubeconfig"),
		"--authentication-kubeconfig=" + file("metrics-server.kubeconfig"),
		"--authorization-kubeconfig=" + file("metrics-server.kubeconfig"),
		"--requestheader-client-ca-file=" + file("ca.crt"),
		"--requestheader-allowed-names=" + frontProxyUser,
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-use-node-status-port",
		"--kubelet-certificate-authority=" + file("ca.crt"),
		"--kubelet-client-certificate=" + file("kubelet-client.crt"),
		"--kubelet-client-key=" + file("kubelet-client.key"),
		"--metric-resolution=" + metricsResolution,
		"--kubelet-request-timeout=5s",
	}, file("metrics-server.log"))
	if err != nil {
		return err
	}
	if err := registerMetricsAPI(ctx, admin, cp.Admin, ip.String(), port, ca.certPEM); err != nil {
		return err
	}
	return waitAPIService(ctx, cp.Admin, metricsAPIService, cp.metricsServer)
}

// registerMetricsAPI makes Service kube-system/metrics-server, its
// endpoints (ip:port) and the APIService of metrics.k8s.io.
func registerMetricsAPI(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config, ip string, port int, caPEM []byte) error {
	const ns, name = metav1.NamespaceSystem, "metrics-server"
	labels := map[string]string{"k8s-app": name}
	create := func(err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port))}}}}, metav1.CreateOptions{}); create(err) != nil {
		return fmt.Errorf("metrics-server service: %w", err)
	}
	ready, p := true, int32(port)
	https, tcp := "https", corev1.ProtocolTCP
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "controlplane.kubecode.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &https, Port: &p, Protocol: &tcp}},
	}, metav1.CreateOptions{}); create(err) != nil {
		return fmt.Errorf("metrics-server endpoints: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": metricsAPIService, "labels": map[string]any{"k8s-app": name}},
		"spec": map[string]any{
			"service":              map[string]any{"namespace": ns, "name": name, "port": int64(443)},
			"group":                "metrics.k8s.io",
			"version":              "v1beta1",
			"caBundle":             caPEM,
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
		},
	}}
	if _, err := dyn.Resource(apiServices).Create(ctx, svc, metav1.CreateOptions{}); create(err) != nil {
		return fmt.Errorf("metrics APIService: %w", err)
	}
	return nil
}

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// waitAPIService waits until the aggregator says name is Available.
func waitAPIService(ctx context.Context, cfg *rest.Config, name string, p *process) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, metricsAvailability)
	defer cancel()
	last := "not created"
	for {
		if svc, err := dyn.Resource(apiServices).Get(ctx, name, metav1.GetOptions{}); err == nil {
			conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Available" {
					if m["status"] == "True" {
						return nil
					}
					last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				}
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("metrics-server: %w (%v)\n%s", errExited, p.err, p.logTail())
		case <-ctx.Done():
			return fmt.Errorf("APIService %s is not available: %s\n%s", name, last, p.logTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
