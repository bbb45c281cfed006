package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/kubecode/kubecode/catalog"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Rollouts, as kubectl rollout does them: status, history and undo of
// Deployments (status of StatefulSets and DaemonSets too), and restart.

const revisionAnnotation = "deployment.kubernetes.io/revision"

// rolloutKinds are the workloads rollout.restart and rollout.status serve.
func rolloutKind(r *resource) bool {
	return r.gvr.Group == "apps" && (r.gvr.Resource == "deployments" || r.gvr.Resource == "statefulsets" || r.gvr.Resource == "daemonsets")
}

func isDeployments(r *resource) bool {
	return r.gvr.Group == "apps" && r.gvr.Resource == "deployments"
}

// rolloutStatus is the answer of rollout.status.
type rolloutStatus struct {
	Done               bool   `json:"done"`
	Failed             bool   `json:"failed"`
	Message            string `json:"message"`
	Generation         int64  `json:"generation"`
	ObservedGeneration int64  `json:"observedGeneration"`
	Desired            int32  `json:"desired"`
	Updated            int32  `json:"updated"`
	Ready              int32  `json:"ready"`
	Available          int32  `json:"available"`
}

func (a *Adapter) rolloutStatus(ctx context.Context, r *resource, raw json.RawMessage) (json.RawMessage, error) {
	args, err := a.target(raw)
	if err != nil {
		return nil, err
	}
	u, err := a.client(r, args.Namespace).Get(ctx, args.Name, metav1.GetOptions{})
	if err != nil {
		return nil, wrapError(err)
	}
	var st rolloutStatus
	switch r.gvr.Resource {
	case "deployments":
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			return nil, err
		}
		st = deploymentStatus(&d)
	case "statefulsets":
		var s appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			return nil, err
		}
		st = statefulSetStatus(&s)
	case "daemonsets":
		var d appsv1.DaemonSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			return nil, err
		}
		st = daemonSetStatus(&d)
	}
	return json.Marshal(st)
}

// deploymentStatus is kubectl's rollout status logic for Deployments.
func deploymentStatus(d *appsv1.Deployment) rolloutStatus {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := rolloutStatus{Generation: d.Generation, ObservedGeneration: d.Status.ObservedGeneration, Desired: want,
		Updated: d.Status.UpdatedReplicas, Ready: d.Status.ReadyReplicas, Available: d.Status.AvailableReplicas}
	name := strconv.Quote(d.Name)
	if d.Generation > d.Status.ObservedGeneration {
		st.Message = "waiting for the deployment spec update to be observed"
		return st
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			st.Failed = true
			st.Message = fmt.Sprintf("deployment %s exceeded its progress deadline: %s", name, c.Message)
			return st
		}
	}
	switch {
	case d.Status.UpdatedReplicas < want:
		st.Message = fmt.Sprintf("waiting for deployment %s rollout to finish: %d of %d new replicas have been updated", name, d.Status.UpdatedReplicas, want)
	case d.Status.Replicas > d.Status.UpdatedReplicas:
		st.Message = fmt.Sprintf("waiting for deployment %s rollout to finish: %d old replicas are pending termination", name, d.Status.Replicas-d.Status.UpdatedReplicas)
	case d.Status.AvailableReplicas < d.Status.UpdatedReplicas:
		st.Message = fmt.Sprintf("waiting for deployment %s rollout to finish: %d of %d updated replicas are available", name, d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
	default:
		st.Done = true
		st.Message = fmt.Sprintf("deployment %s successfully rolled out", name)
	}
	return st
}

func statefulSetStatus(s *appsv1.StatefulSet) rolloutStatus {
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	st := rolloutStatus{Generation: s.Generation, ObservedGeneration: s.Status.ObservedGeneration, Desired: want,
		Updated: s.Status.UpdatedReplicas, Ready: s.Status.ReadyReplicas, Available: s.Status.AvailableReplicas}
	partitioned := s.Spec.UpdateStrategy.RollingUpdate != nil && s.Spec.UpdateStrategy.RollingUpdate.Partition != nil
	switch {
	case s.Spec.UpdateStrategy.Type != "" && s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType:
		st.Failed = true
		st.Message = "rollout status is only available for the RollingUpdate strategy: this statefulset updates its pods OnDelete"
	case s.Status.ObservedGeneration == 0 || s.Generation > s.Status.ObservedGeneration:
		st.Message = "waiting for the statefulset spec update to be observed"
	case s.Status.ReadyReplicas < want:
		st.Message = fmt.Sprintf("waiting for %d pods to be ready", want-s.Status.ReadyReplicas)
	case partitioned:
		// kubectl: done once the pods at or above the partition run the
		// update revision.
		if p := *s.Spec.UpdateStrategy.RollingUpdate.Partition; s.Status.UpdatedReplicas < want-p {
			st.Message = fmt.Sprintf("waiting for partitioned roll out to finish: %d out of %d new pods have been updated", s.Status.UpdatedReplicas, want-p)
		} else {
			st.Done = true
			st.Message = fmt.Sprintf("partitioned roll out complete: %d new pods have been updated", s.Status.UpdatedReplicas)
		}
	case s.Status.UpdateRevision != s.Status.CurrentRevision:
		st.Message = fmt.Sprintf("waiting for statefulset rolling update to complete: %d pods at revision %s", s.Status.UpdatedReplicas, s.Status.UpdateRevision)
	default:
		st.Done = true
		st.Message = fmt.Sprintf("statefulset rolling update complete: %d pods at revision %s", s.Status.CurrentReplicas, s.Status.CurrentRevision)
	}
	return st
}

func daemonSetStatus(d *appsv1.DaemonSet) rolloutStatus {
	st := rolloutStatus{Generation: d.Generation, ObservedGeneration: d.Status.ObservedGeneration, Desired: d.Status.DesiredNumberScheduled,
		Updated: d.Status.UpdatedNumberScheduled, Ready: d.Status.NumberReady, Available: d.Status.NumberAvailable}
	switch {
	case d.Spec.UpdateStrategy.Type != "" && d.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType:
		st.Failed = true
		st.Message = "rollout status is only available for the RollingUpdate strategy: this daemon set updates its pods OnDelete"
	case d.Generation > d.Status.ObservedGeneration:
		st.Message = "waiting for the daemon set spec update to be observed"
	case d.Status.UpdatedNumberScheduled < d.Status.DesiredNumberScheduled:
		st.Message = fmt.Sprintf("waiting for daemon set %q rollout to finish: %d of %d updated pods are scheduled", d.Name, d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled)
	case d.Status.NumberAvailable < d.Status.DesiredNumberScheduled:
		st.Message = fmt.Sprintf("waiting for daemon set %q rollout to finish: %d of %d updated pods are available", d.Name, d.Status.NumberAvailable, d.Status.DesiredNumberScheduled)
	default:
		st.Done = true
		st.Message = fmt.Sprintf("daemon set %q successfully rolled out", d.Name)
	}
	return st
}

// revision is one entry of rollout.history.
type revision struct {
	Revision    int64    `json:"revision"`
	ReplicaSet  string   `json:"replicaSet"`
	Images      []string `json:"images"`
	ChangeCause string   `json:"changeCause,omitempty"`
	Created     string   `json:"created"`
	Current     bool     `json:"current"`
	template    map[string]any
}

// revisions lists a Deployment's ReplicaSets by revision, oldest first.
func (a *Adapter) revisions(ctx context.Context, ns, name string) (*appsv1.Deployment, []revision, error) {
	u, err := a.dyn.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, wrapError(err)
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		return nil, nil, err
	}
	rsList, err := a.dyn.Resource(appsv1.SchemeGroupVersion.WithResource("replicasets")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, wrapError(err)
	}
	current := d.Annotations[revisionAnnotation]
	var out []revision
	for _, item := range rsList.Items {
		if !ownedBy(item.GetOwnerReferences(), d.UID) {
			continue
		}
		var rs appsv1.ReplicaSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &rs); err != nil {
			continue
		}
		n, err := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
		if err != nil {
			continue
		}
		rev := revision{Revision: n, ReplicaSet: rs.Name, Images: []string{}, ChangeCause: rs.Annotations["kubernetes.io/change-cause"],
			Created: rs.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"), Current: rs.Annotations[revisionAnnotation] == current}
		for _, c := range rs.Spec.Template.Spec.Containers {
			rev.Images = append(rev.Images, c.Image)
		}
		rev.template, _, _ = unstructured.NestedMap(item.Object, "spec", "template")
		out = append(out, rev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return &d, out, nil
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller && r.UID == uid {
			return true
		}
	}
	return false
}

func (a *Adapter) rolloutHistory(ctx context.Context, _ *resource, raw json.RawMessage) (json.RawMessage, error) {
	args, err := a.target(raw)
	if err != nil {
		return nil, err
	}
	_, revs, err := a.revisions(ctx, args.Namespace, args.Name)
	if err != nil {
		return nil, err
	}
	if revs == nil {
		revs = []revision{}
	}
	return json.Marshal(revs)
}

// undoPatch sets w's patch to put back the template of the revision to
// roll back to: toRevision, or the one before the current.
func (a *Adapter) undoPatch(ctx context.Context, w *write) error {
	d, revs, err := a.revisions(ctx, w.ns, w.name)
	if err != nil {
		return err
	}
	if d.Spec.Paused {
		return &catalog.CallError{Status: http.StatusConflict, Reason: "Conflict", Message: fmt.Sprintf("deployment %q is paused: resume it (patch spec.paused: false) before rolling back", w.name)}
	}
	cur, _ := strconv.ParseInt(d.Annotations[revisionAnnotation], 10, 64)
	var target *revision
	for i := range revs {
		r := &revs[i]
		if w.args.ToRevision > 0 && r.Revision == w.args.ToRevision || w.args.ToRevision == 0 && r.Revision < cur {
			target = r
		}
	}
	if target == nil {
		if w.args.ToRevision > 0 {
			return &catalog.CallError{Status: http.StatusNotFound, Reason: "NotFound", Message: fmt.Sprintf("deployment %q has no revision %d: see rollout.history", w.name, w.args.ToRevision)}
		}
		return &catalog.CallError{Status: http.StatusBadRequest, Reason: "BadRequest", Message: fmt.Sprintf("deployment %q has no revision before %d to roll back to", w.name, cur)}
	}
	tmpl := target.template
	unstructured.RemoveNestedField(tmpl, "metadata", "labels", "pod-template-hash")
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template", "value": tmpl}})
	if err != nil {
		return err
	}
	w.patch = patch
	w.restores = fmt.Sprintf("revision %d of %s/%s", target.Revision, w.ns, w.name)
	return nil
}
