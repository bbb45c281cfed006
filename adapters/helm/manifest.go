package helm

import (
	"fmt"
	"github.com/kubecode/kubecode/adapters/kubeapi"
	"reflect"
	"sort"
	"strconv"
	"strings"

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
// group and kind).
func isSecret(o *unstructured.Unstructured) bool {
	return kubeapi.IsSecret(o.GroupVersionKind().Group, o.GetKind())
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

// delta is one difference between two JSON values at a path: want is what
// a release sets (nil with !hasWant when it sets nothing there), got what
// the cluster holds.
type delta struct {
	path    string   // spec.template.spec.containers[web].image
	pointer []string // JSON pointer segments into the cluster's object
	keys    []string // the same segments with array items named by their key where they have one
	want    any
	got     any
	hasWant bool
	hasGot  bool
}

// diffValues appends the differences between want and got below path.
// Maps are compared key by key; lists whose items have a key (name,
// mountPath, containerPort, ...) item by item, as Kubernetes merges them;
// other lists of equal length index by index, and the rest whole.
func diffValues(out []delta, path string, ptr, keys []string, want, got any, hasWant, hasGot bool) []delta {
	if hasWant && hasGot && reflect.DeepEqual(want, got) {
		return out
	}
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		names := make([]string, 0, len(wm)+len(gm))
		for k := range wm {
			names = append(names, k)
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			wv, hw := wm[k]
			gv, hg := gm[k]
			out = diffValues(out, joinPath(path, k), append(clip(ptr), k), append(clip(keys), k), wv, gv, hw, hg)
		}
		return out
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok {
		if key := listKey(wl, gl); key != "" {
			gotAt := map[string]int{}
			for i, item := range gl {
				gotAt[itemKey(item, key)] = i
			}
			seen := map[string]bool{}
			for _, item := range wl {
				k := itemKey(item, key)
				seen[k] = true
				seg := "[" + k + "]"
				if i, ok := gotAt[k]; ok {
					out = diffValues(out, path+seg, append(clip(ptr), strconv.Itoa(i)), append(clip(keys), k), item, gl[i], true, true)
				} else {
					out = append(out, delta{path: path + seg, pointer: append(clip(ptr), "-"), keys: append(clip(keys), k), want: item, hasWant: true})
				}
			}
			for i, item := range gl {
				if k := itemKey(item, key); !seen[k] {
					out = append(out, delta{path: path + "[" + k + "]", pointer: append(clip(ptr), strconv.Itoa(i)), keys: append(clip(keys), k), got: item, hasGot: true})
				}
			}
			return out
		}
		if len(wl) == len(gl) {
			for i := range wl {
				seg := strconv.Itoa(i)
				out = diffValues(out, path+"["+seg+"]", append(clip(ptr), seg), append(clip(keys), seg), wl[i], gl[i], true, true)
			}
			return out
		}
	}
	return append(out, delta{path: path, pointer: clip(ptr), keys: clip(keys), want: want, got: got, hasWant: hasWant, hasGot: hasGot})
}

// clip returns s with no spare capacity, so appends copy.
func clip(s []string) []string { return s[:len(s):len(s)] }

func joinPath(path, k string) string {
	if strings.ContainsAny(k, "./[]") {
		k = "[" + k + "]"
		return path + k
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// listKeys are the fields that identify the items of Kubernetes' merged
// lists, in the order they are tried.
var listKeys = []string{"name", "mountPath", "devicePath", "containerPort", "port", "ip", "type", "topologyKey"}

// listKey returns the field every item of both lists has and whose values
// are unique in each, or "".
func listKey(a, b []any) string {
	for _, k := range listKeys {
		if keyed(a, k) && keyed(b, k) {
			return k
		}
	}
	return ""
}

func keyed(list []any, key string) bool {
	seen := map[string]bool{}
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		v, ok := m[key]
		if !ok {
			return false
		}
		s := fmt.Sprint(v)
		if seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

func itemKey(item any, key string) string {
	m, _ := item.(map[string]any)
	return fmt.Sprint(m[key])
}

// trimObject returns the parts of obj a release sets and drift compares:
// everything but apiVersion, kind, status and metadata other than labels,
// annotations, finalizers and owner references.
func trimObject(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			md, _ := v.(map[string]any)
			keep := map[string]any{}
			for _, f := range []string{"labels", "annotations", "finalizers", "ownerReferences"} {
				if x, ok := md[f]; ok {
					keep[f] = x
				}
			}
			if len(keep) > 0 {
				out[k] = keep
			}
			continue
		}
		out[k] = v
	}
	return out
}
