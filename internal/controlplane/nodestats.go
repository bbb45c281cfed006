package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	statsv1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// What the kubelet says of its node: /stats/summary and /metrics/resource
// (what metrics-server reads, so that kubectl top works) from each running
// container's simulated usage, and /logs/ (the node's logs: the kubelet's
// journal, from the Events it recorded). The node is the one whose port
// the request came in on.

// Simulated usage: memory is what the image needs (images.yaml), CPU what
// its program does: a server idles at a few millicores, a busy loop takes
// a core (or its limit), a sleeping script nearly nothing.
const (
	nodeBaseCPU    = 40_000_000  // nanocores the kubelet and runtime use
	nodeBaseMemory = 300 << 20   // their working set
	nodeMemory     = 32 << 30    // the node's capacity (writeNodeStatus)
	serverCPU      = 2_000_000   // an idle server
	sleeperCPU     = 100_000     // a script that sleeps
	busyCPU        = 1000_000000 // a loop without sleep
	unknownMemory  = 16 << 20    // an image the registry does not know
)

// containerUsage is one running container's simulated usage now.
type containerUsage struct {
	namespace, pod, container string
	start                     time.Time
	nanoCores                 uint64
	workingSet                uint64
}

// cumulative is the CPU time the container used since it started.
func (u containerUsage) cumulative(now time.Time) uint64 {
	return uint64(now.Sub(u.start).Seconds() * float64(u.nanoCores))
}

// usageTTL is how long a static node's usage is served from the last
// listing of its pods.
const usageTTL = 30 * time.Second

// staticUsage is the last usage of a static node's pods.
type staticUsage struct {
	mu  sync.Mutex
	at  time.Time
	out []containerUsage
}

// usage is the simulated usage of the running containers of the pods bound
// to node. A simulated node's pods are in its informer; a static node's
// (17,000 each in a 50,000-pod demo) are listed at most every usageTTL,
// from the API server's cache and never cut short by the request that
// asked (metrics-server gives up after 10 s, which at 50,000 pods left
// the list half read, logged, and asked again).
func (n *nodeSim) usage(ctx context.Context, node string) ([]containerUsage, error) {
	n.mu.Lock()
	sn := n.nodes[node]
	if sn == nil && n.static == nil {
		n.static = map[string]*staticUsage{}
	}
	var su *staticUsage
	if sn == nil {
		if su = n.static[node]; su == nil {
			su = &staticUsage{}
			n.static[node] = su
		}
	}
	n.mu.Unlock()
	if sn != nil {
		pods, err := sn.pods.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		return n.podsUsage(pods), nil
	}
	su.mu.Lock()
	defer su.mu.Unlock()
	if !su.at.IsZero() && n.now().Sub(su.at) < usageTTL {
		return su.out, nil
	}
	lctx, cancel := context.WithTimeout(n.ctx, time.Minute)
	defer cancel()
	list, err := n.cs.CoreV1().Pods("").List(lctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	su.at, su.out = n.now(), n.podsUsage(pods)
	return su.out, nil
}

// podsUsage is the usage of the running containers of pods.
func (n *nodeSim) podsUsage(pods []*corev1.Pod) []containerUsage {
	var out []containerUsage
	for _, pod := range pods {
		for j := range pod.Spec.Containers {
			c := &pod.Spec.Containers[j]
			st := findStatus(pod.Status.ContainerStatuses, c.Name)
			if st == nil || st.State.Running == nil {
				continue
			}
			out = append(out, n.containerUsage(pod, c, st.State.Running.StartedAt.Time))
		}
	}
	return out
}

func (n *nodeSim) containerUsage(pod *corev1.Pod, c *corev1.Container, start time.Time) containerUsage {
	u := containerUsage{namespace: pod.Namespace, pod: pod.Name, container: c.Name, start: start, nanoCores: sleeperCPU, workingSet: unknownMemory}
	h := fnv.New32a()
	h.Write([]byte(string(pod.UID) + "/" + c.Name))
	jitter := uint64(h.Sum32() % 1000) // 0..999, the same for the container's life
	if img, _ := n.images.Lookup(c.Image); img != nil {
		u.workingSet = max(uint64(img.Memory.Value()), 2<<20)
		s := &podSim{env: n.env(pod), pod: pod}
		r, _ := s.process(c, img, start)
		switch {
		case r.busy:
			u.nanoCores = busyCPU
		case len(r.listens) > 0:
			u.nanoCores = serverCPU + jitter*3000
		}
	}
	u.workingSet += u.workingSet * jitter / 5000 // up to 20% more
	if l, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		u.nanoCores = min(u.nanoCores, uint64(l.ScaledValue(resource.Nano)))
	}
	if l, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		u.workingSet = min(u.workingSet, uint64(l.Value())*95/100)
	}
	return u
}

// nodeUsage sums the containers' usage with what the node itself uses.
func nodeUsage(us []containerUsage, start, now time.Time) (nanoCores, cumulative, workingSet uint64) {
	nanoCores, workingSet = nodeBaseCPU, nodeBaseMemory
	cumulative = uint64(now.Sub(start).Seconds() * nodeBaseCPU)
	for _, u := range us {
		nanoCores += u.nanoCores
		cumulative += u.cumulative(now)
		workingSet += u.workingSet
	}
	return nanoCores, cumulative, workingSet
}

// nodeUsageOf answers for the node a request came in for, or writes the
// error.
func (k *Kubelet) nodeUsageOf(w http.ResponseWriter, r *http.Request) (string, []containerUsage, bool) {
	node := nodeOfRequest(r)
	k.mu.RLock()
	sim := k.sim
	k.mu.RUnlock()
	if node == "" || sim == nil {
		http.Error(w, "node statistics are simulated for the nodes of a living control plane only", http.StatusNotFound)
		return "", nil, false
	}
	us, err := sim.usage(r.Context(), node)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return "", nil, false
	}
	return node, us, true
}

// serveStats serves /stats/summary, the kubelet's Summary API.
func (k *Kubelet) serveStats(w http.ResponseWriter, r *http.Request) {
	node, us, ok := k.nodeUsageOf(w, r)
	if !ok {
		return
	}
	now := k.now()
	t := metav1.NewTime(now)
	ptr := func(v uint64) *uint64 { return &v }
	cores, cum, ws := nodeUsage(us, k.start, now)
	sum := statsv1.Summary{Node: statsv1.NodeStats{
		NodeName:  node,
		StartTime: metav1.NewTime(k.start),
		CPU:       &statsv1.CPUStats{Time: t, UsageNanoCores: ptr(cores), UsageCoreNanoSeconds: ptr(cum)},
		Memory:    &statsv1.MemoryStats{Time: t, AvailableBytes: ptr(nodeMemory - min(ws, nodeMemory)), UsageBytes: ptr(ws), WorkingSetBytes: ptr(ws), RSSBytes: ptr(ws * 8 / 10)},
	}, Pods: []statsv1.PodStats{}}
	byPod := map[string]int{}
	for _, u := range us {
		key := u.namespace + "/" + u.pod
		i, ok := byPod[key]
		if !ok {
			i = len(sum.Pods)
			byPod[key] = i
			sum.Pods = append(sum.Pods, statsv1.PodStats{PodRef: statsv1.PodReference{Name: u.pod, Namespace: u.namespace}, StartTime: metav1.NewTime(u.start),
				CPU: &statsv1.CPUStats{Time: t, UsageNanoCores: ptr(0), UsageCoreNanoSeconds: ptr(0)}, Memory: &statsv1.MemoryStats{Time: t, WorkingSetBytes: ptr(0), UsageBytes: ptr(0)}})
		}
		p := &sum.Pods[i]
		p.Containers = append(p.Containers, statsv1.ContainerStats{Name: u.container, StartTime: metav1.NewTime(u.start),
			CPU:    &statsv1.CPUStats{Time: t, UsageNanoCores: ptr(u.nanoCores), UsageCoreNanoSeconds: ptr(u.cumulative(now))},
			Memory: &statsv1.MemoryStats{Time: t, WorkingSetBytes: ptr(u.workingSet), UsageBytes: ptr(u.workingSet), RSSBytes: ptr(u.workingSet * 8 / 10)}})
		*p.CPU.UsageNanoCores += u.nanoCores
		*p.CPU.UsageCoreNanoSeconds += u.cumulative(now)
		*p.Memory.WorkingSetBytes += u.workingSet
		*p.Memory.UsageBytes += u.workingSet
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(sum)
}

// serveResourceMetrics serves /metrics/resource in Prometheus' text
// format, the metrics metrics-server scrapes.
func (k *Kubelet) serveResourceMetrics(w http.ResponseWriter, r *http.Request) {
	_, us, ok := k.nodeUsageOf(w, r)
	if !ok {
		return
	}
	now := k.now()
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var b strings.Builder
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s [STABLE] %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	cores, cum, ws := nodeUsage(us, k.start, now)
	_ = cores
	labels := func(u containerUsage) string {
		return fmt.Sprintf(`container=%q,namespace=%q,pod=%q`, u.container, u.namespace, u.pod)
	}
	family("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the container in core-seconds")
	for _, u := range us {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{%s} %s %s\n", labels(u), num(float64(u.cumulative(now))/1e9), ts)
	}
	family("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes")
	for _, u := range us {
		fmt.Fprintf(&b, "container_memory_working_set_bytes{%s} %s %s\n", labels(u), num(float64(u.workingSet)), ts)
	}
	family("container_start_time_seconds", "gauge", "Start time of the container since unix epoch in seconds")
	for _, u := range us {
		fmt.Fprintf(&b, "container_start_time_seconds{%s} %s\n", labels(u), num(float64(u.start.UnixNano())/1e9))
	}
	family("node_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the node in core-seconds")
	fmt.Fprintf(&b, "node_cpu_usage_seconds_total %s %s\n", num(float64(cum)/1e9), ts)
	family("node_memory_working_set_bytes", "gauge", "Current working set of the node in bytes")
	fmt.Fprintf(&b, "node_memory_working_set_bytes %s %s\n", num(float64(ws)), ts)
	family("resource_scrape_error", "gauge", "1 if there was an error while getting container metrics, 0 otherwise")
	b.WriteString("resource_scrape_error 0\n")
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}

// maxJournal bounds the lines one journal query returns.
const maxJournal = 5000

// serveNodeLogs serves /logs/: a listing of the node's log files, one of
// them, or (query=kubelet) the kubelet's journal, as the kubelet's node log
// query does: tailLines, sinceTime, untilTime, pattern.
func (k *Kubelet) serveNodeLogs(w http.ResponseWriter, r *http.Request) {
	node := nodeOfRequest(r)
	if node == "" {
		http.Error(w, "node logs are served on each node's own port", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	p := r.PathValue("path")
	switch {
	case q.Has("query"):
		if svc := q.Get("query"); svc != "kubelet" && svc != "kubelet.service" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "-- No entries --\n")
			return
		}
	case p == "":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<pre>\n")
		for _, name := range []string{"containers/", "journal/", "kubelet.log", "pods/"} {
			fmt.Fprintf(w, "<a href=\"%s\">%s</a>\n", html.EscapeString(name), html.EscapeString(name))
		}
		fmt.Fprint(w, "</pre>\n")
		return
	case p == "kubelet.log":
	default:
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	lines, err := k.journal(r.Context(), node)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			http.Error(w, "sinceTime: "+err.Error(), http.StatusBadRequest)
			return
		}
		lines = since(lines, t)
	}
	if s := q.Get("untilTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			http.Error(w, "untilTime: "+err.Error(), http.StatusBadRequest)
			return
		}
		lines = slices.DeleteFunc(lines, func(l logLine) bool { return l.at.After(t) })
	}
	if s := q.Get("pattern"); s != "" {
		re, err := regexp.Compile(s)
		if err != nil {
			http.Error(w, "pattern: "+err.Error(), http.StatusBadRequest)
			return
		}
		lines = slices.DeleteFunc(lines, func(l logLine) bool { return !re.MatchString(l.text) })
	}
	tail := maxJournal
	if s := q.Get("tailLines"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "invalid tailLines", http.StatusBadRequest)
			return
		}
		tail = min(n, maxJournal)
	}
	lines = lines[max(len(lines)-tail, 0):]
	w.Header().Set("Content-Type", "text/plain")
	for _, l := range lines {
		fmt.Fprintln(w, l.text)
	}
}

// kubeletPID is the simulated kubelet's process id in journal lines.
const kubeletPID = 2041

// journal is the node's kubelet journal: its start, then one line per
// Event the kubelet recorded for the node's pods, oldest first.
func (k *Kubelet) journal(ctx context.Context, node string) ([]logLine, error) {
	line := func(at time.Time, sev, src, msg string) logLine {
		at = at.UTC()
		return logLine{at: at, text: fmt.Sprintf("%s %s kubelet[%d]: %s%s %7d %s] %s", at.Format(time.StampMicro)[:15], node, kubeletPID, sev, at.Format("0102 15:04:05.000000"), kubeletPID, src, msg)}
	}
	lines := []logLine{
		{at: k.start, text: fmt.Sprintf("%s %s systemd[1]: Started kubelet.service - kubelet: The Kubernetes Node Agent.", k.start.UTC().Format(time.Stamp), node)},
		line(k.start, "I", "server.go:530", fmt.Sprintf(`"Kubelet version" kubeletVersion=%q`, KubernetesVersion)),
		line(k.start, "I", "kubelet_node_status.go:78", fmt.Sprintf(`"Successfully registered node" node=%q`, node)),
	}
	k.mu.RLock()
	sim := k.sim
	k.mu.RUnlock()
	if sim == nil {
		return lines, nil
	}
	evs, err := sim.cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "source=kubelet"})
	if err != nil {
		return nil, err
	}
	var events []logLine
	for _, e := range evs.Items {
		if e.Source.Host != node {
			continue
		}
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.IsZero() {
			at = e.CreationTimestamp.Time
		}
		sev := "I"
		if e.Type == corev1.EventTypeWarning {
			sev = "W"
		}
		obj := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		events = append(events, line(at, sev, "event.go:389", fmt.Sprintf(`"Event occurred" object=%q fieldPath=%q kind=%q apiVersion=%q type=%q reason=%q message=%q`,
			obj, e.InvolvedObject.FieldPath, e.InvolvedObject.Kind, e.InvolvedObject.APIVersion, e.Type, e.Reason, e.Message)))
	}
	slices.SortStableFunc(events, func(a, b logLine) int { return a.at.Compare(b.at) })
	return append(lines, events...), nil
}
