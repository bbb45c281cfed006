package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// liveFile holds the live workloads: objects without status that the
// cluster's controllers, scheduler and KWOK bring to life.
const liveFile = "fixtures/live/live.yaml"

// Live names the workloads of the demo that the cluster itself runs, in
// namespace Namespace. Their pods have generated names, so they are named
// here by their owners.
type Live struct {
	Namespace string
	// Healthy becomes Available with all its replicas, and rolls out when
	// its image changes.
	Healthy ObjectRef
	// Broken never becomes Available: its image tag does not exist in the
	// simulated registry, so its pods wait in ImagePullBackOff until its
	// image is set to one that does (2.0.0).
	Broken ObjectRef
	// StatefulSet has all its replicas ready; HPA scales Healthy; Job runs
	// to completion.
	StatefulSet, HPA, Job ObjectRef
	// Privileged runs a privileged container on an image without a tag;
	// Ingress routes a wildcard host to Healthy.
	Privileged, Ingress ObjectRef
	// Pods is how many pods the live workloads settle at (Job's completed
	// pod included).
	Pods int
}

// liveTruth describes the live fixtures.
var liveTruth = Live{
	Namespace:   "live",
	Healthy:     ObjectRef{"live", "storefront"},
	Broken:      ObjectRef{"live", "search"},
	StatefulSet: ObjectRef{"live", "cache"},
	HPA:         ObjectRef{"live", "storefront"},
	Job:         ObjectRef{"live", "nightly-report"},
	Privileged:  ObjectRef{"live", "log-shipper"},
	Ingress:     ObjectRef{"live", "storefront"},
	Pods:        3 + 2 + 2 + 1 + 1,
}

// liveResources maps the live fixtures' kinds to their resources.
var liveResources = map[string]schema.GroupVersionResource{
	"Namespace":               {Version: "v1", Resource: "namespaces"},
	"Service":                 {Version: "v1", Resource: "services"},
	"Deployment":              {Group: "apps", Version: "v1", Resource: "deployments"},
	"StatefulSet":             {Group: "apps", Version: "v1", Resource: "statefulsets"},
	"Job":                     {Group: "batch", Version: "v1", Resource: "jobs"},
	"HorizontalPodAutoscaler": {Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
	"Ingress":                 {Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
}

// liveObjects reads the live fixtures.
func liveObjects() ([]*unstructured.Unstructured, error) {
	b, err := fs.ReadFile(fixturesFS, liveFile)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("scenario: %s: %w", liveFile, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if _, ok := liveResources[u.GetKind()]; !ok {
			return nil, fmt.Errorf("scenario: %s: kind %s is not supported", liveFile, u.GetKind())
		}
		out = append(out, u)
	}
}

// seedLive creates the live workloads and waits, up to timeout, until they
// have settled: Healthy and the StatefulSet ready, Broken's pods failing,
// the Job complete.
func (s *seeder) seedLive(ctx context.Context, timeout time.Duration) error {
	objs, err := liveObjects()
	if err != nil {
		return err
	}
	for _, u := range objs {
		r := s.dyn.Resource(liveResources[u.GetKind()])
		var err error
		if u.GetNamespace() == "" {
			_, err = r.Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = r.Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			return wrap(u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		state, err := s.liveState(ctx)
		if err != nil {
			return fmt.Errorf("scenario: live workloads: %w", err)
		}
		if state == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scenario: live workloads did not settle in %s: %s", timeout, state)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// liveState says what the live workloads still lack, or "" when they have
// settled.
func (s *seeder) liveState(ctx context.Context) (string, error) {
	lv := liveTruth
	for _, name := range []string{lv.Healthy.Name, lv.Privileged.Name} {
		d, err := s.cs.AppsV1().Deployments(lv.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if d.Spec.Replicas == nil || d.Status.AvailableReplicas != *d.Spec.Replicas || d.Status.UpdatedReplicas != *d.Spec.Replicas {
			return fmt.Sprintf("deployment %s: %d of %d available", d.Name, d.Status.AvailableReplicas, ptrOr(d.Spec.Replicas)), nil
		}
	}
	sts, err := s.cs.AppsV1().StatefulSets(lv.Namespace).Get(ctx, lv.StatefulSet.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if sts.Spec.Replicas == nil || sts.Status.ReadyReplicas != *sts.Spec.Replicas {
		return fmt.Sprintf("statefulset %s: %d of %d ready", sts.Name, sts.Status.ReadyReplicas, ptrOr(sts.Spec.Replicas)), nil
	}
	job, err := s.cs.BatchV1().Jobs(lv.Namespace).Get(ctx, lv.Job.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if !jobComplete(job) {
		return fmt.Sprintf("job %s: not complete", job.Name), nil
	}
	broken, err := s.cs.AppsV1().Deployments(lv.Namespace).Get(ctx, lv.Broken.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	pods, err := s.cs.CoreV1().Pods(lv.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + lv.Broken.Name})
	if err != nil {
		return "", err
	}
	failing := 0
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil && c.State.Waiting.Reason == "ImagePullBackOff" {
				failing++
			}
		}
	}
	if broken.Spec.Replicas == nil || failing != int(*broken.Spec.Replicas) {
		return fmt.Sprintf("deployment %s: %d pods in ImagePullBackOff", broken.Name, failing), nil
	}
	return "", nil
}

func jobComplete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func ptrOr(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// simulatedNodes reports whether the cluster has nodes KWOK manages, that
// is, whether anything runs the live workloads.
func (s *seeder) simulatedNodes(ctx context.Context) (bool, error) {
	nodes, err := s.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[kwokNodeAnnotation]; ok {
			return true, nil
		}
	}
	return false, nil
}
