package helm

import (
	"context"
	"reflect"
	"strings"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// accounting is what a release change's account needs beyond its two
// revisions.
type accounting struct {
	// crds are the scopes (namespaced or not) of the types the chart
	// defines, for kinds the cluster does not serve yet.
	crds map[schema.GroupKind]bool
	// live: Helm writes every object of the new revision, changed or not
	// (it recreates deleted ones and patches drifted ones): compare the
	// unchanged ones with the cluster too.
	live bool
	// extra is hashed into the fingerprint (type definitions' files).
	extra []byte
	// masked are the new revision's objects rendered from values whose
	// secrets are markers (maskedObjects), by manifestID: a field whose
	// value differs there holds a secret, perhaps transformed, and its
	// plan line shows no value. Nil when not rendered (a rollback, an
	// uninstall); failed says the masked render failed, and no updated
	// field's value is shown then.
	masked map[string]*unstructured.Unstructured
	failed bool
}

// maskObjects keeps the objects of the new revision's masked render
// (files, or its failure err) for the plan lines.
func (acct *accounting) maskObjects(files map[string]string, err error) {
	if err != nil {
		acct.failed = true
		return
	}
	acct.masked = map[string]*unstructured.Unstructured{}
	for name, text := range files {
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") && !strings.HasSuffix(name, ".json") {
			continue
		}
		objs, err := parseManifest(text)
		if err != nil {
			continue
		}
		for _, o := range objs {
			acct.masked[manifestID(o)] = o
		}
	}
}

// secretDerived says whether the new value of d, a field of the new
// revision's object o, differs when the chart renders from masked values:
// it is (or is made from) a secret.
func (acct *accounting) secretDerived(o *unstructured.Unstructured, d kubeapi.Delta) bool {
	if acct.failed {
		return true
	}
	if acct.masked == nil || !d.HasNew {
		return false
	}
	m, ok := acct.masked[manifestID(o)]
	if !ok {
		return true // an object the masked render does not make depends on a secret
	}
	v, ok := kubeapi.Lookup(kubeapi.Trim(m.Object), d.Keys)
	return !ok || !reflect.DeepEqual(v, d.New)
}

// addCRDs learns the scopes of the types ch (and its dependencies) define.
func (acct *accounting) addCRDs(ch *chart.Chart) {
	for _, crd := range ch.CRDObjects() {
		objs, _ := parseManifest(string(crd.File.Data))
		acct.learn(objs)
	}
}

func (acct *accounting) learn(objs []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		acct.crds[schema.GroupKind{Group: group, Kind: kind}] = scope == "Namespaced"
	}
}

// account fills change.Objects and change.Diff with what going from
// before's manifest to after's does to each object, and returns the same
// as short lines for the result. before is nil for an install; for an
// uninstall after holds only the hooks it runs.
func (a *Adapter) account(ctx context.Context, change *catalog.Change, acct *accounting, before, after *release.Release, uninstall bool) ([]string, error) {
	var old, now []*unstructured.Unstructured
	var err error
	if before != nil {
		if old, err = parseManifest(before.Manifest); err != nil {
			return nil, err
		}
	}
	if after != nil {
		if now, err = parseManifest(after.Manifest); err != nil {
			return nil, err
		}
	}
	acct.learn(now)
	r := &accountRun{a: a, ctx: ctx, change: change, acct: acct, ns: change.Namespace, lines: []string{}}
	if after != nil {
		if err := r.hooks(after.Hooks); err != nil {
			return nil, err
		}
	}
	r.objects(old, now)
	if err := r.deletes(old, now, uninstall); err != nil {
		return nil, err
	}
	return r.lines, nil
}

// accountRun is one account under way: the change it fills and the
// short lines it returns.
type accountRun struct {
	a      *Adapter
	ctx    context.Context
	change *catalog.Change
	acct   *accounting
	ns     string // the release's namespace
	lines  []string
}

// add records one object's change: in the plan (its diff line) and in the
// result (its short line).
func (r *accountRun) add(c catalog.Change, diff, line string) {
	r.change.Objects = append(r.change.Objects, c)
	r.change.Diff = append(r.change.Diff, diff)
	if line != "" {
		r.lines = append(r.lines, line)
	}
}

// hooks accounts for the release's hooks: created when they run, one of
// the same name already there deleted first (Helm's default delete
// policy).
func (r *accountRun) hooks(hooks []*release.Hook) error {
	for _, h := range hooks {
		if h == nil {
			continue
		}
		hobjs, err := parseManifest(h.Manifest)
		if err != nil {
			return err
		}
		for _, o := range hobjs {
			live, err := r.a.live(r.ctx, o, r.ns, r.acct)
			if err != nil {
				return err
			}
			if live != nil {
				c := r.a.objectChange("delete", o, r.ns, true, r.acct.crds)
				r.add(c, "- "+c.Object()+" (replaced by a hook)", "")
			}
			c := r.a.objectChange("create", o, r.ns, false, r.acct.crds)
			r.add(c, "+ hook "+c.Object()+judge(&c, nil, nil, o), "hook "+objectKey(o))
		}
	}
	return nil
}

// liveCopy is the cluster's copy of o when Helm writes every object (an
// upgrade restores what someone removed from the live object, privileges
// included), else nil.
func (r *accountRun) liveCopy(o *unstructured.Unstructured) *unstructured.Unstructured {
	if !r.acct.live {
		return nil
	}
	l, err := r.a.live(r.ctx, o, r.ns, r.acct)
	if err != nil {
		return nil
	}
	return l
}

// judge judges what a release makes of one object as the Kubernetes
// adapter judges its own changes, on the object as rendered, against its
// previous revision (old) and the cluster's copy (live) where known: the
// namespace's pod security (CriticalAfter) and the Pod Security Standards
// of its pods. It returns what the plan line adds ("; ⚠ pod security:
// ...").
func judge(c *catalog.Change, old, live, after *unstructured.Unstructured) string {
	was := live
	if was == nil {
		was = old
	}
	c.Critical = kubeapi.CriticalAfter(c, after.GroupVersionKind().Group, was, after)
	c.Diff = nil
	kubeapi.JudgePodSecurityLive(c, old, was, after)
	if len(c.Diff) == 0 {
		return ""
	}
	return "; " + strings.Join(c.Diff, "; ")
}

// manifestID names a manifest object across revisions.
func manifestID(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().Group + "/" + o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// objects accounts for the new revision's objects: created, changed
// between the revisions (each diffed once), or, unchanged in the chart,
// compared with the cluster, all at once (Helm recreates what is gone and
// patches back what drifted).
func (r *accountRun) objects(old, now []*unstructured.Unstructured) {
	was := map[string]*unstructured.Unstructured{}
	for _, o := range old {
		was[manifestID(o)] = o
	}
	type object struct {
		o       *unstructured.Unstructured
		existed bool
		diff    []kubeapi.Delta // between the revisions, leaves
		drift   []row           // against the cluster, for an object the revisions agree on
		checked bool
	}
	objs := make([]*object, len(now))
	g, gctx := errgroup.WithContext(r.ctx)
	g.SetLimit(10)
	for i, o := range now {
		ob := &object{o: o}
		objs[i] = ob
		prev, ok := was[manifestID(o)]
		if !ok {
			continue
		}
		ob.existed = true
		for _, d := range kubeapi.Diff(kubeapi.Trim(prev.Object), kubeapi.Trim(o.Object)) {
			ob.diff = append(ob.diff, d.Leaves()...)
		}
		if len(ob.diff) == 0 && r.acct.live {
			ob.checked = true
			g.Go(func() error {
				ob.drift, _ = r.a.driftObject(gctx, o, r.ns, nil, nil)
				return nil
			})
		}
	}
	_ = g.Wait()
	for _, ob := range objs {
		o := ob.o
		switch {
		case !ob.existed:
			c := r.a.objectChange("create", o, r.ns, false, r.acct.crds)
			// What the new object is, as a create of its own reads.
			line := "+ " + c.Object()
			if sum := kubeapi.CreateSummary(o); len(sum) > 0 {
				line += " (" + strings.Join(sum, "; ") + ")"
			}
			r.add(c, line+judge(&c, nil, nil, o), "create "+objectKey(o))
		case len(ob.diff) > 0:
			c := r.a.objectChange("update", o, r.ns, true, r.acct.crds)
			var shown []string
			for _, d := range ob.diff {
				c.Paths = append(c.Paths, d.Path)
				shown = append(shown, kubeapi.Line(d, c.Sensitive || catalog.SecretName.MatchString(d.Path) || r.acct.secretDerived(o, d)))
			}
			r.add(c, "~ "+c.Object()+": "+strings.Join(shown, "; ")+judge(&c, was[manifestID(o)], r.liveCopy(o), o), "update "+objectKey(o)+": "+strings.Join(c.Paths, ", "))
		case ob.checked:
			var paths []string
			missing := false
			for _, d := range ob.drift {
				switch d.Change {
				case "missing":
					missing = true
				case "changed", "removed", "error":
					paths = append(paths, d.Path)
				}
			}
			switch {
			case missing:
				c := r.a.objectChange("create", o, r.ns, false, r.acct.crds)
				r.add(c, "+ "+c.Object()+" (gone from the cluster: recreated)"+judge(&c, nil, nil, o), "create "+objectKey(o)+" (recreated)")
			case len(paths) > 0:
				c := r.a.objectChange("update", o, r.ns, true, r.acct.crds)
				c.Paths = paths
				r.add(c, "~ "+c.Object()+": "+strings.Join(paths, ", ")+" (drifted in the cluster: set back)"+judge(&c, o, r.liveCopy(o), o),
					"update "+objectKey(o)+": "+strings.Join(paths, ", ")+" (set back)")
			}
		}
	}
}

// deletes accounts for the objects of the old revision the new one has
// not: an upgrade or rollback deletes what the cluster holds of them, an
// uninstall all, unless the object says keep (helm.sh/resource-policy).
func (r *accountRun) deletes(old, now []*unstructured.Unstructured, uninstall bool) error {
	seen := map[string]bool{}
	for _, o := range now {
		seen[manifestID(o)] = true
	}
	for _, o := range old {
		if seen[manifestID(o)] {
			continue
		}
		keep := o.GetAnnotations()["helm.sh/resource-policy"] == "keep"
		if !uninstall {
			live, err := r.a.live(r.ctx, o, r.ns, r.acct)
			if err != nil {
				return err
			}
			if live == nil {
				continue
			}
			keep = live.GetAnnotations()["helm.sh/resource-policy"] == "keep"
		}
		if keep {
			continue
		}
		c := r.a.objectChange("delete", o, r.ns, true, r.acct.crds)
		r.add(c, "- "+c.Object(), "delete "+objectKey(o))
	}
	return nil
}

// live reads the cluster's copy of the manifest object o, or nil when
// there is none (or the cluster does not serve its kind).
func (a *Adapter) live(ctx context.Context, o *unstructured.Unstructured, releaseNS string, acct *accounting) (*unstructured.Unstructured, error) {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rc dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := o.GetNamespace()
		if ns == "" {
			ns = releaseNS
		}
		rc = a.dyn.Resource(m.Resource).Namespace(ns)
	}
	u, err := rc.Get(ctx, o.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// namespaceExists says whether the cluster has namespace ns.
func (a *Adapter) namespaceExists(ctx context.Context, ns string) (bool, error) {
	_, err := a.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// objectChange describes what a release does to one object for the
// bridge's rules, as the Kubernetes adapter describes its own changes.
// A cluster-scoped object has no namespace, whatever its manifest says.
func (a *Adapter) objectChange(action string, o *unstructured.Unstructured, releaseNS string, existed bool, crds map[schema.GroupKind]bool) catalog.Change {
	gvk := o.GroupVersionKind()
	c := catalog.Change{Action: action, Kind: gvk.Kind, Name: o.GetName(), Existed: existed}
	if a.namespaced(gvk, crds) {
		c.Namespace = o.GetNamespace()
		if c.Namespace == "" {
			c.Namespace = releaseNS
		}
	}
	kubeapi.Classify(&c, gvk.Group)
	return c
}

// namespaced says whether objects of the kind live in namespaces: as the
// cluster serves it, else as the chart defines it; a kind known to
// neither is taken to be cluster-scoped, which the namespaces rule judges
// more strictly.
func (a *Adapter) namespaced(gvk schema.GroupVersionKind, crds map[schema.GroupKind]bool) bool {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		return m.Scope.Name() == meta.RESTScopeNameNamespace
	}
	return crds[gvk.GroupKind()]
}
