package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// LogSink receives container logs for the pods a scenario seeds, and the
// scenario's images for the simulated registry of the nodes that run its
// live workloads; the control plane's Kubelet implements it.
type LogSink interface {
	SetLogs(namespace, pod, container string, previous bool, lines []string)
	AddImages(index []byte) error
}

// SeedOptions configure Seed and Describe. A nil *SeedOptions is the same
// as the zero value.
type SeedOptions struct {
	// HealthyPods is the number of generated Running, Ready pods. Zero means
	// DefaultHealthyPods (200); benchmarks use thousands.
	HealthyPods int
	// Workers is the number of concurrent API requests. Zero means 8.
	Workers int
	// Now is the clock that seeded timestamps are relative to. Zero means
	// time.Now.
	Now func() time.Time
	// Progress receives a line per phase with its time taken. Nil means
	// none.
	Progress io.Writer
	// StartControllers starts the cluster's controllers, held back while
	// Seed writes (controlplane.ControlPlane.StartControllers), before the
	// live workloads. Objects are written with their owner references at
	// creation, owners first: two writes a pod, and no controller acting
	// on each (adopting pods after they were written took a third write
	// and, at 20,000 pods, as long as the pods themselves). Nil means the
	// cluster has no controllers to start (a Static control plane).
	StartControllers func(context.Context) error
}

func (o *SeedOptions) withDefaults() SeedOptions {
	var out SeedOptions
	if o != nil {
		out = *o
	}
	if out.HealthyPods == 0 {
		out.HealthyPods = DefaultHealthyPods
	}
	if out.Workers == 0 {
		out.Workers = 8
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// liveTimeout bounds the wait for the live workloads to settle.
const liveTimeout = 60 * time.Second

// SeededLabel marks the Events the seeder writes, apart from those the
// cluster's components write.
const SeededLabel = "scenario.kubecode.io/seeded"

// kwokNodeAnnotation marks the nodes KWOK manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// ErrAlreadySeeded is returned by Seed when the cluster already holds the
// scenario (its first namespace exists). Seed a fresh control plane instead,
// and use Describe for the Truth.
var ErrAlreadySeeded = errors.New("scenario: already seeded")

// Describe returns the Truth of the demo scenario without seeding anything.
func Describe(opts *SeedOptions) (*Truth, error) {
	o := opts.withDefaults()
	objs, err := demo(o.HealthyPods, o.Now())
	if err != nil {
		return nil, err
	}
	return objs.truth(o.HealthyPods), nil
}

func demo(healthy int, now time.Time) (*objects, error) {
	objs, err := loadFixtures(fixturesFS, demoDir)
	if err != nil {
		return nil, err
	}
	objs.generate(healthy, now)
	objs.deriveReplicaSets()
	return objs, nil
}

// Seed creates the demo scenario in the cluster of cfg (as a
// cluster-admin) and gives the pods' logs to logs (nil skips logs). Pods are
// bound round-robin to the cluster's Nodes, which must exist (the control
// plane registers them); unschedulable pods stay unbound. Seeding twice
// returns ErrAlreadySeeded.
//
// The cluster's controllers must not run while Seed writes (start the
// control plane with controlplane.Options.HoldControllers and pass its
// StartControllers): a ReplicaSet's controller would make pods of its own
// before the scenario's were written.
func Seed(ctx context.Context, cfg *rest.Config, logs LogSink, opts *SeedOptions) (*Truth, error) {
	o := opts.withDefaults()
	now := o.Now()
	objs, err := demo(o.HealthyPods, now)
	if err != nil {
		return nil, err
	}
	truth := objs.truth(o.HealthyPods)

	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	// Built-in objects go in protobuf: the API server decodes and encodes
	// it several times faster than JSON, and seeding 20,000 pods is three
	// writes each.
	pcfg := rest.CopyConfig(cfg)
	pcfg.ContentType = "application/vnd.kubernetes.protobuf"
	pcfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s := &seeder{cs: cs, dyn: dyn, now: now, crds: map[schema.GroupKind]CRD{}, uids: map[objectKey]types.UID{}}
	for _, u := range objs.crds {
		c := crdOf(u.Object)
		s.crds[schema.GroupKind{Group: c.Group, Kind: c.Kind}] = c
	}

	if len(objs.namespaces) > 0 {
		_, err := cs.CoreV1().Namespaces().Get(ctx, objs.namespaces[0].Name, metav1.GetOptions{})
		if err == nil {
			return nil, fmt.Errorf("%w: namespace %s exists; seed a fresh control plane", ErrAlreadySeeded, objs.namespaces[0].Name)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("scenario: %w", err)
		}
	}
	if err := s.bindNodes(ctx, objs.pods); err != nil {
		return nil, err
	}
	for _, p := range objs.pods {
		fillPodStatus(p, now)
	}

	phase, last := "", time.Now()
	step := func(next string) {
		if o.Progress != nil && phase != "" {
			fmt.Fprintf(o.Progress, "seeding: %s in %s\n", phase, time.Since(last).Round(100*time.Millisecond))
		}
		phase, last = next, time.Now()
	}
	defer step("")

	// Phase 1: namespaces, which everything else needs.
	step("namespaces")
	for _, ns := range objs.namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("scenario: namespace %s: %w", ns.Name, err)
		}
	}

	// Phase 2: the objects, concurrently, owners first (Deployment →
	// ReplicaSet → Pod), each with its owners' UIDs at creation: no
	// controller runs yet to make pods of its own for a ReplicaSet, or to
	// adopt. Custom resources wait for their CRDs to be served, off the
	// critical path.
	crdCtx, cancelCRDs := context.WithCancel(ctx)
	crds, crdCtx := errgroup.WithContext(crdCtx)
	defer func() {
		cancelCRDs()
		_ = crds.Wait() // on early returns; a no-op after the Wait below
	}()
	crds.Go(func() error {
		for _, crd := range objs.crds {
			if err := s.createCRD(crdCtx, crd); err != nil {
				return err
			}
		}
		for _, v := range objs.custom {
			if err := s.custom(crdCtx, v); err != nil {
				return wrap(v.GetKind(), v.GetNamespace(), v.GetName(), err)
			}
		}
		return nil
	})
	step("deployments")
	if err := each(ctx, o.Workers, objs.deployments, func(ctx context.Context, d *appsv1.Deployment) error {
		return wrap("Deployment", d.Namespace, d.Name, s.deployment(ctx, d))
	}); err != nil {
		return nil, err
	}
	step("replica sets")
	if err := each(ctx, o.Workers, objs.replicaSets, func(ctx context.Context, rs *appsv1.ReplicaSet) error {
		rs.OwnerReferences = s.withUIDs(rs.Namespace, rs.OwnerReferences)
		return wrap("ReplicaSet", rs.Namespace, rs.Name, s.replicaSet(ctx, rs))
	}); err != nil {
		return nil, err
	}
	for _, p := range objs.pods {
		p.OwnerReferences = s.withUIDs(p.Namespace, p.OwnerReferences)
	}
	step("pods, services, config maps, secrets")
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for _, v := range objs.configMaps {
		g.Go(func() error {
			return wrap("ConfigMap", v.Namespace, v.Name, create(gctx, cs.CoreV1().ConfigMaps(v.Namespace).Create, v))
		})
	}
	for _, v := range objs.secrets {
		g.Go(func() error {
			return wrap("Secret", v.Namespace, v.Name, create(gctx, cs.CoreV1().Secrets(v.Namespace).Create, v))
		})
	}
	for _, v := range objs.services {
		g.Go(func() error {
			return wrap("Service", v.Namespace, v.Name, create(gctx, cs.CoreV1().Services(v.Namespace).Create, v))
		})
	}
	for _, v := range objs.slices {
		g.Go(func() error {
			return wrap("EndpointSlice", v.Namespace, v.Name, create(gctx, cs.DiscoveryV1().EndpointSlices(v.Namespace).Create, v))
		})
	}
	for _, v := range objs.pods {
		g.Go(func() error { return wrap("Pod", v.Namespace, v.Name, s.pod(gctx, v)) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	step("custom resources")
	if err := crds.Wait(); err != nil {
		return nil, err
	}
	if o.StartControllers != nil {
		step("controllers")
		if err := o.StartControllers(ctx); err != nil {
			return nil, fmt.Errorf("scenario: %w", err)
		}
	}

	// Phase 3: events, which point at the objects' UIDs.
	step("events")
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for _, v := range objs.events {
		s.fillEvent(v)
		g.Go(func() error {
			return wrap("Event", v.Namespace, v.Name, create(gctx, cs.CoreV1().Events(v.Namespace).Create, v))
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	if logs != nil {
		if err := addImages(logs); err != nil {
			return nil, fmt.Errorf("scenario: %w", err)
		}
		for _, l := range objs.logs {
			logs.SetLogs(l.Namespace, l.Pod, l.Container, false, l.Current)
			if len(l.Previous) > 0 {
				logs.SetLogs(l.Namespace, l.Pod, l.Container, true, l.Previous)
			}
		}
	}

	// Phase 4: the live workloads, where simulated nodes can run them.
	step("live workloads")
	if ok, err := s.simulatedNodes(ctx); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	} else if ok {
		if err := s.seedLive(ctx, liveTimeout); err != nil {
			return nil, err
		}
		lv := liveTruth
		truth.Live = &lv
	}
	return truth, nil
}

// seeder holds the clients and what was created.
type seeder struct {
	cs  kubernetes.Interface
	dyn dynamic.Interface
	now time.Time

	crds map[schema.GroupKind]CRD

	mu   sync.Mutex
	uids map[objectKey]types.UID
}

type objectKey struct{ kind, namespace, name string }

// remember records a created object's UID.
func (s *seeder) remember(kind string, m metav1.Object) {
	s.mu.Lock()
	key := objectKey{kind, m.GetNamespace(), m.GetName()}
	s.uids[key] = m.GetUID()
	s.mu.Unlock()
}

// each calls f on every item, workers at a time, and returns the first
// error.
func each[T any](ctx context.Context, workers int, items []T, f func(context.Context, T) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, v := range items {
		g.Go(func() error { return f(gctx, v) })
	}
	return g.Wait()
}

// create is a typed Create call that discards the result.
func create[T any](ctx context.Context, fn func(context.Context, T, metav1.CreateOptions) (T, error), v T) error {
	_, err := fn(ctx, v, metav1.CreateOptions{})
	return err
}

func wrap(kind, ns, name string, err error) error {
	if err != nil {
		return fmt.Errorf("scenario: %s %s/%s: %w", kind, ns, name, err)
	}
	return nil
}

// bindNodes sets spec.nodeName of every pod that is not unschedulable and
// has none, round-robin over the cluster's static nodes: those no KWOK
// manages, so the status seeded stays as written.
func (s *seeder) bindNodes(ctx context.Context, pods []*corev1.Pod) error {
	list, err := s.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("scenario: list nodes: %w", err)
	}
	var nodes []string
	for _, n := range list.Items {
		if _, simulated := n.Annotations[kwokNodeAnnotation]; !simulated {
			nodes = append(nodes, n.Name)
		}
	}
	if len(nodes) == 0 {
		return errors.New("scenario: the cluster has no nodes; pods need one for their logs to route (start the control plane with nodes)")
	}
	slices.Sort(nodes)
	i := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" || unscheduled(p) {
			continue
		}
		p.Spec.NodeName = nodes[i%len(nodes)]
		i++
	}
	return nil
}

// pod creates p and then writes
// its status.
func (s *seeder) pod(ctx context.Context, p *corev1.Pod) error {
	status := p.Status
	created, err := s.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.remember("Pod", created)
	if status.Phase == "" {
		return nil
	}
	status.QOSClass = created.Status.QOSClass
	pods := s.cs.CoreV1().Pods(p.Namespace)
	return writeStatus(ctx, created, func(p *corev1.Pod) { p.Status = status },
		func(ctx context.Context, name string) (*corev1.Pod, error) {
			return pods.Get(ctx, name, metav1.GetOptions{})
		},
		func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
			return pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		})
}

// writeStatus sets an object's status with set and writes it, reading the
// object again while a controller's write conflicts with it.
func writeStatus[T metav1.Object](ctx context.Context, obj T, set func(T),
	get func(context.Context, string) (T, error), update func(context.Context, T) (T, error)) error {
	for attempt := 0; ; attempt++ {
		set(obj)
		_, err := update(ctx, obj)
		if !apierrors.IsConflict(err) || attempt == 20 {
			return err
		}
		if obj, err = get(ctx, obj.GetName()); err != nil {
			return err
		}
	}
}

// deployment creates d and then writes its status.
func (s *seeder) deployment(ctx context.Context, d *appsv1.Deployment) error {
	status := d.Status
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.NewTime(s.now.Add(-30 * time.Minute).Truncate(time.Second))
		}
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = c.LastTransitionTime
		}
	}
	deps := s.cs.AppsV1().Deployments(d.Namespace)
	created, err := deps.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.remember("Deployment", created)
	return writeStatus(ctx, created, func(d *appsv1.Deployment) { d.Status = status },
		func(ctx context.Context, name string) (*appsv1.Deployment, error) {
			return deps.Get(ctx, name, metav1.GetOptions{})
		},
		func(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			return deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		})
}

// replicaSet creates rs and then
// writes its status.
func (s *seeder) replicaSet(ctx context.Context, rs *appsv1.ReplicaSet) error {
	status := rs.Status
	rss := s.cs.AppsV1().ReplicaSets(rs.Namespace)
	created, err := rss.Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.remember("ReplicaSet", created)
	return writeStatus(ctx, created, func(rs *appsv1.ReplicaSet) { rs.Status = status },
		func(ctx context.Context, name string) (*appsv1.ReplicaSet, error) {
			return rss.Get(ctx, name, metav1.GetOptions{})
		},
		func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			return rss.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		})
}

// fillPodStatus fills the times and addresses a kubelet would have set and
// the fixtures leave out: start 2h ago, last termination a minute ago, pod
// IPs for bound pods.
func fillPodStatus(p *corev1.Pod, now time.Time) {
	st := &p.Status
	if st.Phase == "" {
		return
	}
	if st.StartTime == nil && p.Spec.NodeName != "" {
		t := metav1.NewTime(now.Add(-2 * time.Hour).Truncate(time.Second))
		st.StartTime = &t
	}
	start := metav1.NewTime(now.Add(-2 * time.Hour).Truncate(time.Second))
	if st.StartTime != nil {
		start = *st.StartTime
	}
	for i := range st.Conditions {
		if st.Conditions[i].LastTransitionTime.IsZero() {
			st.Conditions[i].LastTransitionTime = start
		}
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if r := cs.State.Running; r != nil && r.StartedAt.IsZero() {
			r.StartedAt = start
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			if t.FinishedAt.IsZero() {
				t.FinishedAt = metav1.NewTime(now.Add(-time.Minute).Truncate(time.Second))
			}
			if t.StartedAt.IsZero() {
				t.StartedAt = metav1.NewTime(t.FinishedAt.Add(-30 * time.Second))
			}
		}
	}
	if p.Spec.NodeName != "" {
		if st.HostIP == "" {
			st.HostIP = "127.0.0.1" // the nodes' InternalIP
		}
		if len(st.HostIPs) == 0 {
			st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
		}
		if st.PodIP != "" && len(st.PodIPs) == 0 {
			st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
		}
	}
}

// fillEvent sets the event's involvedObject.uid from the seeded object and
// its timestamps relative to now.
func (s *seeder) fillEvent(e *corev1.Event) {
	e.Labels = withLabel(e.Labels, SeededLabel, "true")
	io := &e.InvolvedObject
	s.mu.Lock()
	if uid, ok := s.uids[objectKey{io.Kind, io.Namespace, io.Name}]; ok && io.UID == "" {
		io.UID = uid
	}
	s.mu.Unlock()
	if e.FirstTimestamp.IsZero() {
		e.FirstTimestamp = metav1.NewTime(s.now.Add(-2 * time.Hour).Truncate(time.Second))
	}
	if e.LastTimestamp.IsZero() {
		e.LastTimestamp = metav1.NewTime(s.now.Add(-time.Minute).Truncate(time.Second))
	}
	if e.Count == 0 {
		e.Count = 1
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// createCRD creates a CustomResourceDefinition and waits until it is
// established and served.
func (s *seeder) createCRD(ctx context.Context, u *unstructured.Unstructured) error {
	if _, err := s.dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("scenario: CustomResourceDefinition %s: %w", u.GetName(), err)
	}
	c := crdOf(u.Object)
	gv := schema.GroupVersion{Group: c.Group, Version: c.Version}.String()
	for {
		if rl, err := s.cs.Discovery().ServerResourcesForGroupVersion(gv); err == nil {
			for _, r := range rl.APIResources {
				if r.Name == c.Resource {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scenario: CustomResourceDefinition %s not served: %w", u.GetName(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// custom creates a custom resource and writes its status, if any.
func (s *seeder) custom(ctx context.Context, u *unstructured.Unstructured) error {
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return err
	}
	crd, ok := s.crds[gv.WithKind(u.GetKind()).GroupKind()]
	if !ok {
		return fmt.Errorf("no CustomResourceDefinition in the scenario for %s", u.GetObjectKind().GroupVersionKind())
	}
	gvr := gv.WithResource(crd.Resource)
	status, hasStatus := u.Object["status"]
	created, err := s.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if !hasStatus {
		return nil
	}
	created.Object["status"] = status
	_, err = s.dyn.Resource(gvr).Namespace(u.GetNamespace()).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// withUIDs returns owners, in namespace ns, with the UIDs of the objects
// they name, created before.
func (s *seeder) withUIDs(ns string, owners []metav1.OwnerReference) []metav1.OwnerReference {
	if len(owners) == 0 {
		return owners
	}
	out := make([]metav1.OwnerReference, len(owners))
	copy(out, owners)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out {
		out[i].UID = s.uids[objectKey{out[i].Kind, ns, out[i].Name}]
	}
	return out
}
