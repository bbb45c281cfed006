package kubernetes

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// leafPaths lists the paths of the fields a patch or manifest sets
// (kubeapi.Leaves). With manifest, the object's identity (apiVersion, kind,
// metadata.name and namespace) is left out.
func leafPaths(v map[string]any, manifest bool) []string {
	if manifest {
		c := make(map[string]any, len(v))
		for k, val := range v {
			switch k {
			case "apiVersion", "kind":
			case "metadata":
				md, _ := val.(map[string]any)
				rest := map[string]any{}
				for mk, mv := range md {
					if mk != "name" && mk != "namespace" {
						rest[mk] = mv
					}
				}
				if len(rest) > 0 {
					c[k] = rest
				}
			default:
				c[k] = val
			}
		}
		if len(c) == 0 {
			return nil
		}
		v = c
	}
	return kubeapi.Leaves(v, "")
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
		return pt, leafPaths(m, false), nil
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
			p := ""
			for _, seg := range strings.Split(strings.TrimPrefix(o.Path, "/"), "/") {
				p = kubeapi.JoinPath(p, strings.NewReplacer("~1", "/", "~0", "~").Replace(seg))
			}
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

// changes lists the fields whose values differ between before and after
// (added, removed or changed), each a leaf (kubeapi.Delta.Leaves), what
// the cluster keeps for itself left out (kubeapi.Trim).
func changes(before, after *unstructured.Unstructured) []kubeapi.Delta {
	var out []kubeapi.Delta
	for _, d := range kubeapi.Diff(kubeapi.Trim(before.Object), kubeapi.Trim(after.Object)) {
		out = append(out, d.Leaves()...)
	}
	return out
}

// changedPaths are the paths of changes(before, after).
func changedPaths(before, after *unstructured.Unstructured) []string {
	var paths []string
	for _, d := range changes(before, after) {
		paths = append(paths, d.Path)
	}
	return paths
}

// noChange is the diff of a change that leaves the object as it was.
const noChange = "no change"

// objectDiff summarizes how after differs from before: a kubeapi.Line for
// each field that changes (at most maxDiffLines), and each field whole
// (kubeapi.FieldOf). For a sensitive object no value is shown, only which
// fields change, and nowhere is the value of a secret-looking field (a
// password env var, a token).
func objectDiff(before, after *unstructured.Unstructured, w *write, sensitive bool) ([]string, []catalog.Field) {
	switch {
	case w.verb == "delete":
		return []string{"deleted"}, nil
	case before == nil:
		created := "created"
		if sensitive {
			created = "created (values not shown)"
		}
		// Every field it is made with, whole, for the page and kubecode
		// plans: what a reviewer reads beyond the summary.
		var fields []catalog.Field
		for _, d := range changes(&unstructured.Unstructured{Object: map[string]any{}}, after) {
			fields = append(fields, kubeapi.FieldOf(d, sensitive || catalog.SecretName.MatchString(d.Path)))
		}
		return append([]string{created}, kubeapi.CreateSummary(after)...), fields
	}
	// A field the server leaves out when it is zero ("replicas": 0 in a
	// Scale, "paused": false) is what the patch set it to, not removed.
	var set map[string]any
	if len(w.patch) > 0 && json.Unmarshal(w.patch, &set) != nil {
		set = nil
	}
	var lines []string
	var fields []catalog.Field
	for _, d := range changes(before, after) {
		if !d.HasNew && set != nil {
			d.New, d.HasNew = kubeapi.Lookup(set, d.Keys)
		}
		hidden := sensitive || catalog.SecretName.MatchString(d.Path)
		lines = append(lines, kubeapi.Line(d, hidden))
		fields = append(fields, kubeapi.FieldOf(d, hidden))
	}
	if len(lines) == 0 {
		return []string{noChange}, nil
	}
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines-1], fmt.Sprintf("… %d more fields (all of them on the approval page and in kubecode plans ID)", len(lines)-maxDiffLines+1))
	}
	return lines, fields
}
