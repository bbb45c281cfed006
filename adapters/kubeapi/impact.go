package kubeapi

import (
	"encoding/json"
	"fmt"
	"github.com/kubecode/kubecode/catalog"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Workloads are the kinds that run pods from a template.
var Workloads = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true}

// PodImpact says what going from before (the cluster's copy) to after (as
// the dry run leaves it; nil when deleted) does to the pods of workload
// obj ("ns/name"): "rolls 3 pods of ns/web", "stops 1 of the 4 pods of
// ns/web", "starts 2 more pods of ns/web", "stops all 3 pods of ns/web".
// Empty for an object that runs no pods from a template, or a change
// that touches none. rolls says the pod template changed; pods counts
// the pods replaced, stopped and started. kept are pods that already run
// the new template (a rollback to a revision whose pods still run): they
// are not replaced.
func PodImpact(before, after *unstructured.Unstructured, obj string, kept int64) (impact string, rolls bool, pods catalog.Pods) {
	if before == nil || !Workloads[before.GetKind()] && before.GetKind() != "Scale" {
		return "", false, pods
	}
	was := Replicas(before)
	if after == nil {
		if before.GetKind() == "DaemonSet" {
			was, _, _ = unstructured.NestedInt64(before.Object, "status", "desiredNumberScheduled")
		}
		if was > 0 {
			return "stops " + AllPods(was) + " of " + obj, false, catalog.Pods{Stopped: was}
		}
		return "", false, pods
	}
	now := Replicas(after)
	t0, _, _ := unstructured.NestedMap(before.Object, "spec", "template")
	t1, _, _ := unstructured.NestedMap(after.Object, "spec", "template")
	if t0 != nil && t1 != nil && !reflect.DeepEqual(t0, t1) {
		rolls = true
		// The pods that run now are replaced, as many as stay: a
		// Deployment whose status says it runs none has none to roll.
		running := was
		if st, ok := before.Object["status"].(map[string]any); ok && st["observedGeneration"] != nil {
			running, _, _ = unstructured.NestedInt64(st, "replicas")
		}
		kept = min(kept, running, now)
		n := min(running, now)
		if kept > 0 { // every pod not on the new template goes, surge pods too
			n = running - kept
		}
		if n > 0 {
			impact, pods.Rolled = fmt.Sprintf("rolls %s of %s", Pods(n), obj), n
			if kept > 0 {
				impact += fmt.Sprintf(" (%d already run%s its new template and stay%s)", kept, map[bool]string{true: "s", false: ""}[kept == 1], map[bool]string{true: "s", false: ""}[kept == 1])
			}
		} else if kept > 0 {
			impact = fmt.Sprintf("replaces no pod of %s: the %s running its new template stay", obj, Pods(kept))
		}
		if before.GetKind() == "DaemonSet" {
			n, _, _ := unstructured.NestedInt64(before.Object, "status", "desiredNumberScheduled")
			impact, pods.Rolled = fmt.Sprintf("rolls %s of %s (one per node)", Pods(n), obj), n
		}
	}
	switch {
	case now < was && now == 0:
		impact, pods.Stopped = joinImpact(impact, "stops "+AllPods(was)+" of "+obj), was
	case now < was:
		impact, pods.Stopped = joinImpact(impact, fmt.Sprintf("stops %d of the %s of %s", was-now, Pods(was), obj)), was-now
	case now > was:
		impact, pods.Started = joinImpact(impact, fmt.Sprintf("starts %d more %s of %s", now-was, plural("pod", now-was), obj)), now-was
	}
	return impact, rolls, pods
}

func joinImpact(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Replicas is spec.replicas of a workload or Scale (1 when unset, as the
// API defaults it); 0 for a DaemonSet.
func Replicas(o *unstructured.Unstructured) int64 {
	n, found := Int(o.Object, "spec", "replicas")
	if !found {
		switch o.GetKind() {
		case "DaemonSet", "Scale": // a Scale leaves out a zero
			return 0
		}
		return 1
	}
	return n
}

// Pods says "1 pod", "3 pods".
func Pods(n int64) string { return fmt.Sprintf("%d %s", n, plural("pod", n)) }

// AllPods says "the only pod", "all 3 pods".
func AllPods(n int64) string {
	if n == 1 {
		return "the only pod"
	}
	return "all " + Pods(n)
}

func plural(word string, n int64) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Int reads an integer field of an object as the API server sends it
// (int64) or as a manifest decodes (float64, json.Number); found is false
// when it is absent or no number.
func Int(obj map[string]any, fields ...string) (int64, bool) {
	v, found, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	if !found {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}
