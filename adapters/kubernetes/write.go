package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// FieldManager is the field manager of every change kubecode makes, so
// server-side apply and managedFields name it.
const FieldManager = "kubecode"

// writeVerbs are the verbs that change the cluster.
var writeVerbs = map[string]bool{
	"create": true, "run": true, "apply": true, "patch": true, "delete": true, "scale": true,
	"rollout.restart": true, "rollout.undo": true, "cordon": true, "uncordon": true,
}

// writeArgs holds the arguments of every mutating operation.
type writeArgs struct {
	Name               string          `json:"name"`
	Namespace          string          `json:"namespace"`
	Object             map[string]any  `json:"object"`   // create
	Manifest           map[string]any  `json:"manifest"` // apply
	Force              bool            `json:"force"`    // apply: take fields from other managers; delete: no grace
	Patch              json.RawMessage `json:"patch"`
	Type               string          `json:"type"` // patch: strategic, merge or json
	GracePeriodSeconds *int64          `json:"gracePeriodSeconds"`
	PropagationPolicy  string          `json:"propagationPolicy"`
	Replicas           *int64          `json:"replicas"`
	ToRevision         int64           `json:"toRevision"`
	// pods.run, as kubectl run takes them.
	Image         string            `json:"image"`
	Command       []string          `json:"command"`
	Args          []string          `json:"args"`
	Env           map[string]string `json:"env"`
	Labels        map[string]string `json:"labels"`
	RestartPolicy string            `json:"restartPolicy"`
}

// write is one decoded mutating call.
type write struct {
	r        *resource
	verb     string
	args     writeArgs
	ns       string
	name     string
	obj      *unstructured.Unstructured // create and apply
	patch    []byte
	ptype    types.PatchType
	paths    []string
	defType  bool   // the patch type was not given
	restores string // rollout.undo: the revision it brings back
}

// Preview runs the mutating operation name as a server-side dry run and
// says what it would change, with the object as it would be. Nothing is
// persisted. When the dry run fails after the target was read, the change
// comes back with the error, so that a policy can judge the attempt.
func (a *Adapter) Preview(ctx context.Context, name string, args json.RawMessage) (*catalog.Change, json.RawMessage, error) {
	if name == ApplyOp {
		return a.previewManifest(ctx, args)
	}
	r, verb, err := a.resolve(name)
	if err != nil {
		return nil, nil, err
	}
	switch verb {
	case "exec":
		return a.previewExec(ctx, args)
	case "evict":
		return a.previewEvict(ctx, args)
	case "drain":
		return a.previewDrain(ctx, args)
	}
	if !writeVerbs[verb] {
		return nil, nil, fmt.Errorf("%s does not change anything", name)
	}
	w, err := a.decodeWrite(r, verb, args)
	if err != nil {
		return nil, nil, err
	}
	c, after, err := a.previewWrite(ctx, w)
	if err != nil {
		return c, nil, err
	}
	out, err := json.Marshal(after.Object)
	return c, out, err
}

// previewWrite dry-runs one decoded change on top of the plan so far and
// describes it; the change comes back with the error when the dry run
// failed after the target was read.
func (a *Adapter) previewWrite(ctx context.Context, w *write) (*catalog.Change, *unstructured.Unstructured, error) {
	verb := w.verb
	before, fromPlan, err := a.planned(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	if (verb == "create" || verb == "apply") && !fromPlan && before != nil && before.GetDeletionTimestamp() != nil {
		// The object is going (a delete just made, finalizers at work): a
		// create of its name waits for it, as kubectl replace does.
		if before, err = a.awaitGone(ctx, w, before); err != nil {
			return nil, nil, err
		}
	}
	if err := restartable(w, before); err != nil {
		return nil, nil, err
	}
	if verb == "rollout.undo" {
		if err := a.undoPatch(ctx, w); err != nil {
			return nil, nil, err
		}
	}
	c := w.change(before != nil)
	if w.verb == "delete" && c.Kind == "PersistentVolumeClaim" && before != nil {
		// A claim bound to no volume holds no data: deleting it takes
		// nothing with it.
		if phase, _, _ := unstructured.NestedString(before.Object, "status", "phase"); phase != "Bound" {
			c.Protected = false
		}
	}
	if verb == "rollout.undo" { // the target revision comes from the cluster
		sum := sha256.Sum256(w.patch)
		c.Fingerprint = hex.EncodeToString(sum[:8])
	}
	after, validated, err := a.dryRun(ctx, w, before, fromPlan)
	if err != nil {
		if before != nil && (w.verb == "patch" || w.verb == "apply") {
			// The rules judge the attempt before its failure: its edits as
			// the patch, applied here to the object, would make them.
			if merged, perr := patched(before, w); perr == nil {
				c.Edits = edits(before.Object, merged.Object)
			}
		}
		return c, nil, err
	}
	a.predict(ctx, w, before, after, fromPlan)
	c.Restores, c.Validated = w.restores, validated
	c.Diff, c.Fields = objectDiff(before, after, w, c.Sensitive)
	c.Unchanged = before != nil && w.verb != "delete" && len(c.Diff) == 1 && c.Diff[0] == noChange
	if w.verb == "delete" {
		c.Diff = append(c.Diff, a.cascade(ctx, before, propagation(before, w.args.PropagationPolicy))...)
		a.assess(ctx, w, c, before, nil)
		a.foresee(ctx, w, c, before, nil)
	} else {
		a.assess(ctx, w, c, before, after)
		a.foresee(ctx, w, c, before, after)
	}
	if before != nil && w.verb != "delete" {
		// What the dry run changes counts, not what the call names: a
		// field restated unchanged is no change, and a "$patch: replace",
		// a JSON patch of /spec or a merge patch of a list changes far
		// more than its few paths.
		c.Paths = changedPaths(before, after)
		c.Edits = edits(before.Object, after.Object)
	}
	if w.verb == "delete" {
		a.privilege(ctx, w, c, before, nil)
	} else {
		// One judgment per object, whatever the path: the object as the
		// dry run leaves it decides, for a typed create as for a patch.
		c.Critical = kubeapi.CriticalAfter(c, w.r.gvr.Group, before, after)
		kubeapi.JudgePodSecurity(c, before, after)
		a.privilege(ctx, w, c, before, after)
	}
	return c, after, nil
}

// mutate runs a mutating call for real.
func (a *Adapter) mutate(ctx context.Context, r *resource, verb string, raw json.RawMessage) (json.RawMessage, error) {
	w, err := a.decodeWrite(r, verb, raw)
	if err != nil {
		return nil, err
	}
	if verb == "rollout.undo" || verb == "rollout.restart" {
		before, err := a.current(ctx, w)
		if err != nil {
			return nil, err
		}
		if err := restartable(w, before); err != nil {
			return nil, err
		}
		if verb == "rollout.undo" {
			if err := a.undoPatch(ctx, w); err != nil {
				return nil, err
			}
		}
	}
	after, err := a.do(ctx, w, false)
	if err != nil {
		return nil, err
	}
	return json.Marshal(after.Object)
}

// restartable refuses to restart a paused workload, as kubectl does: the
// restart would wait, unnoticed, until someone resumes it.
func restartable(w *write, obj *unstructured.Unstructured) error {
	if w.verb != "rollout.restart" || obj == nil {
		return nil
	}
	if paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused"); paused {
		return &catalog.CallError{Status: http.StatusConflict, Reason: "Conflict", Message: fmt.Sprintf("%s %q is paused: resume it (patch spec.paused: false) before restarting", strings.ToLower(w.r.kind), w.name)}
	}
	return nil
}

// resolve finds the resource and verb of an operation name.
func (a *Adapter) resolve(name string) (*resource, string, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if c, ok := a.aliases[name]; ok {
		name = c
	}
	rest, ok := strings.CutPrefix(name, "kubernetes.")
	if !ok {
		return nil, "", fmt.Errorf("%w: %s", errUnknownOperation, name)
	}
	seg, verb, ok := strings.Cut(rest, ".")
	r := a.resources[seg]
	if !ok || r == nil || !r.hasOp(verb) {
		return nil, "", fmt.Errorf("%w: %s", errUnknownOperation, name)
	}
	return r, verb, nil
}

func badRequest(format string, a ...any) error {
	return &catalog.CallError{Status: http.StatusBadRequest, Reason: "BadRequest", Message: fmt.Sprintf(format, a...)}
}

// decodeWrite decodes and checks a mutating call's arguments and works out
// its target and the paths it sets.
func (a *Adapter) decodeWrite(r *resource, verb string, raw json.RawMessage) (*write, error) {
	w := &write{r: r, verb: verb}
	if err := decodeArgs(raw, &w.args); err != nil {
		return nil, err
	}
	w.ns, w.name = w.args.Namespace, w.args.Name
	if verb == "run" {
		// kubectl run's shape: a Pod of one container, created as any
		// create is (and planned so: its plan says what it makes).
		pod, err := runPod(w.args)
		if err != nil {
			return nil, err
		}
		w.args.Object, verb, w.verb = pod, "create", "create"
	}
	switch verb {
	case "create", "apply":
		body := w.args.Object
		field := "object"
		if verb == "apply" {
			body, field = w.args.Manifest, "manifest"
		}
		if body == nil {
			return nil, badRequest("%s.%s needs %s: the whole %s as JSON", r.seg, verb, field, r.kind)
		}
		w.obj = &unstructured.Unstructured{Object: body}
		if k := w.obj.GetKind(); k == "" {
			w.obj.SetKind(r.kind)
		} else if k != r.kind {
			return nil, badRequest("%s.kind is %q but this operation %ss %s objects: call kubernetes.<plural of %s>.%s", field, k, verb, r.kind, k, verb)
		}
		if w.obj.GetAPIVersion() == "" {
			w.obj.SetAPIVersion(r.gvr.GroupVersion().String())
		}
		if w.name == "" {
			w.name = w.obj.GetName()
		}
		if w.name == "" && w.obj.GetGenerateName() == "" {
			return nil, badRequest("%s.metadata.name is missing", field)
		}
		if w.obj.GetName() == "" && w.obj.GetGenerateName() == "" {
			w.obj.SetName(w.name)
		}
		if w.ns == "" {
			w.ns = w.obj.GetNamespace()
		}
		if verb == "apply" {
			w.paths = leafPaths(body, true)
		}
	case "patch":
		if len(w.args.Patch) == 0 || string(w.args.Patch) == "null" {
			return nil, badRequest("patch needs patch: the fields to change, e.g. {spec: {replicas: 3}}")
		}
		w.patch = w.args.Patch
		var err error
		if w.ptype, w.paths, err = patchPaths(w.args.Type, w.args.Patch); err != nil {
			return nil, err
		}
		if w.args.Type == "" {
			w.defType = true
			if !builtinGroup(r.gvr.Group) {
				w.ptype = types.MergePatchType // custom resources take no strategic merge
			}
		}
	case "scale":
		if w.args.Replicas == nil || *w.args.Replicas < 0 {
			return nil, badRequest("scale needs replicas: a number ≥ 0")
		}
		w.patch = fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, *w.args.Replicas)
		w.ptype = types.MergePatchType
		w.paths = []string{"spec.replicas"}
	case "cordon", "uncordon":
		// kubectl cordon and uncordon: spec.unschedulable.
		w.patch = fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, verb == "cordon")
		w.ptype = types.MergePatchType
		w.paths = []string{"spec.unschedulable"}
	case "rollout.restart":
		// kubectl rollout restart: a new template annotation rolls every pod.
		w.patch = fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339))
		w.ptype = types.StrategicMergePatchType
		w.paths = []string{kubeapi.JoinPath("spec.template.metadata.annotations", "kubectl.kubernetes.io/restartedAt")}
	case "rollout.undo":
		w.ptype = types.JSONPatchType
		w.paths = []string{"spec.template"}
	case "delete":
		if w.args.PropagationPolicy != "" && w.args.PropagationPolicy != "Foreground" && w.args.PropagationPolicy != "Background" && w.args.PropagationPolicy != "Orphan" {
			return nil, badRequest("propagationPolicy is %q: use Foreground, Background or Orphan", w.args.PropagationPolicy)
		}
	}
	if w.name == "" && verb != "create" {
		return nil, badRequest("%s.%s needs name", r.seg, verb)
	}
	if r.namespaced && w.ns == "" {
		w.ns = a.ns
	}
	if !r.namespaced {
		w.ns = ""
	}
	if w.obj != nil && r.namespaced {
		if ons := w.obj.GetNamespace(); ons != "" && ons != w.ns {
			return nil, badRequest("the %s names namespace %q but the call names %q", r.kind, ons, w.ns)
		}
		w.obj.SetNamespace(w.ns)
	}
	return w, nil
}

// builtinGroup says whether group is one of Kubernetes' own, whose types
// take strategic merge patches.
func builtinGroup(group string) bool {
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// current reads the object the call targets: nil when it does not exist.
func (a *Adapter) current(ctx context.Context, w *write) (*unstructured.Unstructured, error) {
	if w.name == "" {
		return nil, nil // generateName: a new object
	}
	var sub []string
	if w.verb == "scale" {
		sub = []string{"scale"}
	}
	obj, err := a.client(w.r, w.ns).Get(ctx, w.name, metav1.GetOptions{}, sub...)
	if apierrors.IsNotFound(err) {
		if w.verb == "create" || w.verb == "apply" {
			return nil, nil
		}
	}
	if err != nil {
		return nil, wrapError(err)
	}
	return obj, nil
}

// do makes the API call, as a server-side dry run when dry.
func (a *Adapter) do(ctx context.Context, w *write, dry bool) (*unstructured.Unstructured, error) {
	var dryRun []string
	if dry {
		dryRun = []string{metav1.DryRunAll}
	}
	c := a.client(w.r, w.ns)
	var out *unstructured.Unstructured
	var err error
	switch w.verb {
	case "create":
		out, err = c.Create(ctx, w.obj, metav1.CreateOptions{DryRun: dryRun, FieldManager: FieldManager})
	case "apply":
		out, err = c.Apply(ctx, w.name, w.obj, metav1.ApplyOptions{DryRun: dryRun, FieldManager: FieldManager, Force: w.args.Force})
		if apierrors.IsConflict(err) {
			return nil, &catalog.CallError{Status: http.StatusConflict, Reason: "Conflict",
				Message: wrapError(err).Error() + " — other managers own these fields: leave them out of the manifest, patch instead, or pass force: true to take them over"}
		}
	case "scale":
		out, err = c.Patch(ctx, w.name, w.ptype, w.patch, metav1.PatchOptions{DryRun: dryRun, FieldManager: FieldManager}, "scale")
	case "patch", "rollout.restart", "rollout.undo", "cordon", "uncordon":
		out, err = c.Patch(ctx, w.name, w.ptype, w.patch, metav1.PatchOptions{DryRun: dryRun, FieldManager: FieldManager})
		if w.defType && w.ptype == types.StrategicMergePatchType && apierrors.IsUnsupportedMediaType(err) {
			w.ptype = types.MergePatchType // a type without strategic merge
			out, err = c.Patch(ctx, w.name, w.ptype, w.patch, metav1.PatchOptions{DryRun: dryRun, FieldManager: FieldManager})
		}
	case "delete":
		opts := metav1.DeleteOptions{DryRun: dryRun, GracePeriodSeconds: w.args.GracePeriodSeconds}
		if w.args.Force {
			opts.GracePeriodSeconds = ptr(int64(0))
		}
		if w.args.PropagationPolicy != "" {
			p := metav1.DeletionPropagation(w.args.PropagationPolicy)
			opts.PropagationPolicy = &p
		}
		if err = c.Delete(ctx, w.name, opts); err == nil {
			out = &unstructured.Unstructured{Object: map[string]any{"kind": w.r.kind, "name": w.name, "deleted": true}}
			if w.ns != "" {
				out.Object["namespace"] = w.ns
			}
			if dry {
				out.Object["dryRun"] = true
			}
		}
	default:
		return nil, fmt.Errorf("%w: %s", errUnknownOperation, w.verb)
	}
	if err != nil {
		return nil, wrapError(err)
	}
	return out, nil
}

// change describes w for the bridge's gates.
func (w *write) change(existed bool) *catalog.Change {
	c := &catalog.Change{Action: w.verb, Kind: w.r.kind, Namespace: w.ns, Name: w.name, Existed: existed, Paths: w.paths}
	if w.obj != nil && c.Name == "" {
		c.Name = w.obj.GetGenerateName() + "*"
	}
	if w.verb == "delete" {
		c.GraceSeconds, c.Force = w.args.GracePeriodSeconds, w.args.Force
	}
	kubeapi.Classify(c, w.r.gvr.Group)
	return c
}

// runPod is the Pod kubectl run makes of args: one container named after
// the pod, labelled run=NAME (and labels), restartPolicy Always unless
// given.
func runPod(args writeArgs) (map[string]any, error) {
	if args.Name == "" || args.Image == "" {
		return nil, badRequest(`pods.run needs name and image: tools.kubernetes.pods.run({ name: "debug", image: "busybox:1.36", command: ["sleep", "3600"] })`)
	}
	switch args.RestartPolicy {
	case "", "Always", "OnFailure", "Never":
	default:
		return nil, badRequest("restartPolicy is %q: use Always, OnFailure or Never", args.RestartPolicy)
	}
	labels := map[string]any{"run": args.Name}
	for k, v := range args.Labels {
		labels[k] = v
	}
	container := map[string]any{"name": args.Name, "image": args.Image}
	if len(args.Command) > 0 {
		container["command"] = toAny(args.Command)
	}
	if len(args.Args) > 0 {
		container["args"] = toAny(args.Args)
	}
	if len(args.Env) > 0 {
		var env []any
		for _, k := range slices.Sorted(maps.Keys(args.Env)) {
			env = append(env, map[string]any{"name": k, "value": args.Env[k]})
		}
		container["env"] = env
	}
	spec := map[string]any{"containers": []any{container}}
	if args.RestartPolicy != "" {
		spec["restartPolicy"] = args.RestartPolicy
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": args.Name, "labels": labels}, "spec": spec}, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
