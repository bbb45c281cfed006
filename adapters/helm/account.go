package helm

import (
	"context"
	"fmt"
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
	// snap, for a change applied (not previewed) live, holds the
	// cluster's copies of the release's objects from before it applied
	// (Adapter.snapshot): what it did is told from them to the cluster's
	// copies after. Nil for a preview, which tells it from the cluster's
	// copies to the dry run of Helm's patch.
	snap map[string]*unstructured.Unstructured
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
// revision's object o as it will be in the cluster, is (or is made from) a
// secret: the chart sets the field, and sets it to something else when it
// renders from masked values. A field the chart does not set (a default,
// a value someone else set) is no secret of the chart's.
func (acct *accounting) secretDerived(o *unstructured.Unstructured, d kubeapi.Delta) bool {
	if acct.failed {
		return true
	}
	if acct.masked == nil || !d.HasNew {
		return false
	}
	rendered, ok := kubeapi.Lookup(kubeapi.Trim(o.Object), d.Keys)
	if !ok {
		return false
	}
	m, ok := acct.masked[manifestID(o)]
	if !ok {
		return true // an object the masked render does not make depends on a secret
	}
	v, ok := kubeapi.Lookup(kubeapi.Trim(m.Object), d.Keys)
	return !ok || !reflect.DeepEqual(v, rendered)
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
	if err := r.objects(old, now); err != nil {
		return nil, err
	}
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
			warn := judge(&c, nil, nil, o)
			r.add(c, "+ hook "+c.Object()+warn, "hook "+objectKey(o))
		}
	}
	return nil
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

// objects accounts for the new revision's objects. An install creates
// them (each diffed against nothing). An upgrade or rollback writes every
// one of them, changed in the chart or not (Helm recreates what is gone
// and patches back what drifted): each is told live → desired, from the
// cluster's copy to what the API server's dry run of Helm's own patch
// leaves (or, once applied, to the cluster's copy after), so that a
// reviewer reads what happens to the cluster, not to the chart.
func (r *accountRun) objects(old, now []*unstructured.Unstructured) error {
	was := map[string]*unstructured.Unstructured{}
	for _, o := range old {
		was[manifestID(o)] = o
	}
	type object struct {
		o             *unstructured.Unstructured
		prev          *unstructured.Unstructured // in the last revision
		before, after *unstructured.Unstructured // the cluster's copies (after: as the dry run leaves it)
		unknown       bool                       // its copy before could not be read
		diff          []kubeapi.Delta
		err           error
	}
	objs := make([]*object, len(now))
	g, gctx := errgroup.WithContext(r.ctx)
	g.SetLimit(10)
	for i, o := range now {
		ob := &object{o: o, prev: was[manifestID(o)]}
		objs[i] = ob
		if !r.acct.live {
			continue
		}
		g.Go(func() error {
			if r.acct.snap != nil {
				var read bool
				ob.before, read = r.acct.snap[manifestID(o)]
				ob.unknown = !read && ob.prev != nil
				ob.after, _ = r.a.live(gctx, o, r.ns, r.acct)
			} else {
				if ob.before, ob.err = r.a.live(gctx, o, r.ns, r.acct); ob.err != nil || ob.before == nil {
					return nil
				}
				ob.after, ob.err = r.a.dryRunUpdate(gctx, ob.prev, o, ob.before, r.change.Name, r.ns)
			}
			if ob.before != nil && ob.after != nil {
				for _, d := range kubeapi.Diff(kubeapi.Trim(ob.before.Object), kubeapi.Trim(ob.after.Object)) {
					ob.diff = append(ob.diff, d.Leaves()...)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	var impacts []string
	for _, ob := range objs {
		o := ob.o
		if ob.err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), ob.err)
		}
		switch {
		case ob.unknown:
			c := r.a.objectChange("update", o, r.ns, true, r.acct.crds)
			r.add(c, "~ "+c.Object()+" (what it was before could not be read)", "update "+objectKey(o))
		case !r.acct.live || ob.before == nil:
			if r.acct.live && ob.after == nil && r.acct.snap != nil {
				continue // neither before nor after: not made
			}
			c := r.a.objectChange("create", o, r.ns, false, r.acct.crds)
			// What the new object is, as a create of its own reads.
			line := "+ " + c.Object()
			if sum := kubeapi.CreateSummary(o); len(sum) > 0 {
				line += " (" + strings.Join(sum, "; ") + ")"
			}
			short := "create " + objectKey(o)
			if r.acct.live && ob.prev != nil {
				line += " (gone from the cluster: recreated)"
				short += " (recreated)"
			}
			warn := judge(&c, nil, nil, o)
			r.add(c, line+warn, short)
		case len(ob.diff) > 0:
			c := r.a.objectChange("update", o, r.ns, true, r.acct.crds)
			var shown []string
			for _, d := range ob.diff {
				c.Paths = append(c.Paths, d.Path)
				hidden := c.Sensitive || catalog.SecretName.MatchString(d.Path) || r.acct.secretDerived(o, d)
				shown = append(shown, kubeapi.Line(d, hidden))
				c.Fields = append(c.Fields, kubeapi.FieldOf(d, hidden))
			}
			obj := placeName(&c)
			impact, rolls, pods := kubeapi.PodImpact(ob.before, ob.after, obj, 0)
			c.Pods = pods
			r.change.Pods.Add(pods)
			if rolls {
				c.Rollout = catalog.RolloutRolls
			}
			if impact != "" {
				c.Impact = impact
				impacts = append(impacts, impact)
			}
			if was, n := kubeapi.Replicas(ob.before), kubeapi.Replicas(ob.after); kubeapi.Workloads[o.GetKind()] && n == 0 && was > 0 {
				c.Signals = append(c.Signals, catalog.Signal{Name: kubeapi.SignalScaleToZero, Detail: fmt.Sprintf("%s %s scaled from %d to 0: it serves nothing", c.Kind, obj, was)})
			}
			line := "~ " + c.Object() + ": " + strings.Join(shown, "; ")
			warn := judge(&c, ob.prev, ob.before, ob.after)
			r.add(c, line+warn, "update "+objectKey(o)+": "+strings.Join(shown, "; "))
		}
	}
	r.change.Impact = strings.Join(impacts, "; ")
	return nil
}

// deletes accounts for the objects of the old revision the new one has
// not: an upgrade or rollback deletes what the cluster holds of them, an
// uninstall all, unless the object says keep (helm.sh/resource-policy).
// What a delete stops is read from the cluster's copy.
func (r *accountRun) deletes(old, now []*unstructured.Unstructured, uninstall bool) error {
	seen := map[string]bool{}
	for _, o := range now {
		seen[manifestID(o)] = true
	}
	var impacts []string
	for _, o := range old {
		if seen[manifestID(o)] {
			continue
		}
		var live *unstructured.Unstructured
		read := true
		if r.acct.snap != nil {
			live, read = r.acct.snap[manifestID(o)]
		} else {
			var err error
			if live, err = r.a.live(r.ctx, o, r.ns, r.acct); err != nil {
				return err
			}
		}
		if !uninstall && read && live == nil {
			continue
		}
		keep := o.GetAnnotations()["helm.sh/resource-policy"] == "keep"
		if live != nil && !uninstall {
			keep = live.GetAnnotations()["helm.sh/resource-policy"] == "keep"
		}
		if keep {
			continue
		}
		c := r.a.objectChange("delete", o, r.ns, true, r.acct.crds)
		obj := placeName(&c)
		if impact, _, pods := kubeapi.PodImpact(live, nil, obj, 0); impact != "" {
			c.Impact, c.Pods = impact, pods
			r.change.Pods.Add(pods)
			impacts = append(impacts, impact)
		}
		r.add(c, "- "+c.Object(), "delete "+objectKey(o))
	}
	if len(impacts) > 0 {
		r.change.Impact = strings.Join(append(nonEmpty(r.change.Impact), impacts...), "; ")
	}
	return nil
}

// nonEmpty is s as a list of one, or none when s is empty.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
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
	c := catalog.Change{Action: action, Kind: gvk.Kind, Group: gvk.Group, Name: o.GetName(), Existed: existed}
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

// placeName names c's object as impact lines do: "ns/name", or "name"
// when cluster-scoped.
func placeName(c *catalog.Change) string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}

// Signals are the signals the adapter's changes raise (bridge.Signaler):
// its releases' objects are judged as the Kubernetes adapter judges them.
func (a *Adapter) Signals() []catalog.SignalKind { return kubeapi.Signals }
