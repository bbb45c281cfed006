package scenario

import (
	"context"
	"errors"
	"fmt"
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

// LogSink receives container logs for the pods a scenario seeds; the
// control plane's fake kubelet implements it.
type LogSink interface {
	SetLogs(namespace, pod, container string, previous bool, lines []string)
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
	cs, err := kubernetes.NewForConfig(cfg)
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

	// Phase 1: namespaces, which everything else needs.
	for _, ns := range objs.namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("scenario: namespace %s: %w", ns.Name, err)
		}
	}

	// Phase 2: the objects, concurrently, in three waves so owners exist
	// before what they own (Deployment → ReplicaSet → Pod). Custom
	// resources wait for their CRDs to be served, off the critical path.
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
	for _, v := range objs.deployments {
		g.Go(func() error { return wrap("Deployment", v.Namespace, v.Name, s.deployment(gctx, v)) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for _, v := range objs.replicaSets {
		s.fillOwners(v)
		g.Go(func() error { return wrap("ReplicaSet", v.Namespace, v.Name, s.replicaSet(gctx, v)) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for _, v := range objs.pods {
		s.fillOwners(v)
		g.Go(func() error { return wrap("Pod", v.Namespace, v.Name, s.pod(gctx, v)) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := crds.Wait(); err != nil {
		return nil, err
	}

	// Phase 3: events, which point at the objects' UIDs.
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
		for _, l := range objs.logs {
			logs.SetLogs(l.Namespace, l.Pod, l.Container, false, l.Current)
			if len(l.Previous) > 0 {
				logs.SetLogs(l.Namespace, l.Pod, l.Container, true, l.Previous)
			}
		}
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

func (s *seeder) remember(kind string, m metav1.Object) {
	s.mu.Lock()
	s.uids[objectKey{kind, m.GetNamespace(), m.GetName()}] = m.GetUID()
	s.mu.Unlock()
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
// has none, round-robin over the cluster's nodes.
func (s *seeder) bindNodes(ctx context.Context, pods []*corev1.Pod) error {
	list, err := s.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("scenario: list nodes: %w", err)
	}
	var nodes []string
	for _, n := range list.Items {
		nodes = append(nodes, n.Name)
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

// pod creates p and then writes its status.
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
	created.Status = status
	_, err = s.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
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
	created, err := s.cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.remember("Deployment", created)
	created.Status = status
	_, err = s.cs.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// replicaSet creates rs and then writes its status.
func (s *seeder) replicaSet(ctx context.Context, rs *appsv1.ReplicaSet) error {
	status := rs.Status
	created, err := s.cs.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.remember("ReplicaSet", created)
	created.Status = status
	_, err = s.cs.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// fillOwners sets the UID of each ownerReference from the seeded owner.
func (s *seeder) fillOwners(m metav1.Object) {
	refs := m.GetOwnerReferences()
	s.mu.Lock()
	for i := range refs {
		if refs[i].UID == "" {
			refs[i].UID = s.uids[objectKey{refs[i].Kind, m.GetNamespace(), refs[i].Name}]
		}
	}
	s.mu.Unlock()
	m.SetOwnerReferences(refs)
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
