package kubernetes

import (
	"context"
	"fmt"
	"reflect"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	pdbGVR        = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	servicesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// workloads are the kinds that run pods from a template.
var workloads = kubeapi.Workloads

// assess fills what a change does to running workloads (Impact), the
// PodDisruptionBudget it would break (Budget) and what a path-aware
// review flags (Signals), from the object before the call and as the dry
// run left it. Reads that fail leave the assessment out: it informs, the
// dry run decides.
func (a *Adapter) assess(ctx context.Context, w *write, c *catalog.Change, before, after *unstructured.Unstructured) {
	obj := c.Namespace + "/" + c.Name
	group := w.r.gvr.Group
	switch {
	case group == "apps" && workloads[c.Kind]:
		a.assessWorkload(ctx, w, c, before, after, obj)
	case group == "" && c.Kind == "Pod" && w.verb == "delete" && before != nil:
		owner := controllerOf(before)
		if owner == "" {
			c.Impact, c.Pods = "stops pod "+obj+": no controller recreates it", catalog.Pods{Stopped: 1}
		} else {
			c.Impact, c.Pods = "restarts pod "+obj+" ("+owner+" recreates it)", catalog.Pods{Rolled: 1}
			c.Signals = append(c.Signals, catalog.Signal{Name: kubeapi.SignalOwnedPodDelete,
				Detail: fmt.Sprintf("pod %s is owned by %s, which recreates it: to restart a workload use its rollout.restart", obj, owner)})
			if podReady(before) {
				c.Signals = append(c.Signals, catalog.Signal{Name: kubeapi.SignalHealthyRestart, Detail: "pod " + obj + " was ready"})
			}
		}
		c.Budget = a.budget(ctx, c.Namespace, before.GetLabels(), 1)
	case group == "" && c.Kind == "Service" && w.verb == "create" && after != nil:
		sel, _, _ := unstructured.NestedStringMap(after.Object, "spec", "selector")
		if len(sel) == 0 {
			return
		}
		list, err := a.dyn.Resource(servicesGVR).Namespace(c.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, s := range list.Items {
			other, _, _ := unstructured.NestedStringMap(s.Object, "spec", "selector")
			if s.GetName() != c.Name && reflect.DeepEqual(other, sel) {
				c.Signals = append(c.Signals, catalog.Signal{Name: kubeapi.SignalDuplicate,
					Detail: fmt.Sprintf("Service %s/%s already selects the same pods (%s): fix that Service instead of adding another", c.Namespace, s.GetName(), labels.SelectorFromSet(sel))})
				return
			}
		}
	}
}

func (a *Adapter) assessWorkload(ctx context.Context, w *write, c *catalog.Change, before, after *unstructured.Unstructured, obj string) {
	if w.verb == "create" && after != nil && c.Kind == "Deployment" {
		sel, _, _ := unstructured.NestedStringMap(after.Object, "spec", "selector", "matchLabels")
		if list, err := a.dyn.Resource(deploymentGVR).Namespace(c.Namespace).List(ctx, metav1.ListOptions{}); err == nil && len(sel) > 0 {
			for _, d := range list.Items {
				other, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
				if d.GetName() != c.Name && reflect.DeepEqual(other, sel) {
					c.Signals = append(c.Signals, catalog.Signal{Name: kubeapi.SignalDuplicate,
						Detail: fmt.Sprintf("Deployment %s/%s already runs the same pods (%s): change it instead of adding another", c.Namespace, d.GetName(), labels.SelectorFromSet(sel))})
					break
				}
			}
		}
		return
	}
	if before == nil {
		return
	}
	if w.verb == "delete" {
		c.Impact, _, c.Pods = kubeapi.PodImpact(before, nil, obj, 0)
		return
	}
	if after == nil {
		return
	}
	impact, rolls, pods := kubeapi.PodImpact(before, after, obj, a.keptPods(ctx, before, after))
	c.Impact, c.Pods = impact, pods
	was, now := replicasOf(before), replicasOf(after)
	if rolls && w.verb != "scale" {
		t0, _, _ := unstructured.NestedMap(before.Object, "spec", "template")
		t1, _, _ := unstructured.NestedMap(after.Object, "spec", "template")
		// A change of the template's metadata alone (an annotation)
		// rolls every pod exactly as a restart does: the same signal.
		metaOnly := reflect.DeepEqual(t0["spec"], t1["spec"])
		if (w.verb == "rollout.restart" || w.verb == "rollout.undo" || metaOnly) && healthy(before) {
			detail := fmt.Sprintf("%s %s had all %d pods ready and up to date", c.Kind, obj, was)
			if metaOnly && w.verb != "rollout.restart" {
				detail += "; this changes only the pod template's metadata, which rolls every pod as a restart does"
			}
			c.Signals = append(c.Signals, catalog.Signal{Name: kubeapi.SignalHealthyRestart, Detail: detail})
		}
	}
	if now < was && now == 0 {
		c.Signals = append(c.Signals, catalog.Signal{Name: kubeapi.SignalScaleToZero, Detail: fmt.Sprintf("%s %s scaled from %d to 0: it serves nothing", c.Kind, obj, was)})
	}
	if now < was {
		sel, _, _ := unstructured.NestedStringMap(before.Object, "spec", "template", "metadata", "labels")
		if w.verb == "scale" { // a Scale names its pods by selector
			sel = selectorLabels(before)
		}
		c.Budget = a.budget(ctx, c.Namespace, sel, int(was-now))
	}
}

// replicasOf is spec.replicas of a workload or Scale (kubeapi.Replicas).
func replicasOf(o *unstructured.Unstructured) int64 { return kubeapi.Replicas(o) }

// selectorLabels reads a Scale's status.selector ("app=web,tier=x").
func selectorLabels(scale *unstructured.Unstructured) map[string]string {
	s, _, _ := unstructured.NestedString(scale.Object, "status", "selector")
	set, err := labels.ConvertSelectorToLabelsMap(s)
	if err != nil {
		return nil
	}
	return set
}

// healthy says whether a workload's pods are all ready and up to date.
func healthy(o *unstructured.Unstructured) bool {
	st := func(f string) int64 { n, _, _ := unstructured.NestedInt64(o.Object, "status", f); return n }
	want := replicasOf(o)
	switch o.GetKind() {
	case "DaemonSet":
		d := st("desiredNumberScheduled")
		return d > 0 && st("numberReady") == d && st("updatedNumberScheduled") == d
	case "StatefulSet":
		return want > 0 && st("readyReplicas") == want && st("updatedReplicas") == want
	default:
		return want > 0 && st("readyReplicas") == want && st("updatedReplicas") == want && st("availableReplicas") == want && st("unavailableReplicas") == 0
	}
}

// controllerOf names a pod's controller ("ReplicaSet shop/web-5d8f"), or
// "" when it has none.
func controllerOf(o *unstructured.Unstructured) string {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind + " " + o.GetNamespace() + "/" + ref.Name
		}
	}
	return ""
}

func podReady(o *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// budget says which PodDisruptionBudget of namespace ns covering pods
// with podLabels allows fewer than n disruptions now, or "".
func (a *Adapter) budget(ctx context.Context, ns string, podLabels map[string]string, n int) string {
	if len(podLabels) == 0 {
		return ""
	}
	list, err := a.dyn.Resource(pdbGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, p := range list.Items {
		raw, found, _ := unstructured.NestedMap(p.Object, "spec", "selector")
		if !found {
			continue
		}
		var ls metav1.LabelSelector
		if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls) != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(podLabels)) {
			continue
		}
		allowed, _, _ := unstructured.NestedInt64(p.Object, "status", "disruptionsAllowed")
		if int(allowed) < n {
			healthy, _, _ := unstructured.NestedInt64(p.Object, "status", "currentHealthy")
			desired, _, _ := unstructured.NestedInt64(p.Object, "status", "desiredHealthy")
			return fmt.Sprintf("PodDisruptionBudget %s/%s allows %d disruptions now (%d healthy, %d needed) and this change disrupts %d", ns, p.GetName(), allowed, healthy, desired, n)
		}
	}
	return ""
}

// join2 joins two clauses of a line with "; ", either of which may be
// empty.
func join2(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

var replicaSetGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}

// keptPods counts the pods of Deployment before that already run after's
// pod template (a ReplicaSet of the Deployment has it): a rollback to a
// revision whose pods still run keeps them. 0 for other kinds, or when
// the ReplicaSets cannot be read.
func (a *Adapter) keptPods(ctx context.Context, before, after *unstructured.Unstructured) int64 {
	if before == nil || after == nil || before.GetKind() != "Deployment" {
		return 0
	}
	want, _, _ := unstructured.NestedMap(after.Object, "spec", "template")
	if want == nil {
		return 0
	}
	list, err := a.dyn.Resource(replicaSetGVR).Namespace(before.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	for _, rs := range list.Items {
		owned := false
		for _, ref := range rs.GetOwnerReferences() {
			owned = owned || ref.UID == before.GetUID()
		}
		if !owned {
			continue
		}
		tmpl, _, _ := unstructured.NestedMap(rs.Object, "spec", "template")
		// The controller labels the template with its hash.
		unstructured.RemoveNestedField(tmpl, "metadata", "labels", "pod-template-hash")
		if l, ok, _ := unstructured.NestedMap(tmpl, "metadata", "labels"); ok && len(l) == 0 {
			unstructured.RemoveNestedField(tmpl, "metadata", "labels")
		}
		if reflect.DeepEqual(kubeapi.Trim(tmpl), kubeapi.Trim(want)) {
			n, _, _ := unstructured.NestedInt64(rs.Object, "status", "readyReplicas")
			return n
		}
	}
	return 0
}

// Signals are the signals the adapter's changes raise (bridge.Signaler).
func (a *Adapter) Signals() []catalog.SignalKind { return kubeapi.Signals }
