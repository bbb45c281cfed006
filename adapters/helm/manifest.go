package helm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// redacted replaces every secret value the adapter would otherwise return.
const redacted = "[redacted]"

// parseManifest splits a rendered manifest into objects, in Helm's install
// order. Empty documents are skipped.
func parseManifest(manifest string) ([]*unstructured.Unstructured, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out []*unstructured.Unstructured
	for _, k := range keys {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(docs[k]), &m); err != nil {
			return nil, fmt.Errorf("parse manifest: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, flatten(m)...)
	}
	return out, nil
}

// flatten returns the objects a document holds: itself, or, for a list
// (kind List or ...List, or any document with items), each of its items,
// as Helm creates them.
func flatten(m map[string]any) []*unstructured.Unstructured {
	items, isList := m["items"].([]any)
	kind, _ := m["kind"].(string)
	if !isList && !strings.HasSuffix(kind, "List") {
		return []*unstructured.Unstructured{{Object: m}}
	}
	var out []*unstructured.Unstructured
	for _, it := range items {
		if obj, ok := it.(map[string]any); ok {
			out = append(out, flatten(obj)...)
		}
	}
	return out
}

// objectKey names an object as drift rows and plans do: "Deployment/web".
func objectKey(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

// isSecret says whether o holds secret values (kubeapi.IsSecret of its
// kind).
func isSecret(o *unstructured.Unstructured) bool {
	return kubeapi.IsSecret(o.GetKind())
}

// hideSecrets returns objs with every Secret's values replaced: its data
// and stringData keep their keys, and the last-applied annotation, which
// would hold them too, is dropped.
func hideSecrets(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		if !isSecret(o) {
			out = append(out, o.Object)
			continue
		}
		c := o.DeepCopy()
		for _, field := range []string{"data", "stringData"} {
			if m, ok, _ := unstructured.NestedMap(c.Object, field); ok {
				for k := range m {
					m[k] = redacted
				}
				_ = unstructured.SetNestedMap(c.Object, m, field)
			}
		}
		ann := c.GetAnnotations()
		if _, ok := ann[kubeapi.LastApplied]; ok {
			delete(ann, kubeapi.LastApplied)
			c.SetAnnotations(ann)
		}
		out = append(out, c.Object)
	}
	return out
}
