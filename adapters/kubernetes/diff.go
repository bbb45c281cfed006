package kubernetes

import (
	"encoding/json"
	"fmt"
	"github.com/kubecode/kubecode/adapters/kubeapi"
	"slices"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// leafPaths lists the dotted paths of the leaves of a patch or manifest:
// what it sets. Items of lists of named objects (containers, ports) are
// addressed by name, "spec.containers[web].image"; other lists count as
// one leaf. Strategic-merge directives ("$patch") are not fields. With
// manifest, the object's identity (apiVersion, kind, metadata.name and
// namespace) is left out.
func leafPaths(v any, prefix string, manifest bool) []string {
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				out = append(out, path)
				return
			}
			for k, val := range t {
				if strings.HasPrefix(k, "$") {
					continue
				}
				p := k
				if path != "" {
					p = path + "." + k
				}
				if manifest && (p == "apiVersion" || p == "kind" || p == "metadata.name" || p == "metadata.namespace" || p == "metadata") {
					if m, ok := val.(map[string]any); ok && p == "metadata" {
						walk(m, p)
					}
					continue
				}
				walk(val, p)
			}
		case []any:
			named := len(t) > 0
			for _, item := range t {
				m, ok := item.(map[string]any)
				if !ok {
					named = false
					break
				}
				if _, ok := m["name"].(string); !ok {
					named = false
					break
				}
			}
			if !named {
				out = append(out, path)
				return
			}
			for _, item := range t {
				m := item.(map[string]any)
				base := fmt.Sprintf("%s[%s]", path, m["name"])
				rest := make(map[string]any, len(m))
				for k, val := range m {
					if k != "name" {
						rest[k] = val
					}
				}
				if len(rest) == 0 {
					out = append(out, base)
					continue
				}
				walk(rest, base)
			}
		default:
			out = append(out, path)
		}
	}
	walk(v, prefix)
	sort.Strings(out)
	return out
}

// patchPaths checks a patch and returns its type and the paths it sets.
func patchPaths(typ string, patch json.RawMessage) (types.PatchType, []string, error) {
	switch typ {
	case "", "strategic", "merge":
		var m map[string]any
		if err := json.Unmarshal(patch, &m); err != nil {
			return "", nil, badRequest("a %s patch is an object of the fields to change, e.g. {spec: {replicas: 3}}", orDefault(typ, "strategic"))
		}
		pt := types.StrategicMergePatchType
		if typ == "merge" {
			pt = types.MergePatchType
		}
		return pt, leafPaths(m, "", false), nil
	case "json":
		var ops []struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}
		if err := json.Unmarshal(patch, &ops); err != nil || len(ops) == 0 {
			return "", nil, badRequest(`a json patch is a list of operations, e.g. [{op: "replace", path: "/spec/replicas", value: 3}]`)
		}
		var paths []string
		for _, o := range ops {
			if o.Op == "test" {
				continue
			}
			p := strings.ReplaceAll(strings.TrimPrefix(o.Path, "/"), "/", ".")
			p = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
			paths = append(paths, p)
		}
		sort.Strings(paths)
		return types.JSONPatchType, slices.Compact(paths), nil
	}
	return "", nil, badRequest("patch type is %q: use strategic (the default for built-in kinds), merge or json", typ)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// maxDiffLines bounds a change's diff summary.
const maxDiffLines = 12

// changedPaths lists the leaf paths whose values differ between before
// and after (added, removed or changed), bookkeeping left out.
func changedPaths(before, after *unstructured.Unstructured) (paths []string, old, now map[string]string) {
	old, now = flatten(before.Object), flatten(after.Object)
	for k, o := range old {
		if n, ok := now[k]; (!ok || n != o) && !ignoredInDiff(k) {
			paths = append(paths, k)
		}
	}
	for k := range now {
		if _, ok := old[k]; !ok && !ignoredInDiff(k) {
			paths = append(paths, k)
		}
	}
	sort.Strings(paths)
	return paths, old, now
}

// objectDiff summarizes how after differs from before: "path: old → new"
// lines for the fields that changed, bookkeeping left out. For a sensitive
// object no value is shown, only which fields change, and nowhere is the
// value of a secret-looking field (a password env var, a token).
func objectDiff(before, after *unstructured.Unstructured, w *write, sensitive bool) []string {
	switch {
	case w.verb == "delete":
		return []string{"deleted"}
	case before == nil:
		created := "created"
		if sensitive {
			created = "created (values not shown)"
		}
		return append([]string{created}, kubeapi.CreateSummary(after)...)
	}
	keys, old, now := changedPaths(before, after)
	// A field the server leaves out when it is zero ("replicas": 0 in a
	// Scale, "paused": false) is what the patch set it to, not removed.
	var set map[string]string
	if m, ok := jsonObject(w.patch); ok {
		set = flatten(m)
	}
	var lines []string
	for _, k := range keys {
		o, hadOld := old[k]
		n, hasNew := now[k]
		if !hasNew {
			n, hasNew = set[k]
		}
		switch {
		case sensitive || catalog.SecretName.MatchString(k):
			lines = append(lines, k+": changed (value not shown)")
		case k == lastAppliedPath:
			lines = append(lines, fmt.Sprintf("%s: %s → %s", k, size(o, hadOld), size(n, hasNew)))
		case !hadOld:
			lines = append(lines, k+": (none) → "+short(n))
		case !hasNew:
			lines = append(lines, k+": "+short(o)+" → (none)")
		default:
			lines = append(lines, k+": "+short(o)+" → "+short(n))
		}
	}
	if len(lines) == 0 {
		return []string{"no change"}
	}
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines-1], fmt.Sprintf("… %d more fields", len(lines)-maxDiffLines+1))
	}
	return lines
}

// lastAppliedPath is kubectl's record of what it applied: a whole
// manifest, shown by its size.
const lastAppliedPath = "metadata.annotations." + kubeapi.LastApplied

// size shows a long value by its size.
func size(v string, present bool) string {
	if !present {
		return "(none)"
	}
	return fmt.Sprintf("%d bytes", len(v))
}

// jsonObject decodes b when it is a JSON object (a merge or strategic
// merge patch; not a JSON patch).
func jsonObject(b []byte) (map[string]any, bool) {
	var m map[string]any
	if len(b) == 0 || json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	return m, true
}

// ignoredInDiff are fields the server keeps for itself.
func ignoredInDiff(path string) bool {
	for _, p := range []string{"metadata.resourceVersion", "metadata.generation", "metadata.managedFields", "metadata.uid",
		"metadata.creationTimestamp", "metadata.selfLink", "status", "metadata.annotations.deployment.kubernetes.io/revision"} {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

// flatten maps the leaf paths of v to their JSON values.
func flatten(v map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case map[string]any:
			for k, val := range t {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(val, p)
			}
		case []any:
			for i, item := range t {
				if m, ok := item.(map[string]any); ok {
					if name, ok := m["name"].(string); ok {
						walk(item, fmt.Sprintf("%s[%s]", path, name))
						continue
					}
				}
				walk(item, fmt.Sprintf("%s[%d]", path, i))
			}
		default:
			b, _ := json.Marshal(t)
			out[path] = string(b)
		}
	}
	walk(v, "")
	return out
}

// short cuts a JSON value to at most 60 characters.
func short(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:57]) + "…"
	}
	return s
}
