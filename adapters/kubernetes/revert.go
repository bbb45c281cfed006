package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
)

// Snapshot reads the object op's change c touches, as a revert needs it:
// its content (no status, no server-set metadata), or for a Secret only
// whether it exists and its UID.
func (a *Adapter) Snapshot(ctx context.Context, op string, c *catalog.Change, result json.RawMessage) (*catalog.Snapshot, error) {
	r, verb, err := a.resolve(op)
	if err != nil {
		return nil, err
	}
	switch verb {
	case "exec":
		return nil, catalog.Irreversible("the command run in " + c.Object() + " is not undone: kubecode cannot know what it changed")
	case "evict":
		return nil, catalog.Irreversible("the eviction of " + c.Object() + " is not undone: its controller made a new pod (a pod no controller owned is gone)")
	}
	snap := &catalog.Snapshot{Op: op, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
	if strings.HasSuffix(snap.Name, "*") { // generateName: the result names it
		var made struct {
			Metadata struct{ Name, Namespace string } `json:"metadata"`
		}
		if json.Unmarshal(result, &made) != nil || made.Metadata.Name == "" {
			return nil, fmt.Errorf("the result of %s names no object", op)
		}
		snap.Name = made.Metadata.Name
	}
	obj, err := a.client(r, snap.Namespace).Get(ctx, snap.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return snap, nil
	}
	if err != nil {
		return nil, wrapError(err)
	}
	snap.Exists, snap.UID = true, string(obj.GetUID())
	if c.Sensitive {
		return snap, nil // a Secret's values are never recorded
	}
	snap.Content, err = json.Marshal(content(obj))
	return snap, err
}

// controllerAnnotations are set by controllers, not by whoever changes
// the object: a revert neither restores nor compares them.
var controllerAnnotations = []string{"deployment.kubernetes.io/revision", "kubectl.kubernetes.io/restartedAt"}

// content is what a revert restores of an object: everything but its
// status and the metadata the server and controllers set.
func content(obj *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range obj.Object {
		if k != "status" && k != "metadata" {
			out[k] = v
		}
	}
	md := map[string]any{"name": obj.GetName()}
	if ns := obj.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	if l := obj.GetLabels(); len(l) > 0 {
		md["labels"] = l
	}
	ann := obj.GetAnnotations()
	for _, k := range controllerAnnotations {
		delete(ann, k)
	}
	if len(ann) > 0 {
		md["annotations"] = ann
	}
	out["metadata"] = md
	return out
}

// Restore returns the call that brings an object from after back to
// before: a delete of what the execution created, a create of what it
// deleted, a patch of what it changed — each only if the object is still
// as the execution left it.
func (a *Adapter) Restore(ctx context.Context, before, after *catalog.Snapshot) (string, json.RawMessage, error) {
	r, verb, err := a.resolve(before.Op)
	if err != nil {
		return "", nil, err
	}
	switch verb {
	case "exec":
		return "", nil, fmt.Errorf("a command run in a container is not undone: kubecode cannot know what it changed; left alone")
	case "evict":
		return "", nil, fmt.Errorf("an eviction is not undone: the pod's controller made a new one (a pod no controller owned is gone); left alone")
	}
	live, err := a.client(r, before.Namespace).Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", nil, wrapError(err)
	}
	exists := err == nil
	op := func(verb string) string { return "kubernetes." + r.seg + "." + verb }
	target := map[string]any{"name": before.Name}
	if before.Namespace != "" {
		target["namespace"] = before.Namespace
	}
	call := func(verb string, extra map[string]any) (string, json.RawMessage, error) {
		for k, v := range extra {
			target[k] = v
		}
		raw, err := json.Marshal(target)
		return op(verb), raw, err
	}
	switch {
	case !before.Exists && !after.Exists:
		return "", nil, catalog.ErrNothingToRevert
	case !before.Exists: // created: delete it, if it is the one created
		if !exists {
			return "", nil, catalog.ErrNothingToRevert
		}
		if string(live.GetUID()) != after.UID {
			return "", nil, fmt.Errorf("conflict: it was deleted and made again since the execution; left alone")
		}
		return call("delete", nil)
	case !after.Exists: // deleted: make it again from what it was
		if exists {
			return "", nil, fmt.Errorf("conflict: an object of its name exists again; left alone")
		}
		if before.Content == nil {
			return "", nil, fmt.Errorf("cannot re-create it: its values are secret and were never recorded")
		}
		var obj map[string]any
		if err := json.Unmarshal(before.Content, &obj); err != nil {
			return "", nil, err
		}
		forRecreate(r, obj)
		delete(target, "name")
		return call("create", map[string]any{"object": obj})
	}
	if !exists {
		return "", nil, fmt.Errorf("conflict: it was deleted since the execution; left alone")
	}
	if before.Content == nil || after.Content == nil {
		return "", nil, fmt.Errorf("cannot restore it: its values are secret and were never recorded")
	}
	var was, left map[string]any
	if err := json.Unmarshal(before.Content, &was); err != nil {
		return "", nil, err
	}
	if err := json.Unmarshal(after.Content, &left); err != nil {
		return "", nil, err
	}
	now := content(live)
	if moved := differing(left, now); len(moved) > 0 {
		return "", nil, fmt.Errorf("conflict: changed since the execution (%s); left alone", strings.Join(moved, ", "))
	}
	if reflect.DeepEqual(was, left) {
		return "", nil, catalog.ErrNothingToRevert
	}
	from, _ := json.Marshal(left)
	to, _ := json.Marshal(was)
	typ := "merge"
	var patch []byte
	if typed, err := scheme.Scheme.New(live.GroupVersionKind()); err == nil && builtinGroup(r.gvr.Group) {
		typ = "strategic"
		patch, err = strategicpatch.CreateTwoWayMergePatch(from, to, typed)
		if err != nil {
			return "", nil, err
		}
	} else if patch, err = jsonmergepatch.CreateThreeWayJSONMergePatch(from, to, from); err != nil {
		return "", nil, err
	}
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return "", nil, err
	}
	if len(p) == 0 {
		return "", nil, catalog.ErrNothingToRevert
	}
	return call("patch", map[string]any{"patch": p, "type": typ})
}

// serverSelected are the labels the API server sets on a Job and its pod
// template to select them: a Job made again gets new ones.
var serverSelected = []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"}

// forRecreate readies a deleted object's content to be made again, as
// kubectl replace --force would: a Job's server-set selector and the
// labels that carry its old uid go (unless the Job chose its selector).
func forRecreate(r *resource, obj map[string]any) {
	if r.gvr.Group != "batch" || r.kind != "Job" {
		return
	}
	if manual, _, _ := unstructured.NestedBool(obj, "spec", "manualSelector"); manual {
		return
	}
	unstructured.RemoveNestedField(obj, "spec", "selector")
	for _, path := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
		labels, ok, _ := unstructured.NestedStringMap(obj, path...)
		if !ok {
			continue
		}
		for _, k := range serverSelected {
			delete(labels, k)
		}
		if len(labels) == 0 {
			unstructured.RemoveNestedField(obj, path...)
		} else {
			_ = unstructured.SetNestedStringMap(obj, labels, path...)
		}
	}
}

// differing lists the fields (kubeapi.Diff's paths) in which b differs
// from a, what the cluster keeps for itself left out (kubeapi.Trim).
func differing(a, b map[string]any) []string {
	var out []string
	for _, d := range kubeapi.Diff(kubeapi.Normalize(kubeapi.Trim(a)), kubeapi.Normalize(kubeapi.Trim(b))) {
		out = append(out, d.Path)
	}
	return out
}
