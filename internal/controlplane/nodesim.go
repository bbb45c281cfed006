package controlplane

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// nodeSim is the kubelet of the simulated nodes (every Node annotated
// kwok.x-k8s.io/node=fake, including those added later): it decides every
// container's state from the pod's spec, the images of the simulated
// registry and the ConfigMaps and Secrets the pod refers to (podsim.go),
// writes the pod's status and the kubelet's Events, and answers for the
// containers' logs. KWOK keeps the nodes Ready and finishes deletions.
// The storage half (storage.go) provisions and resizes volumes.
type nodeSim struct {
	cs      kubernetes.Interface
	images  *Images
	backOff time.Duration
	now     func() time.Time
	ctx     context.Context

	configMaps corelisters.ConfigMapLister
	secrets    corelisters.SecretLister
	queue      workqueue.TypedDelayingInterface[string]
	broadcast  record.EventBroadcaster

	mu     sync.Mutex
	nodes  map[string]*simNode
	static map[string]*staticUsage // by static node
	runs   map[string]run          // simulated processes, by what they run
	ips    map[netip.Addr]string
	next   netip.Addr

	storage *storageSim
	// writes are what kubectl exec wrote in containers and on claims.
	writes execWrites
	// served are what servers logged for requests that reached them.
	served servedLog
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// simNode is one simulated node: an informer of the pods bound to it.
type simNode struct {
	pods     corelisters.PodLister
	index    cache.Indexer
	synced   cache.InformerSynced
	stop     chan struct{}
	recorder record.EventRecorder
}

// startNodeSim starts the simulation of nodes and waits for its caches.
func startNodeSim(startCtx context.Context, cs kubernetes.Interface, images *Images) (*nodeSim, error) {
	ctx, cancel := context.WithCancel(context.Background())
	n := &nodeSim{
		cs: cs, images: images, now: time.Now, ctx: ctx,
		queue:  workqueue.NewTypedDelayingQueue[string](),
		nodes:  map[string]*simNode{},
		runs:   map[string]run{},
		ips:    map[netip.Addr]string{},
		next:   netip.MustParseAddr("10.96.0.2"),
		cancel: cancel,
	}
	n.broadcast = record.NewBroadcaster(record.WithContext(ctx))
	n.broadcast.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})

	f := informers.NewSharedInformerFactory(cs, 0)
	byNamespace := cache.ResourceEventHandlerFuncs{
		AddFunc:    n.enqueueNamespace,
		UpdateFunc: func(_, obj any) { n.enqueueNamespace(obj) },
		DeleteFunc: n.enqueueNamespace,
	}
	cms, secrets, nodes := f.Core().V1().ConfigMaps(), f.Core().V1().Secrets(), f.Core().V1().Nodes()
	_, _ = cms.Informer().AddEventHandler(byNamespace)
	_, _ = secrets.Informer().AddEventHandler(byNamespace)
	nodeReg, _ := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.watchNode(obj); n.taintCordoned(obj) },
		UpdateFunc: func(_, obj any) { n.watchNode(obj); n.taintCordoned(obj) },
		DeleteFunc: n.forgetNode,
	})
	n.configMaps, n.secrets = cms.Lister(), secrets.Lister()
	synced := []cache.InformerSynced{cms.Informer().HasSynced, secrets.Informer().HasSynced, nodeReg.HasSynced}
	n.storage = newStorageSim(cs, f)
	synced = append(synced, n.storage.synced...)
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(startCtx.Done(), synced...) {
		n.stop()
		return nil, fmt.Errorf("node simulation: caches did not sync: %w", startCtx.Err())
	}
	n.mu.Lock()
	synced = synced[:0]
	for _, sn := range n.nodes {
		synced = append(synced, sn.synced)
	}
	n.mu.Unlock()
	if !cache.WaitForCacheSync(startCtx.Done(), synced...) {
		n.stop()
		return nil, fmt.Errorf("node simulation: pods did not sync: %w", startCtx.Err())
	}
	n.done.Add(2)
	go func() { defer n.done.Done(); n.work(ctx) }()
	go func() { defer n.done.Done(); n.storage.run(ctx) }()
	go func() { <-ctx.Done(); n.queue.ShutDown() }()
	return n, nil
}

// watchNode starts following the pods of a node KWOK manages.
func (n *nodeSim) watchNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok || node.Annotations[kwokAnnotation] != kwokManaged {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.nodes[node.Name]; ok || n.ctx.Err() != nil {
		return
	}
	f := informers.NewSharedInformerFactoryWithOptions(n.cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node.Name).String()
	}))
	inf := f.Core().V1().Pods()
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			n.queue.Add(p.Namespace + "/" + p.Name)
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				n.hold(p)
			}
			enqueue(obj)
		},
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				n.release(p)
			}
		},
	})
	sn := &simNode{pods: inf.Lister(), index: inf.Informer().GetIndexer(), synced: inf.Informer().HasSynced, stop: make(chan struct{}),
		recorder: n.broadcast.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node.Name})}
	n.nodes[node.Name] = sn
	f.Start(sn.stop)
}

// taintCordoned keeps a simulated node's unschedulable taint as its
// spec says, as the node lifecycle controller does on a real cluster
// (disabled here: no kubelet posts the nodes' health): a cordoned node is
// tainted node.kubernetes.io/unschedulable:NoSchedule, an uncordoned one
// is not. A write that loses a race is made again on the next update.
func (n *nodeSim) taintCordoned(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok || node.Annotations[kwokAnnotation] != kwokManaged {
		return
	}
	has := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnschedulable })
	if has == node.Spec.Unschedulable {
		return
	}
	node = node.DeepCopy()
	if node.Spec.Unschedulable {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: n.now()}})
	} else {
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnschedulable })
	}
	go func() { // ends with the simulation's context, at the latest
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		defer cancel()
		_, _ = n.cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	}()
}

func (n *nodeSim) forgetNode(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if sn, ok := n.nodes[node.Name]; ok {
		close(sn.stop)
		delete(n.nodes, node.Name)
	}
}

// stop ends the simulation and waits for it.
func (n *nodeSim) stop() {
	n.cancel()
	n.mu.Lock()
	for name, sn := range n.nodes {
		close(sn.stop)
		delete(n.nodes, name)
	}
	n.mu.Unlock()
	n.queue.ShutDown()
	n.done.Wait()
	n.broadcast.Shutdown()
}

func (n *nodeSim) enqueueNamespace(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	n.mu.Lock()
	var idxs []cache.Indexer
	for _, sn := range n.nodes {
		idxs = append(idxs, sn.index)
	}
	n.mu.Unlock()
	for _, idx := range idxs {
		keys, _ := idx.IndexKeys(cache.NamespaceIndex, m.GetNamespace())
		for _, k := range keys {
			n.queue.Add(k)
		}
	}
}

func (n *nodeSim) work(ctx context.Context) {
	for {
		key, quit := n.queue.Get()
		if quit {
			return
		}
		if next, err := n.sync(ctx, key); err != nil {
			if ctx.Err() == nil {
				n.queue.AddAfter(key, 200*time.Millisecond)
			}
		} else if !next.IsZero() {
			n.queue.AddAfter(key, time.Until(next))
		}
		n.queue.Done(key)
	}
}

// pod finds a pod on any simulated node.
func (n *nodeSim) pod(namespace, name string) (*corev1.Pod, *simNode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, sn := range n.nodes {
		if p, err := sn.pods.Pods(namespace).Get(name); err == nil {
			return p, sn
		}
	}
	return nil, nil
}

// sync evaluates one pod and writes its status and events.
func (n *nodeSim) sync(ctx context.Context, key string) (time.Time, error) {
	ns, name, _ := strings.Cut(key, "/")
	pod, node := n.pod(ns, name)
	if pod == nil || pod.DeletionTimestamp != nil {
		return time.Time{}, nil
	}
	res, ok := evaluatePod(pod, n.env(pod))
	if !ok {
		return time.Time{}, nil
	}
	if !equality.Semantic.DeepEqual(res.status, pod.Status) {
		up := pod.DeepCopy()
		up.Status = res.status
		if _, err := n.cs.CoreV1().Pods(ns).UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return time.Time{}, nil
			}
			return time.Time{}, err
		}
	}
	rec := node.recorder
	for _, e := range res.events {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: name, UID: pod.UID, FieldPath: e.fieldPath}
		rec.Event(ref, e.eventType, e.reason, e.message)
	}
	return res.next, nil
}

func (n *nodeSim) env(pod *corev1.Pod) podEnv {
	return podEnv{
		images: n.images,
		configMap: func(ns, name string) (*corev1.ConfigMap, bool) {
			cm, err := n.configMaps.ConfigMaps(ns).Get(name)
			return cm, err == nil
		},
		secret: func(ns, name string) (*corev1.Secret, bool) {
			s, err := n.secrets.Secrets(ns).Get(name)
			return s, err == nil
		},
		run:     n.run,
		now:     n.now(),
		backOff: n.backOff,
		hostIP:  "127.0.0.1",
		podIP:   func() string { return n.allocate(pod) },
		net:     &clusterNet{n: n, pod: pod},
	}
}

// run simulates a process once for all the containers that run the same.
// A process that reaches the cluster is simulated once per start, against
// the cluster as it is then.
func (n *nodeSim) run(p containerProc) run {
	key := processKey(p)
	if p.net == nil {
		key += "\x03" // without the network
	}
	if r, ok := n.cached(key, p.netKey); ok {
		return r
	}
	r := simulate(p)
	n.mu.Lock()
	if len(n.runs) > 10_000 {
		clear(n.runs)
	}
	switch {
	case r.retry:
		// Its network calls ran out of time: simulated again next time.
	case r.network:
		if _, seen := n.runs[key]; !seen {
			n.runs[key] = r
		}
		n.runs[key+"\x02"+p.netKey] = r
	default:
		n.runs[key] = r
	}
	n.mu.Unlock()
	return r
}

// cached is the run kept under key: for a process that reached the
// cluster, the run of its start netKey.
func (n *nodeSim) cached(key, netKey string) (run, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.runs[key]
	if ok && r.network {
		r, ok = n.runs[key+"\x02"+netKey]
	}
	return r, ok
}

// runQuietly is the run the node made of p's start, or, if it made none,
// p simulated without the network (what it listens on is known without
// fetching anything).
func (n *nodeSim) runQuietly(p containerProc) run {
	if r, ok := n.cached(processKey(p), p.netKey); ok {
		return r
	}
	p.net, p.netKey = nil, ""
	return n.run(p)
}

// processKey names what a process runs: image, argv, environment, files
// and hostname (date's output depends on the start; it is not cached in).
func processKey(p containerProc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%q\x00%s\x00", p.image.Repository, p.argv, p.hostname)
	for _, m := range []map[string]string{p.env, p.files} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%q=%q\x00", k, m[k])
		}
		b.WriteByte(1)
	}
	return b.String()
}

// allocate gives a pod an IP of podCIDR.
func (n *nodeSim) allocate(pod *corev1.Pod) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	prefix := netip.MustParsePrefix(podCIDR)
	for range 1 << 16 {
		a := n.next
		n.next = n.next.Next()
		if !prefix.Contains(n.next) {
			n.next = netip.MustParseAddr("10.96.0.2")
		}
		if _, used := n.ips[a]; !used {
			n.ips[a] = string(pod.UID)
			return a.String()
		}
	}
	return ""
}

// hold keeps the IP a pod already has (after a restart of the simulation).
func (n *nodeSim) hold(pod *corev1.Pod) {
	if a, err := netip.ParseAddr(pod.Status.PodIP); err == nil && netip.MustParsePrefix(podCIDR).Contains(a) {
		n.mu.Lock()
		n.ips[a] = string(pod.UID)
		n.mu.Unlock()
	}
}

func (n *nodeSim) release(pod *corev1.Pod) {
	a, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil {
		return
	}
	n.mu.Lock()
	if n.ips[a] == string(pod.UID) {
		delete(n.ips, a)
	}
	n.mu.Unlock()
}

// logs are the lines of a container of a pod on a simulated node: what its
// process printed up to now (or, previous, in its last terminated run).
// ok is false for pods the simulation does not run; err is the kubelet's
// answer when there are no logs to give.
func (n *nodeSim) logs(namespace, name, container string, previous bool) (lines []logLine, err error, ok bool) {
	pod, _ := n.pod(namespace, name)
	if pod == nil {
		return nil, nil, false
	}
	var c *corev1.Container
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == container {
				c = &cs[i]
			}
		}
	}
	st := findStatus(append(append([]corev1.ContainerStatus(nil), pod.Status.ContainerStatuses...), pod.Status.InitContainerStatuses...), container)
	if c == nil || st == nil {
		return nil, nil, false
	}
	var started, finished time.Time
	switch {
	case previous && st.LastTerminationState.Terminated != nil:
		started, finished = st.LastTerminationState.Terminated.StartedAt.Time, st.LastTerminationState.Terminated.FinishedAt.Time
	case previous:
		return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, name), true
	case st.State.Running != nil:
		started, finished = st.State.Running.StartedAt.Time, n.now()
	case st.State.Terminated != nil:
		started, finished = st.State.Terminated.StartedAt.Time, st.State.Terminated.FinishedAt.Time
	case st.LastTerminationState.Terminated != nil:
		// Waiting to start again (CrashLoopBackOff): the kubelet shows
		// the instance that ended, as kubectl logs does on a real node.
		started, finished = st.LastTerminationState.Terminated.StartedAt.Time, st.LastTerminationState.Terminated.FinishedAt.Time
		previous = true
	case st.State.Waiting != nil:
		why := st.State.Waiting.Reason
		if why == "ImagePullBackOff" || why == "ErrImagePull" {
			why = "trying and failing to pull image"
		}
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: %s", container, name, why), true
	}
	img, _ := n.images.Lookup(c.Image)
	if img == nil {
		return nil, nil, true
	}
	s := &podSim{env: n.env(pod), pod: pod}
	r, _ := s.process(c, img, started)
	if r.startError != "" {
		return nil, nil, true
	}
	for _, l := range r.lines {
		at := started.Add(l.at)
		if at.After(finished) {
			break
		}
		lines = append(lines, logLine{at: at, text: l.text})
	}
	if len(lines) == 0 && r.unknown != "" {
		lines = append(lines, logLine{at: started, text: fmt.Sprintf("[kubecode simulated node] no log lines are known for this container: %s", r.unknown)})
	}
	// The requests that reached it, as a server logs them.
	restarts := st.RestartCount
	if previous {
		restarts--
	}
	for _, l := range n.served.of(fmt.Sprintf("%s/%s/%d", pod.UID, container, restarts)) {
		if !l.at.Before(started) && !l.at.After(finished) {
			lines = append(lines, l)
		}
	}
	slices.SortStableFunc(lines, func(a, b logLine) int { return a.at.Compare(b.at) })
	return lines, nil, true
}
