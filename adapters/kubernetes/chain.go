package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/kubecode/kubecode/catalog"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
)

// standIn is the namespace an object is dry-run in when the namespace it
// names does not exist yet because the same plan creates it: the API
// server validates it there (schema, defaults, admission) as it would in
// its own.
const standIn = "default"

// prediction is what a plan's earlier changes would leave of an object.
type prediction struct {
	obj     *unstructured.Unstructured // nil when gone
	created bool                       // the plan creates it: it does not exist yet
}

func (a *Adapter) predictionKey(gvr schema.GroupVersionResource, ns, name string) string {
	return fmt.Sprintf("kubernetes %p %s/%s %s/%s", a, gvr.Group, gvr.Resource, ns, name)
}

// predicted returns what the plan so far would leave of an object: ok is
// false when the plan has not changed it (or there is no plan).
func (a *Adapter) predicted(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (obj *unstructured.Unstructured, gone, ok bool) {
	st := catalog.PlanStateFrom(ctx)
	if st == nil || name == "" {
		return nil, false, false
	}
	v, ok := st.Get(a.predictionKey(gvr, ns, name))
	if !ok {
		return nil, false, false
	}
	p := v.(prediction)
	if p.obj == nil {
		return nil, true, true
	}
	return p.obj.DeepCopy(), false, true
}

// newNamespace says whether the plan so far creates namespace ns.
func (a *Adapter) newNamespace(ctx context.Context, ns string) bool {
	st := catalog.PlanStateFrom(ctx)
	if st == nil || ns == "" {
		return false
	}
	v, ok := st.Get(a.predictionKey(namespaceGVR, "", ns))
	return ok && v.(prediction).created && v.(prediction).obj != nil
}

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// planned reads the object a change targets as the plan so far leaves it:
// fromPlan says it came from the plan, not the cluster.
func (a *Adapter) planned(ctx context.Context, w *write) (before *unstructured.Unstructured, fromPlan bool, err error) {
	obj, gone, ok := a.predicted(ctx, w.r.gvr, w.ns, w.name)
	switch {
	case !ok && a.newNamespace(ctx, w.ns):
		// Nothing is in a namespace the plan creates.
		if w.verb == "create" || w.verb == "apply" {
			return nil, false, nil
		}
		return nil, false, &catalog.CallError{Status: http.StatusNotFound, Reason: "NotFound",
			Message: fmt.Sprintf("%s %q not found: namespace %s is created by this plan and holds nothing yet", w.r.kind, w.name, w.ns)}
	case !ok:
		before, err = a.current(ctx, w)
		return before, false, err
	case gone && (w.verb == "create" || w.verb == "apply"):
		return nil, false, nil
	case !gone && w.verb == "create":
		return nil, false, &catalog.CallError{Status: http.StatusConflict, Reason: "AlreadyExists",
			Message: fmt.Sprintf("%s %q already exists: this plan creates or changes it earlier", w.r.kind, w.name)}
	case gone:
		return nil, false, &catalog.CallError{Status: http.StatusNotFound, Reason: "NotFound",
			Message: fmt.Sprintf("%s %q is deleted earlier in this plan", w.r.kind, w.name)}
	}
	return obj, true, nil
}

// dryRun runs w as a dry run on top of the plan so far: before came from
// the plan (fromPlan) or the cluster. A change of an object the plan
// changed before is applied to the predicted object here and the result
// dry-run as an update (or a create, when the plan creates the object);
// an object in a namespace the plan creates is dry-run in the stand-in
// namespace. validated says how, when not by the object's own dry run.
func (a *Adapter) dryRun(ctx context.Context, w *write, before *unstructured.Unstructured, fromPlan bool) (after *unstructured.Unstructured, validated string, err error) {
	newNS := w.r.namespaced && a.newNamespace(ctx, w.ns)
	if _, gone, ok := a.predicted(ctx, w.r.gvr, w.ns, w.name); ok && gone && !newNS && (w.verb == "create" || w.verb == "apply") {
		return a.recreate(ctx, w)
	}
	if !fromPlan && !newNS || w.verb == "delete" && fromPlan && !wasCreated(ctx, a, w) {
		after, err = a.do(ctx, w, true)
		return after, "", err
	}
	if w.verb == "delete" {
		return &unstructured.Unstructured{Object: map[string]any{"kind": w.r.kind, "name": w.name, "namespace": w.ns, "deleted": true, "dryRun": true}},
			"deletes what this plan creates", nil
	}
	obj := w.obj
	if fromPlan {
		if obj, err = patched(before, w); err != nil {
			return nil, "", err
		}
	}
	obj = obj.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	delete(obj.Object, "status")
	ns := w.ns
	if newNS {
		ns = standIn
		obj.SetNamespace(standIn)
		validated = fmt.Sprintf("validated in namespace %s: namespace %s is created by this plan, before this change", standIn, w.ns)
	}
	c := a.client(w.r, ns)
	dry := []string{metav1.DryRunAll}
	if fromPlan && !wasCreated(ctx, a, w) {
		live, gerr := c.Get(ctx, w.name, metav1.GetOptions{})
		if gerr != nil {
			return nil, "", wrapError(gerr)
		}
		obj.SetResourceVersion(live.GetResourceVersion())
		after, err = c.Update(ctx, obj, metav1.UpdateOptions{DryRun: dry, FieldManager: FieldManager})
		validated = join2(validated, "previewed on top of this plan's earlier change of it")
	} else {
		after, err = c.Create(ctx, obj, metav1.CreateOptions{DryRun: dry, FieldManager: FieldManager})
		if fromPlan {
			validated = join2(validated, "previewed on top of this plan's creation of it")
		}
		if newNS && apierrors.IsAlreadyExists(err) {
			// The stand-in has an object of that name: the server
			// validates before it stores, so the object passed.
			after, err = obj, nil
		}
	}
	if err != nil {
		return nil, "", wrapError(err)
	}
	if newNS {
		after.SetNamespace(w.ns)
	}
	return after, validated, nil
}

// recreate dry-runs the create of an object an earlier change of the
// plan deletes (a claim deleted and made again with an immutable field
// changed): the cluster still holds the old one, so the server validates
// the new one under a generated name (schema, defaults, admission), and
// the preview shows it under its own.
func (a *Adapter) recreate(ctx context.Context, w *write) (*unstructured.Unstructured, string, error) {
	obj := w.obj.DeepCopy()
	if fixedNames[w.r.kind] {
		// Its name is part of what it is (plural.group): no other name
		// passes, so the server cannot check it before the delete.
		return obj, fmt.Sprintf("not checked by the API server: %s %q is deleted earlier in this plan, and a %s's name is fixed by its spec", w.r.kind, w.name, w.r.kind), nil
	}
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	delete(obj.Object, "status")
	prefix := w.name
	if len(prefix) > 50 {
		prefix = prefix[:50]
	}
	obj.SetName("")
	obj.SetGenerateName(prefix + "-")
	after, err := a.client(w.r, w.ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager})
	if err != nil {
		return nil, "", wrapError(err)
	}
	after.SetName(w.name)
	after.SetGenerateName(w.obj.GetGenerateName())
	return after, fmt.Sprintf("validated under a generated name: %s %q is deleted earlier in this plan, and this makes it again", w.r.kind, w.name), nil
}

// fixedNames are the kinds whose name the API server derives from their
// spec: no generated name is valid for them.
var fixedNames = map[string]bool{"CustomResourceDefinition": true, "APIService": true}

// goneWait bounds how long a create waits for an object of its name to go.
const goneWait = 60 * time.Second

// awaitGone waits until the object w creates again (before, being
// deleted) is gone, up to goneWait, and returns what is there then: nil,
// or an error saying what holds it.
func (a *Adapter) awaitGone(ctx context.Context, w *write, before *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	c := a.client(w.r, w.ns)
	deadline := time.Now().Add(goneWait)
	for {
		cur, err := c.Get(ctx, w.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, wrapError(err)
		}
		if cur.GetDeletionTimestamp() == nil {
			return cur, nil // made again by someone else
		}
		if time.Now().After(deadline) {
			return nil, &catalog.CallError{Status: http.StatusConflict, Reason: "AlreadyExists",
				Message: fmt.Sprintf("%s %q is still being deleted after %s (finalizers: %v): try again when it is gone", w.r.kind, w.name, goneWait, cur.GetFinalizers())}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func wasCreated(ctx context.Context, a *Adapter, w *write) bool {
	st := catalog.PlanStateFrom(ctx)
	if st == nil {
		return false
	}
	v, ok := st.Get(a.predictionKey(w.r.gvr, w.ns, w.name))
	return ok && v.(prediction).created
}

// predict records what w leaves of its object for the plan's later
// previews: after, or nothing for a delete.
func (a *Adapter) predict(ctx context.Context, w *write, before, after *unstructured.Unstructured, fromPlan bool) {
	st := catalog.PlanStateFrom(ctx)
	if st == nil || w.name == "" {
		return
	}
	key := a.predictionKey(w.r.gvr, w.ns, w.name)
	if w.verb == "delete" {
		st.Put(key, prediction{})
		return
	}
	created := before == nil || wasCreated(ctx, a, w)
	obj := after
	if w.verb == "scale" && !fromPlan {
		// A Scale is not the object: the workload with its new replicas.
		live, err := a.client(w.r, w.ns).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return
		}
		replicas, _, _ := unstructured.NestedInt64(after.Object, "spec", "replicas")
		_ = unstructured.SetNestedField(live.Object, replicas, "spec", "replicas")
		obj = live
	}
	st.Put(key, prediction{obj: obj.DeepCopy(), created: created})
}

// patched applies w's change to obj as the API server would: a patch by
// its type, a scale as spec.replicas, an apply as a merge of its manifest
// (server-side apply's ownership is not modelled: the approved run applies
// for real).
func patched(obj *unstructured.Unstructured, w *write) (*unstructured.Unstructured, error) {
	orig, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	var patch []byte
	ptype := w.ptype
	switch w.verb {
	case "apply", "create":
		if patch, err = json.Marshal(w.obj.Object); err != nil {
			return nil, err
		}
		ptype = types.MergePatchType
	case "scale":
		patch, ptype = w.patch, types.MergePatchType
	default:
		patch = w.patch
	}
	var out []byte
	switch ptype {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, badRequest("the json patch: %v", err)
		}
		out, err = p.Apply(orig)
		if err != nil {
			return nil, badRequest("the json patch does not apply to %s %q as this plan leaves it: %v", w.r.kind, w.name, err)
		}
	case types.StrategicMergePatchType:
		typed, terr := scheme.Scheme.New(obj.GroupVersionKind())
		if terr != nil {
			out, err = jsonpatch.MergePatch(orig, patch)
		} else {
			out, err = strategicpatch.StrategicMergePatch(orig, patch, typed)
		}
	default:
		out, err = jsonpatch.MergePatch(orig, patch)
	}
	if err != nil {
		return nil, badRequest("the patch does not apply to %s %q as this plan leaves it: %v", w.r.kind, w.name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
