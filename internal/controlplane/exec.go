package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
	"mvdan.cc/sh/v3/interp"
)

// Exec: the kubelet's /exec endpoint for pods of the simulated nodes, so
// that `kubectl exec` (and pods/exec through the API server) runs a command
// in a container's simulated shell and files: what its program wrote, its
// image's files, its mounted ConfigMaps and Secrets, its environment. The
// streaming protocol is the kubelet's own (k8s.io/cri-streaming); the
// command is simulated, so nothing runs on the host. wget, curl, nc and
// nslookup reach the cluster's Services and pods (commands.go).

// execTimeouts: how long an exec may sit idle, and how long the client has
// to open its streams (the kubelet's defaults).
const (
	execIdleTimeout     = 4 * time.Hour
	execStreamsDeadline = 30 * time.Second
	// execHoldLimit bounds how long a command that never ends holds its
	// stream.
	execHoldLimit = 15 * time.Minute
	// execScriptBudget bounds an exec's shell script in real time: its
	// network commands make API calls, longer than a container's own
	// scripts' budget on a loaded machine.
	execScriptBudget = 10 * time.Second
)

// serveExec serves GET and POST /exec/{namespace}/{pod}/{container}
// ?command=...&input=1&output=1&error=1&tty=0.
func (k *Kubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	argv := r.URL.Query()["command"]
	if len(argv) == 0 {
		http.Error(w, "no command given", http.StatusBadRequest)
		return
	}
	t, opts, ok := k.streamTarget(w, r)
	if !ok {
		return
	}
	remotecommand.ServeExec(w, r, t, t.pod.Name, string(t.pod.UID), t.container.Name, argv, opts, execIdleTimeout, execStreamsDeadline, remotecommand.SupportedStreamingProtocols)
}

// streamTarget is the running container an exec or attach request names,
// with the streams it asks for; when there is none, it answers the
// request with why, and ok is false.
func (k *Kubelet) streamTarget(w http.ResponseWriter, r *http.Request) (t *execTarget, opts *remotecommand.Options, ok bool) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, nil, false
	}
	k.mu.RLock()
	sim := k.sim
	k.mu.RUnlock()
	if sim == nil {
		http.Error(w, fmt.Sprintf("container not found (%q): nothing runs on the static nodes of this control plane", container), http.StatusNotFound)
		return nil, nil, false
	}
	t, err = sim.execTarget(r.Context(), ns, name, container)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return nil, nil, false
	}
	return t, opts, true
}

// execTarget is one running container of a simulated node, ready for
// commands.
type execTarget struct {
	n         *nodeSim
	pod       *corev1.Pod
	container *corev1.Container
	started   time.Time
}

// execTarget finds a running container, or says why there is none.
func (n *nodeSim) execTarget(ctx context.Context, ns, name, container string) (*execTarget, error) {
	pod, _ := n.pod(ns, name)
	if pod == nil {
		if p, err := n.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err == nil && p.Spec.NodeName != "" {
			return nil, fmt.Errorf("container not found (%q): pod %s/%s is on node %s, a static node of the demo where nothing runs; exec reaches the pods of the simulated nodes", container, ns, name, p.Spec.NodeName)
		}
		return nil, fmt.Errorf("pod %s/%s not found on this node", ns, name)
	}
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == container })
	if i < 0 {
		return nil, fmt.Errorf("container not found (%q)", container)
	}
	st := findStatus(pod.Status.ContainerStatuses, container)
	if st == nil || st.State.Running == nil {
		return nil, fmt.Errorf("container not found (%q): it is not running", container)
	}
	return &execTarget{n: n, pod: pod, container: &pod.Spec.Containers[i], started: st.State.Running.StartedAt.Time}, nil
}

// ExecInContainer runs cmd in the container's simulated shell: its files
// as the program left them by now. A command that runs until stopped
// (tail -f, sleep infinity, a server) holds the stream until the client
// goes.
func (t *execTarget) ExecInContainer(ctx context.Context, _ string, _ string, _ string, cmd []string, in io.Reader, out, errOut io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if out != nil {
		defer out.Close()
	}
	if errOut != nil {
		defer errOut.Close()
	}
	img, _ := t.n.images.Lookup(t.container.Image)
	if img == nil {
		return fmt.Errorf("image %s is not in the simulated registry", t.container.Image)
	}
	if !img.has(cmd[0]) {
		return fmt.Errorf("failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown", cmd[0])
	}
	s := &podSim{env: t.n.env(t.pod), pod: t.pod}
	r, p := s.process(t.container, img, t.started)
	files := r.fs
	if files == nil {
		files = newSimFS(p.files)
	}
	p.started = t.n.now()
	fs := files.at(t.n.now().Sub(t.started))
	inst, claims := t.instance(), t.claimMounts()
	t.n.writes.apply(fs, inst, claims)
	before := fs.final()
	defer func() { t.n.writes.keep(inst, claims, before, fs.final()) }()
	sm := &sim{p: p, fs: fs, stdin: in, net: &clusterNet{n: t.n, pod: t.pod}, budget: execScriptBudget}
	var stdout, stderr io.Writer = io.Discard, io.Discard
	if out != nil {
		stdout = out
	}
	if errOut != nil {
		stderr = errOut
	}
	err := sm.exec(ctx, cmd, stdout, stderr)
	var es interp.ExitStatus
	switch {
	case errors.Is(err, errForever):
		// After the connection was taken over, the request's context does
		// not end when the client goes: the stream is held at most this
		// long (pods.exec's timeout is 5 minutes).
		select {
		case <-ctx.Done():
		case <-time.After(execHoldLimit):
		}
		return nil
	case errors.As(err, &es):
		if es == 0 {
			return nil
		}
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", int(es)), Code: int(es)}
	}
	return err
}

// clusterNet is the cluster as a pod's commands reach it: the Services'
// names and ClusterIPs, the pods' IPs, and localhost (the pod itself).
type clusterNet struct {
	n   *nodeSim
	pod *corev1.Pod
}

// netTimeout bounds the API calls of one lookup.
const netTimeout = 5 * time.Second

func (c *clusterNet) resolve(ctx context.Context, host string) (string, string, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return "127.0.0.1", "localhost", nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.String(), "", nil
	}
	// A name is a DNS query: the pod's egress policies must let it reach
	// the cluster's DNS.
	if !c.allowed(ctx, podEndpoint(c.pod), dnsEndpoint, 53, true) {
		return "", "", errTimeout
	}
	parts := strings.Split(strings.TrimSuffix(host, ".cluster.local"), ".")
	ns := c.pod.Namespace
	switch {
	case len(parts) == 1:
	case len(parts) == 2 || len(parts) == 3 && parts[2] == "svc":
		ns = parts[1]
	default:
		return "", "", errNoHost
	}
	ctx, cancel := context.WithTimeout(ctx, netTimeout)
	defer cancel()
	svc, err := c.n.cs.CoreV1().Services(ns).Get(ctx, parts[0], metav1.GetOptions{})
	if err != nil {
		return "", "", errNoHost
	}
	fqdn := parts[0] + "." + ns + ".svc.cluster.local"
	if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		return svc.Spec.ClusterIP, fqdn, nil
	}
	// Headless: the address of a ready pod it selects.
	pods, err := c.selected(ctx, svc)
	if err != nil || len(pods) == 0 {
		return "", "", errNoHost
	}
	return pods[0].Status.PodIP, fqdn, nil
}

func (c *clusterNet) connect(ctx context.Context, ip string, port int32) (Program, error) {
	ctx, cancel := context.WithTimeout(ctx, netTimeout)
	defer cancel()
	if ip == "127.0.0.1" || ip == "::1" {
		if prog, ok := c.listening(c.pod, intstr.FromInt32(port)); ok {
			return prog, nil
		}
		return Program{}, errRefused
	}
	var pods []*corev1.Pod
	target := intstr.FromInt32(port)
	svcs, err := c.n.cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return Program{}, errRefused
	}
	isService := false
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if svc.Spec.ClusterIP != ip {
			continue
		}
		isService = true
		j := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
		if j < 0 {
			return Program{}, errRefused
		}
		if tp := svc.Spec.Ports[j].TargetPort; tp.Type != intstr.Int || tp.IntVal != 0 {
			target = tp
		}
		if pods, err = c.selected(ctx, svc); err != nil {
			return Program{}, errRefused
		}
		break
	}
	if !isService {
		list, err := c.n.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.podIP=" + ip})
		if err != nil {
			return Program{}, errRefused
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
	}
	blocked := false
	for _, p := range pods {
		n, ok := numericPort(p, target)
		if !ok {
			continue
		}
		if !c.allowed(ctx, podEndpoint(c.pod), podEndpoint(p), n, false) {
			blocked = true
			continue
		}
		if prog, ok := c.listening(p, target); ok {
			return prog, nil
		}
	}
	if blocked {
		return Program{}, errTimeout
	}
	return Program{}, errRefused
}

// numericPort resolves port (a number, or a container port's name) on p.
func numericPort(p *corev1.Pod, port intstr.IntOrString) (int32, bool) {
	if port.Type == intstr.Int {
		return port.IntVal, true
	}
	for i := range p.Spec.Containers {
		if n, ok := containerPort(&p.Spec.Containers[i], port); ok {
			return n, true
		}
	}
	return 0, false
}

// selected are the ready pods a Service selects.
func (c *clusterNet) selected(ctx context.Context, svc *corev1.Service) ([]*corev1.Pod, error) {
	if len(svc.Spec.Selector) == 0 {
		return nil, nil
	}
	list, err := c.n.cs.CoreV1().Pods(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && condition(&p.Status, corev1.PodReady) == corev1.ConditionTrue {
			out = append(out, p)
		}
	}
	return out, nil
}

// listening finds the program of a running container of pod (on a
// simulated node) that listens on port (a number or a container port's
// name).
func (c *clusterNet) listening(pod *corev1.Pod, port intstr.IntOrString) (Program, bool) {
	live, _ := c.n.pod(pod.Namespace, pod.Name)
	if live == nil {
		return Program{}, false
	}
	for i := range live.Spec.Containers {
		ctr := &live.Spec.Containers[i]
		st := findStatus(live.Status.ContainerStatuses, ctr.Name)
		if st == nil || st.State.Running == nil {
			continue
		}
		n, ok := containerPort(ctr, port)
		if !ok {
			continue
		}
		img, _ := c.n.images.Lookup(ctr.Image)
		if img == nil {
			continue
		}
		// What it listens on: its run of this start if the node made it,
		// else simulated without the network (two programs fetching from
		// each other would simulate each other without end).
		env := c.n.env(live)
		env.run = c.n.runQuietly
		s := &podSim{env: env, pod: live}
		r, _ := s.process(ctr, img, st.State.Running.StartedAt.Time)
		if slices.Contains(r.listens, n) {
			prog := r.serves[n]
			inst := fmt.Sprintf("%s/%s/%d", live.UID, ctr.Name, st.RestartCount)
			prog.served = func(line string) { c.n.served.add(inst, line, c.n.now()) }
			return prog, true
		}
	}
	return Program{}, false
}

// address is the pod's IP.
func (c *clusterNet) address() string { return c.pod.Status.PodIP }

// servedLog keeps the lines servers logged for the requests that reached
// them, by container instance (pod UID/container/restarts): the
// container's log shows them beside what its program printed. Bounded:
// maxServed lines an instance, the oldest dropped.
type servedLog struct {
	mu    sync.Mutex
	lines map[string][]logLine
}

const maxServed = 1000

func (l *servedLog) add(inst, text string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines == nil {
		l.lines = map[string][]logLine{}
	}
	ls := append(l.lines[inst], logLine{at: at, text: text})
	if len(ls) > maxServed {
		ls = ls[len(ls)-maxServed:]
	}
	l.lines[inst] = ls
}

func (l *servedLog) of(inst string) []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines[inst])
}

// instance names the container's current instance: what an exec writes
// outside volumes lasts until it restarts.
func (t *execTarget) instance() string {
	restarts := int32(0)
	if st := findStatus(t.pod.Status.ContainerStatuses, t.container.Name); st != nil {
		restarts = st.RestartCount
	}
	return fmt.Sprintf("%s/%s/%d", t.pod.UID, t.container.Name, restarts)
}

// claimMounts maps the container's mount paths of PersistentVolumeClaims
// to the claims (namespace/name): what an exec writes there lasts as long
// as the claim, across pods.
func (t *execTarget) claimMounts() map[string]string {
	out := map[string]string{}
	for _, m := range t.container.VolumeMounts {
		for _, v := range t.pod.Spec.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil {
				out[path.Clean(m.MountPath)] = t.pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
			}
		}
	}
	return out
}

// execWrites keeps what execs wrote: per container instance, and per
// claim for paths on a PersistentVolumeClaim. Bounded: a path's content
// up to maxFile, at most maxFiles paths in all.
type execWrites struct {
	mu        sync.Mutex
	instances map[string]map[string]*string // instance → path → content (nil: removed)
	claims    map[string]map[string]*string // claim → path under its mount → content
	files     int
	bytes     int
}

const (
	maxFile      = 1 << 20
	maxFiles     = 10_000
	maxFileBytes = 64 << 20
)

// apply lays what earlier execs wrote over fs.
func (w *execWrites) apply(fs *simFS, inst string, claims map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	put := func(p string, c *string) {
		if c == nil {
			fs.remove(0, p)
		} else {
			fs.write(0, p, *c, true)
		}
	}
	for mount, claim := range claims {
		for rel, c := range w.claims[claim] {
			put(path.Join(mount, rel), c)
		}
	}
	for p, c := range w.instances[inst] {
		put(p, c)
	}
}

// keep records what changed between before and after.
func (w *execWrites) keep(inst string, claims map[string]string, before, after map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.instances == nil {
		w.instances, w.claims = map[string]map[string]*string{}, map[string]map[string]*string{}
	}
	record := func(p string, c *string) {
		if c != nil && len(*c) > maxFile {
			cut := (*c)[:maxFile]
			c = &cut
		}
		if c != nil {
			if w.bytes+len(*c) > maxFileBytes {
				return // what execs wrote in all is bounded
			}
			w.bytes += len(*c)
		}
		for mount, claim := range claims {
			if rel, ok := strings.CutPrefix(p, mount+"/"); ok {
				if w.claims[claim] == nil {
					w.claims[claim] = map[string]*string{}
				}
				if _, had := w.claims[claim][rel]; !had {
					w.files++
				}
				w.claims[claim][rel] = c
				return
			}
		}
		if w.instances[inst] == nil {
			w.instances[inst] = map[string]*string{}
		}
		if _, had := w.instances[inst][p]; !had {
			w.files++
		}
		w.instances[inst][p] = c
	}
	for p, c := range after {
		if w.files >= maxFiles {
			return
		}
		if old, ok := before[p]; !ok || old != c {
			c := c
			record(p, &c)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && w.files < maxFiles {
			record(p, nil)
		}
	}
}
