package helm

import (
	"context"
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
	ns := change.Namespace
	var lines []string
	// Hooks are created when they run; one of the same name already there
	// is deleted first (Helm's default delete policy).
	if after != nil {
		for _, h := range after.Hooks {
			if h == nil {
				continue
			}
			hobjs, err := parseManifest(h.Manifest)
			if err != nil {
				return nil, err
			}
			for _, o := range hobjs {
				live, err := a.live(ctx, o, ns, acct)
				if err != nil {
					return nil, err
				}
				if live != nil {
					c := a.objectChange("delete", o, ns, true, acct.crds)
					change.Objects = append(change.Objects, c)
					change.Diff = append(change.Diff, "- "+c.Object()+" (replaced by a hook)")
				}
				c := a.objectChange("create", o, ns, false, acct.crds)
				change.Objects = append(change.Objects, c)
				change.Diff = append(change.Diff, "+ hook "+c.Object())
				lines = append(lines, "hook "+objectKey(o))
			}
		}
	}
	id := func(o *unstructured.Unstructured) string {
		return o.GroupVersionKind().Group + "/" + o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	was := map[string]*unstructured.Unstructured{}
	for _, o := range old {
		was[id(o)] = o
	}
	// Objects unchanged between the revisions are compared with the
	// cluster, all at once.
	type check struct {
		o    *unstructured.Unstructured
		rows []row
	}
	var checks []*check
	seen := map[string]bool{}
	for _, o := range now {
		seen[id(o)] = true
		if prev, ok := was[id(o)]; ok && acct.live && len(diffValues(nil, "", nil, nil, trimObject(prev.Object), trimObject(o.Object), true, true)) == 0 {
			checks = append(checks, &check{o: o})
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(10)
	for _, c := range checks {
		g.Go(func() error {
			c.rows, _ = a.driftObject(gctx, c.o, ns, nil, nil)
			return nil
		})
	}
	_ = g.Wait()
	checked := map[*unstructured.Unstructured][]row{}
	for _, c := range checks {
		checked[c.o] = c.rows
	}
	for _, o := range now {
		prev, ok := was[id(o)]
		if !ok {
			c := a.objectChange("create", o, ns, false, acct.crds)
			change.Objects = append(change.Objects, c)
			// What the new object is, as a create of its own reads.
			line := "+ " + c.Object()
			if sum := kubeapi.CreateSummary(o); len(sum) > 0 {
				line += " (" + strings.Join(sum, "; ") + ")"
			}
			change.Diff = append(change.Diff, line)
			lines = append(lines, "create "+objectKey(o))
			continue
		}
		rows, isChecked := checked[o]
		if !isChecked {
			ds := diffValues(nil, "", nil, nil, trimObject(prev.Object), trimObject(o.Object), true, true)
			if len(ds) == 0 {
				continue
			}
			c := a.objectChange("update", o, ns, true, acct.crds)
			var shown []string
			for _, d := range ds {
				c.Paths = append(c.Paths, d.path)
				if c.Sensitive || catalog.SecretName.MatchString(d.path) {
					shown = append(shown, d.path+" (value hidden)")
				} else {
					shown = append(shown, d.path+": "+short(d.want, d.hasWant)+" → "+short(d.got, d.hasGot))
				}
			}
			change.Objects = append(change.Objects, c)
			change.Diff = append(change.Diff, "~ "+c.Object()+": "+strings.Join(shown, "; "))
			lines = append(lines, "update "+objectKey(o)+": "+strings.Join(c.Paths, ", "))
			continue
		}
		// Unchanged in the chart: Helm recreates it if it is gone and
		// patches back what drifted from it.
		var paths []string
		missing := false
		for _, r := range rows {
			switch r.Change {
			case "missing":
				missing = true
			case "changed", "removed", "error":
				paths = append(paths, r.Path)
			}
		}
		switch {
		case missing:
			c := a.objectChange("create", o, ns, false, acct.crds)
			change.Objects = append(change.Objects, c)
			change.Diff = append(change.Diff, "+ "+c.Object()+" (gone from the cluster: recreated)")
			lines = append(lines, "create "+objectKey(o)+" (recreated)")
		case len(paths) > 0:
			c := a.objectChange("update", o, ns, true, acct.crds)
			c.Paths = paths
			change.Objects = append(change.Objects, c)
			change.Diff = append(change.Diff, "~ "+c.Object()+": "+strings.Join(paths, ", ")+" (drifted in the cluster: set back)")
			lines = append(lines, "update "+objectKey(o)+": "+strings.Join(paths, ", ")+" (set back)")
		}
	}
	for _, o := range old {
		if seen[id(o)] {
			continue
		}
		keep := o.GetAnnotations()["helm.sh/resource-policy"] == "keep"
		if !uninstall {
			// An upgrade or rollback deletes what the cluster holds,
			// unless the live object says keep.
			live, err := a.live(ctx, o, ns, acct)
			if err != nil {
				return nil, err
			}
			if live == nil {
				continue
			}
			keep = live.GetAnnotations()["helm.sh/resource-policy"] == "keep"
		}
		if keep {
			continue
		}
		c := a.objectChange("delete", o, ns, true, acct.crds)
		change.Objects = append(change.Objects, c)
		change.Diff = append(change.Diff, "- "+c.Object())
		lines = append(lines, "delete "+objectKey(o))
	}
	if lines == nil {
		lines = []string{}
	}
	return lines, nil
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
