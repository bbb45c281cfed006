package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"helm.sh/helm/v3/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/dynamic"
)

// live reads the cluster's copy of the manifest object o, or nil when
// there is none (or the cluster does not serve its kind).
func (a *Adapter) live(ctx context.Context, o *unstructured.Unstructured, releaseNS string, acct *accounting) (*unstructured.Unstructured, error) {
	rc, err := a.resourceFor(o, releaseNS)
	if rc == nil || err != nil {
		return nil, err
	}
	u, err := rc.Get(ctx, o.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// resourceFor is the client of o's resource (in its namespace, else the
// release's), or nil when the cluster does not serve its kind.
func (a *Adapter) resourceFor(o *unstructured.Unstructured, releaseNS string) (dynamic.ResourceInterface, error) {
	m, err := a.mappingFor(o)
	if m == nil || err != nil {
		return nil, err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource), nil
	}
	ns := o.GetNamespace()
	if ns == "" {
		ns = releaseNS
	}
	return a.dyn.Resource(m.Resource).Namespace(ns), nil
}

func (a *Adapter) mappingFor(o *unstructured.Unstructured) (*meta.RESTMapping, error) {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	return m, err
}

// dryRunUpdate is what Helm's upgrade or rollback leaves of live, the
// cluster's copy of the release's object target: the patch Helm sends
// (a three-way strategic merge of original, the object as the release's
// last revision made it, target and live; a JSON merge patch of original
// and target for kinds without a schema), sent to the API server as a dry
// run, so defaults, admission and what others set show as they will be.
// original is nil for an object the release adopts (the target stands for
// it, as in Helm).
func (a *Adapter) dryRunUpdate(ctx context.Context, original, target, live *unstructured.Unstructured, release, releaseNS string) (*unstructured.Unstructured, error) {
	m, err := a.mappingFor(target)
	if m == nil || err != nil {
		return nil, err
	}
	rc, _ := a.resourceFor(target, releaseNS)
	// What Helm's upgrade sends: the object with the release's marks
	// (setMetadataVisitor), in its namespace.
	target = target.DeepCopy()
	labels := target.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/managed-by"] = "Helm"
	target.SetLabels(labels)
	annotations := target.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["meta.helm.sh/release-name"] = release
	annotations["meta.helm.sh/release-namespace"] = releaseNS
	target.SetAnnotations(annotations)
	if original == nil {
		// An object the release adopts: Helm's original is the target
		// itself (performUpgrade adds the adopted to current), so the
		// patch removes nothing others set.
		original = target
	}
	original = original.DeepCopy()
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		for _, o := range []*unstructured.Unstructured{target, original} {
			if o.GetNamespace() == "" {
				o.SetNamespace(releaseNS)
			}
		}
	}
	oldData, err := json.Marshal(original)
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(target)
	if err != nil {
		return nil, err
	}
	var patch []byte
	pt := types.StrategicMergePatchType
	versioned := kube.AsVersioned(&resource.Info{Object: target, Mapping: m})
	if _, unstructured := versioned.(runtime.Unstructured); unstructured {
		pt = types.MergePatchType
		patch, err = jsonpatch.CreateMergePatch(oldData, newData)
	} else {
		var liveData []byte
		if liveData, err = json.Marshal(live); err != nil {
			return nil, err
		}
		var lookup strategicpatch.LookupPatchMeta
		if lookup, err = strategicpatch.NewPatchMetaFromStruct(versioned); err == nil {
			patch, err = strategicpatch.CreateThreeWayMergePatch(oldData, newData, liveData, lookup, true)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the patch Helm would send to %s %s: %w", target.GetKind(), target.GetName(), err)
	}
	if len(patch) == 0 || string(patch) == "{}" {
		return live, nil
	}
	return rc.Patch(ctx, target.GetName(), pt, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: kube.ManagedFieldsManager})
}

// snapshot reads the cluster's copies of the objects of manifests before
// a change applies them, by manifestID (nil: none there), so that what
// the change did is told live → live afterwards. An object whose read
// failed is left out.
func (a *Adapter) snapshot(ctx context.Context, releaseNS string, manifests ...string) map[string]*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	seen := map[string]bool{}
	for _, m := range manifests {
		parsed, _ := parseManifest(m)
		for _, o := range parsed {
			if id := manifestID(o); !seen[id] {
				seen[id] = true
				objs = append(objs, o)
			}
		}
	}
	out := make(map[string]*unstructured.Unstructured, len(objs))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(10)
	for _, o := range objs {
		g.Go(func() error {
			l, err := a.live(gctx, o, releaseNS, nil)
			if err == nil {
				mu.Lock()
				out[manifestID(o)] = l
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}
