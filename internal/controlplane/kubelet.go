package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Kubelet is a fake kubelet that only serves container logs. No pod ever
// runs; the lines it returns are the ones given to SetLogs. kube-apiserver
// reaches it for `GET .../pods/NAME/log` through the Node objects the control
// plane registers, whose InternalIP is 127.0.0.1 and whose
// status.daemonEndpoints.kubeletEndpoint.Port is this server's port.
//
// It serves GET /containerLogs/{namespace}/{pod}/{container} with the
// kubelet's query parameters previous, tailLines, timestamps, sinceSeconds,
// sinceTime and limitBytes (follow returns what is there and ends).
type Kubelet struct {
	ip    net.IP // the nodes' InternalIP, where it listens
	port  int
	nodes []string
	srv   *http.Server
	done  chan struct{}
	serve sync.WaitGroup // one Serve per listener
	now   func() time.Time
	start time.Time

	// Each node has a port of its own (the node proxy's requests name no
	// node): nodeOf maps the port a connection came in on to its node.
	portsMu sync.Mutex
	nodeOf  map[int]string
	portOf  map[string]int

	mu   sync.RWMutex
	logs map[logKey][]logLine

	// images is the simulated registry; sim runs the simulated nodes'
	// containers (nil on a static control plane).
	images *Images
	sim    *nodeSim
}

type logKey struct {
	namespace, pod, container string
	previous                  bool
}

type logLine struct {
	at   time.Time
	text string
}

// startKubelet listens on a free port of 127.0.0.1 with a certificate from
// ca and serves until close.
func startKubelet(ca *authority, nodes []string) (*Kubelet, error) {
	ip := nodeIP()
	cert, err := ca.tlsServingCert("kubecode-fake-kubelet", ip)
	if err != nil {
		return nil, fmt.Errorf("kubelet certificate: %w", err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(ca.cert)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return nil, err
	}
	k := &Kubelet{
		ip:     ip,
		port:   ln.Addr().(*net.TCPAddr).Port,
		nodes:  nodes,
		done:   make(chan struct{}),
		now:    time.Now,
		start:  time.Now(),
		logs:   map[logKey][]logLine{},
		images: NewImages(),
		nodeOf: map[int]string{},
		portOf: map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.serveLogs)
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", k.serveExec)
	mux.HandleFunc("/attach/{namespace}/{pod}/{container}", k.serveAttach)
	mux.HandleFunc("GET /logs/{path...}", k.serveNodeLogs)
	mux.HandleFunc("GET /stats/summary", k.serveStats)
	mux.HandleFunc("GET /metrics/resource", k.serveResourceMetrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	k.srv = &http.Server{
		Handler: mux,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			port := c.LocalAddr().(*net.TCPAddr).Port
			k.portsMu.Lock()
			defer k.portsMu.Unlock()
			return context.WithValue(ctx, nodeKey{}, k.nodeOf[port])
		},
		// HTTP/1.1 only: exec upgrades the connection (SPDY, WebSocket).
		// Only clients with a certificate of the control plane's CA (the
		// API server's, metrics-server's): it listens on an address others
		// may reach.
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients},
		ReadHeaderTimeout: 10 * time.Second,
	}
	k.listen(ln)
	return k, nil
}

type nodeKey struct{}

// nodeOfRequest is the node whose port r came in on ("" for the shared
// port).
func nodeOfRequest(r *http.Request) string {
	n, _ := r.Context().Value(nodeKey{}).(string)
	return n
}

// listen serves on ln until close.
func (k *Kubelet) listen(ln net.Listener) {
	k.serve.Add(1)
	go func() {
		defer k.serve.Done()
		_ = k.srv.Serve(tls.NewListener(ln, k.srv.TLSConfig))
	}()
}

// PortOf is the port of node's kubelet endpoint: a port of its own, opened
// the first time it is asked for.
func (k *Kubelet) PortOf(node string) (int, error) {
	k.portsMu.Lock()
	defer k.portsMu.Unlock()
	if p, ok := k.portOf[node]; ok {
		return p, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(k.ip.String(), "0"))
	if err != nil {
		return 0, err
	}
	p := ln.Addr().(*net.TCPAddr).Port
	k.portOf[node], k.nodeOf[p] = p, node
	k.listen(ln)
	return p, nil
}

// Port is the TCP port the fake kubelet listens on at IP for nodes
// without a port of their own.
func (k *Kubelet) Port() int { return k.port }

// IP is the nodes' InternalIP, where the fake kubelet listens: the
// machine's first global unicast IPv4 address, since the API server's node
// proxy refuses loopback addresses; 127.0.0.1 on a machine without one
// (then nodes/proxy answers "address not allowed").
func (k *Kubelet) IP() net.IP { return k.ip }

// nodeIP is the address the nodes get (Kubelet.IP).
func nodeIP() net.IP {
	ifs, err := net.Interfaces()
	if err == nil {
		for _, i := range ifs {
			if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
				continue
			}
			addrs, _ := i.Addrs()
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
					return n.IP.To4()
				}
			}
		}
	}
	return net.IPv4(127, 0, 0, 1).To4()
}

// Nodes are the names of the static nodes; the simulated ones
// (ControlPlane.SimulatedNodes) route their logs to this kubelet too.
func (k *Kubelet) Nodes() []string { return append([]string(nil), k.nodes...) }

// AddImages adds the images of a YAML index (the format of images.yaml)
// to the simulated registry the simulated nodes pull from.
func (k *Kubelet) AddImages(index []byte) error { return k.images.Add(index) }

// SetLogs replaces the log lines of one container. previous selects the
// logs of the container's last terminated instance (`kubectl logs -p`).
// Lines get synthetic timestamps one second apart, the last one now
// (previous logs end a minute earlier).
func (k *Kubelet) SetLogs(namespace, pod, container string, previous bool, lines []string) {
	end := k.now()
	if previous {
		end = end.Add(-time.Minute)
	}
	ll := make([]logLine, len(lines))
	for i, l := range lines {
		ll[i] = logLine{at: end.Add(-time.Duration(len(lines)-1-i) * time.Second), text: l}
	}
	k.mu.Lock()
	k.logs[logKey{namespace, pod, container, previous}] = ll
	k.mu.Unlock()
}

func (k *Kubelet) serveLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := logKey{
		namespace: r.PathValue("namespace"),
		pod:       r.PathValue("pod"),
		container: r.PathValue("container"),
		previous:  q.Get("previous") == "true",
	}
	k.mu.RLock()
	lines, ok := k.logs[key]
	sim := k.sim
	k.mu.RUnlock()
	if !ok && sim != nil {
		// A container of a simulated node: what its process printed.
		simLines, err, found := sim.logs(key.namespace, key.pod, key.container, key.previous)
		if err != nil {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, err.Error())
			return
		}
		lines, ok = simLines, found
	}
	if !ok && key.previous {
		// The kubelet's answer when no container instance has terminated.
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "previous terminated container %q in pod %q not found", key.container, key.pod)
		return
	}

	if s := q.Get("sinceSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			http.Error(w, "invalid sinceSeconds", http.StatusBadRequest)
			return
		}
		lines = since(lines, k.now().Add(-time.Duration(n)*time.Second))
	} else if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			http.Error(w, "invalid sinceTime", http.StatusBadRequest)
			return
		}
		lines = since(lines, t)
	}
	if s := q.Get("tailLines"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "invalid tailLines", http.StatusBadRequest)
			return
		}
		if n < len(lines) {
			lines = lines[len(lines)-n:]
		}
	}
	limit := -1
	if s := q.Get("limitBytes"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			http.Error(w, "invalid limitBytes", http.StatusBadRequest)
			return
		}
		limit = n
	}

	var b strings.Builder
	for _, l := range lines {
		if q.Get("timestamps") == "true" {
			b.WriteString(l.at.UTC().Format(time.RFC3339Nano))
			b.WriteByte(' ')
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	out := b.String()
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(out))
}

func since(lines []logLine, t time.Time) []logLine {
	for i, l := range lines {
		if !l.at.Before(t) {
			return lines[i:]
		}
	}
	return nil
}

// close stops the server and waits for it.
func (k *Kubelet) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := k.srv.Shutdown(ctx)
	k.serve.Wait()
	close(k.done)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// registerNodes creates one Ready Node per name, with annotations and
// taints, and status pointing at the fake kubelet: InternalIP 127.0.0.1
// and the kubelet port, so logs of pods on any node come from it. Status
// goes through the status subresource, as a kubelet would write it.
func (k *Kubelet) registerNodes(ctx context.Context, cs kubernetes.Interface, names []string, annotations map[string]string, taints []corev1.Taint) error {
	for _, name := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: annotations,
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		}, Spec: corev1.NodeSpec{Taints: taints}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("register node %s: %w", name, err)
		}
		// Components that already run (KWOK, the controllers) may write
		// the node too: read it again on a conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			created, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if slices.Equal(created.Spec.Taints, taints) {
				return nil
			}
			// Admission adds node.kubernetes.io/not-ready to a new node; the
			// node lifecycle controller, which would lift it, does not run.
			created.Spec.Taints = taints
			_, err = cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("node %s taints: %w", name, err)
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return k.writeNodeStatus(ctx, cs, name) }); err != nil {
			return fmt.Errorf("node %s status: %w", name, err)
		}
	}
	return nil
}

// writeNodeStatus writes the status of a Ready node served by this kubelet.
func (k *Kubelet) writeNodeStatus(ctx context.Context, cs kubernetes.Interface, name string) error {
	created, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	port, err := k.PortOf(name)
	if err != nil {
		return err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("2500"),
	}
	created.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", Message: "kubelet is posting ready status (fake)",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.ip.String()},
			{Type: corev1.NodeHostName, Address: name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{
			KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)},
		},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          KubernetesVersion,
			OperatingSystem:         "linux",
			Architecture:            "amd64",
			ContainerRuntimeVersion: "fake://0.0.0",
			OSImage:                 "kubecode fake node",
		},
	}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}
