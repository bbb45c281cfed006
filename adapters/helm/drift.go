package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// driftManager is the field manager of drift's dry runs. It owns nothing
// in the cluster, so applying as it removes nothing: the dry run's result
// is the live object with the manifest's fields set, defaulted by the
// server ("predicted live").
const driftManager = "kubecode-drift"

// systemManagers are the cluster's own controllers: fields they alone set
// (a Deployment's revision annotation, replicas an autoscaler keeps) are
// not reported as set outside the release, unless the release sets them too.
var systemManagers = []string{"kube-controller-manager", "kube-scheduler", "kubelet", "kube-apiserver"}

type driftArgs struct {
	Release        string   `json:"release"`
	Namespace      string   `json:"namespace"`
	Ignore         []string `json:"ignore"`
	IgnoreManagers []string `json:"ignoreManagers"`
	Extra          bool     `json:"extra"`
}

// Drift is how the live objects of a release differ from its manifest.
type Drift struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	// Checked counts the objects compared; Drifted those with rows.
	Checked int        `json:"checked"`
	Drifted int        `json:"drifted"`
	Rows    []DriftRow `json:"rows"`
	// Method is "server-side apply dry run", or "manifest fields only"
	// where the identity may not dry-run (a less exact comparison).
	Method string `json:"method"`
}

// DriftRow is one difference.
type DriftRow struct {
	// Object is "Kind/name".
	Object string `json:"object"`
	// Path is the field, dotted, list items named by their key:
	// "spec.template.spec.containers[web].image". Empty for whole objects.
	Path string `json:"path,omitempty"`
	// Change is "changed" (the release sets another value), "removed"
	// (the release sets it; the cluster lacks it), "added" (set outside
	// the release), "missing" (the object is gone), "extra" (labelled as
	// the release's, no longer rendered by it) or "error".
	Change   string `json:"change"`
	Expected any    `json:"expected,omitempty"`
	Actual   any    `json:"actual,omitempty"`
	// Manager is the field manager that set the live value, when known.
	Manager string `json:"manager,omitempty"`
}

// ignoreRule is one entry of drift's ignore list: a JSON pointer, for
// every object or for objects of a kind (and name).
type ignoreRule struct {
	kind, name string
	segs       []string
}

func parseIgnore(list []string) ([]ignoreRule, error) {
	var out []ignoreRule
	for _, s := range list {
		var r ignoreRule
		ptr := s
		if !strings.HasPrefix(s, "/") {
			scope, rest, ok := strings.Cut(s, ":")
			if !ok || !strings.HasPrefix(rest, "/") {
				return nil, badRequest(fmt.Sprintf(`ignore %q: use a JSON pointer ("/spec/replicas"), optionally after a kind and name ("Deployment/web:/spec/replicas")`, s))
			}
			r.kind, r.name, _ = strings.Cut(scope, "/")
			ptr = rest
		}
		for _, seg := range strings.Split(ptr[1:], "/") {
			r.segs = append(r.segs, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
		}
		out = append(out, r)
	}
	return out, nil
}

// matches says whether the rule covers a row of obj (kind, name) at the
// field with the given pointer segments and their keyed names: a rule's
// segment matches the index, the item's key ("web"), or "*".
func (r ignoreRule) matches(kind, name string, ptr, keys []string) bool {
	if r.kind != "" && !strings.EqualFold(r.kind, kind) || r.name != "" && r.name != name {
		return false
	}
	if len(r.segs) > len(ptr) {
		return false
	}
	for i, seg := range r.segs {
		if seg != "*" && seg != ptr[i] && (i >= len(keys) || seg != keys[i]) {
			return false
		}
	}
	return true
}

func (a *Adapter) drift(ctx context.Context, raw json.RawMessage) (any, error) {
	var args driftArgs
	if err := decode(raw, &args); err != nil {
		return nil, err
	}
	ignore, err := parseIgnore(args.Ignore)
	if err != nil {
		return nil, err
	}
	_, cfg, rel, err := a.loadTarget(ctx, raw)
	if err != nil {
		return nil, err
	}
	objs, err := parseManifest(rel.Manifest)
	if err != nil {
		return nil, err
	}
	out := &Drift{Release: rel.Name, Namespace: rel.Namespace, Revision: rel.Version, Checked: len(objs), Rows: []DriftRow{},
		Method: "server-side apply dry run"}
	skipManagers := append([]string{managerName, kube.ManagedFieldsManager, driftManager}, args.IgnoreManagers...)
	rows := make([][]DriftRow, len(objs))
	var clientSide sync.Once
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(10)
	for i, o := range objs {
		g.Go(func() error {
			rs, client := a.driftObject(gctx, o, rel.Namespace, skipManagers, args.IgnoreManagers)
			if client {
				clientSide.Do(func() {
					out.Method = "manifest fields only (this identity may not dry-run changes, so server defaults are not applied)"
				})
			}
			var kept []DriftRow
			for _, r := range rs {
				if !ignored(ignore, o, r) {
					kept = append(kept, r.DriftRow)
				}
			}
			rows[i] = kept
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, rs := range rows {
		if len(rs) > 0 {
			out.Drifted++
			out.Rows = append(out.Rows, rs...)
		}
	}
	if args.Extra {
		extra, err := a.extraObjects(ctx, cfg, rel, objs)
		if err != nil {
			return nil, err
		}
		out.Rows = append(out.Rows, extra...)
	}
	return out, nil
}

// row is a drift row with where it points, for ignore rules.
type row struct {
	DriftRow
	ptr, keys []string
}

func ignored(rules []ignoreRule, o *unstructured.Unstructured, r row) bool {
	for _, rule := range rules {
		if rule.matches(o.GetKind(), o.GetName(), r.ptr, r.keys) {
			return true
		}
	}
	return false
}

// driftRetry paces the reads of an object that changes under a drift
// check: 10 ms doubling, eight tries, about 1.3 s in all.
var driftRetry = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 8}

// driftObject compares one manifest object with the cluster. client says
// the comparison could not use a server dry run.
func (a *Adapter) driftObject(ctx context.Context, o *unstructured.Unstructured, releaseNS string, skip, ignoreManagers []string) (rows []row, client bool) {
	key := objectKey(o)
	fail := func(err error) ([]row, bool) {
		return []row{{DriftRow: DriftRow{Object: key, Change: "error", Actual: err.Error()}}}, false
	}
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.resetMapperOnce()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return []row{{DriftRow: DriftRow{Object: key, Change: "missing", Actual: "the cluster serves no " + gvk.GroupVersion().String() + " " + gvk.Kind}}}, false
	}
	if err != nil {
		return fail(err)
	}
	want := o.DeepCopy()
	var rc dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if want.GetNamespace() == "" {
			want.SetNamespace(releaseNS)
		}
		rc = a.dyn.Resource(m.Resource).Namespace(want.GetNamespace())
	}
	// The dry run applies over the object as read: should the object
	// change in between (a controller at work), the precondition fails and
	// both are read again, so that the comparison never mixes two versions.
	// A rollout updates its Deployment's status many times a second: the
	// reads back off (driftRetry) rather than racing it.
	var live, pred *unstructured.Unstructured
	var readErr error // the read's, or the manifest's encoding: no retry
	perr := retry.RetryOnConflict(driftRetry, func() error {
		if live, readErr = rc.Get(ctx, want.GetName(), metav1.GetOptions{}); readErr != nil {
			return nil
		}
		want.SetResourceVersion(live.GetResourceVersion())
		body, err := json.Marshal(want.Object)
		if err != nil {
			readErr = err
			return nil
		}
		force := true
		pred, err = rc.Patch(ctx, want.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
			DryRun: []string{metav1.DryRunAll}, FieldManager: driftManager, Force: &force})
		return err
	})
	if apierrors.IsNotFound(readErr) {
		return []row{{DriftRow: DriftRow{Object: key, Change: "missing"}}}, false
	}
	if readErr != nil {
		return fail(readErr)
	}
	want.SetResourceVersion("")
	secret := isSecret(o)
	err = perr
	var deltas []kubeapi.Delta
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
		client = true
		// Manifest numbers decode as floats, the cluster's as integers:
		// compare both as JSON numbers.
		for _, d := range kubeapi.Diff(kubeapi.Normalize(kubeapi.Trim(want.Object)), kubeapi.Normalize(kubeapi.Trim(live.Object))) {
			if d.HasOld {
				deltas = append(deltas, d)
			}
		}
	case err != nil:
		return fail(err)
	default:
		deltas = kubeapi.Diff(kubeapi.Trim(pred.Object), kubeapi.Trim(live.Object))
	}
	owners := ownership(live)
	wantTrim, liveTrim := kubeapi.Trim(want.Object), kubeapi.Trim(live.Object)
	changed := map[string]bool{}
	for _, d := range deltas {
		if d.HasOld {
			changed[d.Path] = true
		}
	}
	owners.release = releaseManagers(owners, wantTrim, liveTrim, changed)
	changed = map[string]bool{}
	for _, d := range deltas {
		r := row{DriftRow: DriftRow{Object: key, Path: d.Path}, ptr: d.Pointer, keys: d.Keys}
		switch {
		case d.HasOld && d.HasNew:
			r.Change, r.Expected, r.Actual = "changed", d.Old, d.New
		case d.HasOld:
			r.Change, r.Expected = "removed", d.Old
		default:
			r.Change, r.Actual = "added", d.New
		}
		if d.HasNew {
			r.Manager = owners.of(d.Path)
		}
		if slices.Contains(ignoreManagers, r.Manager) {
			continue
		}
		if secret || catalog.SecretName.MatchString(d.Path) {
			r.Expected, r.Actual = hide(r.Expected), hide(r.Actual)
		}
		r.Expected, r.Actual = clipValue(r.Expected), clipValue(r.Actual)
		changed[d.Path] = true
		rows = append(rows, r)
	}
	// Fields set outside the release: owned by a manager that is neither
	// the release's nor the cluster's, and not set by the manifest.
	var added []row
	for _, f := range owners.fields {
		if slices.Contains(skip, f.manager) || owners.release[f.manager] || slices.Contains(systemManagers, f.manager) || changed[f.path] || helmOwnership(f.keys) {
			continue
		}
		if _, ok := kubeapi.Lookup(wantTrim, f.keys); ok {
			continue
		}
		v, ok := kubeapi.Lookup(liveTrim, f.keys)
		if !ok {
			continue
		}
		r := row{DriftRow: DriftRow{Object: key, Path: f.path, Change: "added", Actual: v, Manager: f.manager}, ptr: f.ptr, keys: f.keys}
		if secret || catalog.SecretName.MatchString(f.path) {
			r.Actual = hide(v)
		}
		r.Actual = clipValue(r.Actual)
		added = append(added, r)
	}
	sort.Slice(added, func(i, j int) bool { return added[i].Path < added[j].Path })
	for i, r := range added {
		if i > 0 && coveredBy(r.Path, added[:i]) {
			continue
		}
		rows = append(rows, r)
	}
	return rows, client
}

// maxValue bounds a row's value as JSON: a whole configuration file
// changed is shown by its start and size.
const maxValue = 240

// clipValue returns v, or, when its JSON is longer than maxValue, the
// start of that JSON and its size.
func clipValue(v any) any {
	if v == nil {
		return nil
	}
	if s, ok := v.(string); ok {
		if len(s) <= maxValue {
			return s
		}
		return fmt.Sprintf("%s… (%d bytes)", s[:maxValue], len(s))
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) <= maxValue {
		return v
	}
	return fmt.Sprintf("%s… (%d bytes of JSON)", b[:maxValue], len(b))
}

func hide(v any) any {
	if v == nil {
		return nil
	}
	return redacted
}

func coveredBy(path string, earlier []row) bool {
	for _, e := range earlier {
		if strings.HasPrefix(path, e.Path+".") || strings.HasPrefix(path, e.Path+"[") {
			return true
		}
	}
	return false
}

// owned is one field of a live object and the manager that set it.
type owned struct {
	path      string
	ptr, keys []string
	manager   string
	update    bool // set by an Update operation, not a server-side apply
}

// owners are the fields of a live object by manager, from managedFields.
type owners struct {
	fields  []owned
	by      map[string][]string // path → managers
	release map[string]bool     // the release's own managers (releaseManagers)
}

// releaseManagers names the field managers that wrote the release into
// live, by what they own rather than by name: whatever Helm client
// installed or upgraded it (the helm binary, Flux's helm-controller,
// Terraform's provider, a CI tool) writes with Update operations (Helm
// never applies server-side) and owns fields the manifest sets, each
// holding the manifest's value. A person's edit owns none, or sets a value
// of its own; a server-side apply is never the release's. The fields
// server defaults filled in when a release manager wrote the object are
// that manager's too, and so never reported as set outside the release.
// A kubectl command (its managers are named kubectl-edit, kubectl-set,
// ...) is a person's edit, never a Helm client, even once an upgrade made
// the value it set the manifest's: what else it set is still reported.
// (Another tool's edit that sets a manifest field to the manifest's value
// and adds fields in the same write is taken for the release's.)
func releaseManagers(o owners, want, live map[string]any, changed map[string]bool) map[string]bool {
	setsManifest := map[string]bool{}
	differs := map[string]bool{}
	for _, f := range o.fields {
		if !f.update || helmOwnership(f.keys) || strings.HasPrefix(f.manager, "kubectl") {
			continue
		}
		v, ok := kubeapi.Lookup(live, f.keys)
		if !ok {
			continue
		}
		switch v.(type) {
		case map[string]any, []any:
			continue // a leaf says more than the field holding it
		}
		if _, inManifest := kubeapi.Lookup(want, f.keys); !inManifest {
			continue
		}
		if changed[f.path] {
			differs[f.manager] = true
		} else {
			setsManifest[f.manager] = true
		}
	}
	out := map[string]bool{}
	for m := range setsManifest {
		if !differs[m] {
			out[m] = true
		}
	}
	return out
}

// helmOwnership says whether the field is one Helm sets on every object
// it manages (the managed-by label, the release annotations), whoever ran
// Helm.
func helmOwnership(keys []string) bool {
	if len(keys) != 3 || keys[0] != "metadata" {
		return false
	}
	return keys[1] == "labels" && keys[2] == "app.kubernetes.io/managed-by" ||
		keys[1] == "annotations" && strings.HasPrefix(keys[2], "meta.helm.sh/")
}

// ownership reads the managed fields of live. Fields of the status
// subresource are left out: a release never sets them.
func ownership(live *unstructured.Unstructured) owners {
	o := owners{by: map[string][]string{}}
	for _, e := range live.GetManagedFields() {
		if e.Subresource == "status" || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())); err != nil {
			continue
		}
		set.Iterate(func(p fieldpath.Path) {
			path, ptr, keys, ok := resolve(live.Object, p)
			if !ok || !compared(keys) {
				return
			}
			o.fields = append(o.fields, owned{path: path, ptr: ptr, keys: keys, manager: e.Manager, update: e.Operation == metav1.ManagedFieldsOperationUpdate})
			if !slices.Contains(o.by[path], e.Manager) {
				o.by[path] = append(o.by[path], e.Manager)
			}
		})
	}
	return o
}

// of names the manager of the field at path, or of the nearest field
// holding it (lists replaced whole are owned whole); a manager other than
// Helm's wins.
func (o owners) of(path string) string {
	for p := path; p != ""; p = parent(p) {
		if ms := o.by[p]; len(ms) > 0 {
			for _, m := range ms {
				if m != managerName && !o.release[m] {
					return m
				}
			}
			return ms[0]
		}
	}
	return ""
}

// parent is the path holding the field at p: "a.b[x.y]" → "a.b".
func parent(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// compared says whether drift looks at the field: metadata other than
// labels and annotations, and status, are the cluster's.
func compared(keys []string) bool {
	if len(keys) == 0 {
		return false
	}
	switch keys[0] {
	case "status", "apiVersion", "kind":
		return false
	case "metadata":
		return len(keys) >= 2 && (keys[1] == "labels" || keys[1] == "annotations" || keys[1] == "finalizers" || keys[1] == "ownerReferences")
	}
	return true
}

// resolve finds the field a managed-fields path names in obj: its dotted
// path, JSON pointer and keyed segments, as kubeapi.Diff names them.
func resolve(obj map[string]any, p fieldpath.Path) (path string, ptr, keys []string, ok bool) {
	var cur any = obj
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, isMap := cur.(map[string]any)
			if !isMap {
				return "", nil, nil, false
			}
			name := *pe.FieldName
			if cur, ok = m[name]; !ok {
				return "", nil, nil, false
			}
			path, ptr, keys = kubeapi.JoinPath(path, name), append(ptr, name), append(keys, name)
		default:
			list, isList := cur.([]any)
			if !isList {
				return "", nil, nil, false
			}
			i := -1
			switch {
			case pe.Index != nil:
				i = *pe.Index
			case pe.Key != nil:
				for j, item := range list {
					m, _ := item.(map[string]any)
					match := m != nil
					for _, f := range *pe.Key {
						if !match {
							break
						}
						match = fmt.Sprint(m[f.Name]) == fmt.Sprint(f.Value.Unstructured())
					}
					if match {
						i = j
						break
					}
				}
			case pe.Value != nil:
				want := (*pe.Value).Unstructured()
				for j, item := range list {
					if reflect.DeepEqual(item, want) || fmt.Sprint(item) == fmt.Sprint(want) {
						i = j
						break
					}
				}
			}
			if i < 0 || i >= len(list) {
				return "", nil, nil, false
			}
			seg := kubeapi.ItemKey(list, i)
			path, ptr, keys = path+"["+seg+"]", append(ptr, strconv.Itoa(i)), append(keys, seg)
			cur = list[i]
		}
	}
	return path, ptr, keys, true
}

// extraObjects finds objects labelled as the release's that its manifest
// no longer renders, among the kinds any of its revisions rendered, in the
// release's namespace and cluster-wide.
func (a *Adapter) extraObjects(ctx context.Context, cfg *action.Configuration, rel *release.Release, current []*unstructured.Unstructured) ([]DriftRow, error) {
	hist, err := cfg.Releases.History(rel.Name)
	if err != nil {
		return nil, err
	}
	kinds := map[schema.GroupVersionKind]bool{}
	for _, o := range current {
		kinds[o.GroupVersionKind()] = true
	}
	for _, h := range hist {
		objs, _ := parseManifest(h.Manifest)
		for _, o := range objs {
			kinds[o.GroupVersionKind()] = true
		}
	}
	have := map[string]bool{}
	for _, o := range current {
		have[o.GroupVersionKind().GroupKind().String()+"/"+o.GetName()] = true
	}
	var rows []DriftRow
	for gvk := range kinds {
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue
		}
		var rc dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			rc = a.dyn.Resource(m.Resource).Namespace(rel.Namespace)
		}
		list, err := rc.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=Helm"})
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, item := range list.Items {
			ann := item.GetAnnotations()
			if ann["meta.helm.sh/release-name"] != rel.Name || ann["meta.helm.sh/release-namespace"] != rel.Namespace {
				continue
			}
			if !have[gvk.GroupKind().String()+"/"+item.GetName()] {
				rows = append(rows, DriftRow{Object: gvk.Kind + "/" + item.GetName(), Change: "extra"})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Object < rows[j].Object })
	return rows, nil
}
