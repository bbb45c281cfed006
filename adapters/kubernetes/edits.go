package kubernetes

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/adapters/kubeapi"
)

// blocks are fields a reviewer reads as one change however many leaves
// they hold: one container's resources, a probe, a security context.
var blocks = map[string]bool{
	"resources": true, "livenessProbe": true, "readinessProbe": true, "startupProbe": true,
	"securityContext": true, "affinity": true, "strategy": true, "updateStrategy": true,
	"lifecycle": true, "dnsConfig": true, "topologySpreadConstraints": true,
}

// containerLists are lists of named items whose fields are each a change
// of its own (a container's image, its resources, an env var).
var containerLists = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true}

// edits lists the changes a reviewer would name between before and after:
// one per scalar field changed, per list item added, removed or replaced,
// per block changed (blocks). What the cluster keeps for itself
// (kubeapi.Trim) and fields that did not change do not count. Paths are dotted as in Change.Paths;
// items of lists without names read "path[+]" (added), "path[-]"
// (removed) and "path[~]" (replaced).
func edits(before, after map[string]any) []string {
	var out []string
	var walk func(path string, o, n any)
	walk = func(path string, o, n any) {
		if reflect.DeepEqual(o, n) {
			return
		}
		if blocks[lastKey(path)] {
			out = append(out, path)
			return
		}
		om, oIsMap := o.(map[string]any)
		nm, nIsMap := n.(map[string]any)
		if (oIsMap || o == nil) && (nIsMap || n == nil) && (oIsMap || nIsMap) {
			for _, k := range unionKeys(om, nm) {
				walk(kubeapi.JoinPath(path, k), om[k], nm[k])
			}
			return
		}
		ol, oIsList := o.([]any)
		nl, nIsList := n.([]any)
		if (oIsList || o == nil) && (nIsList || n == nil) && (oIsList || nIsList) {
			out = append(out, listEdits(path, ol, nl, walk)...)
			return
		}
		out = append(out, path)
	}
	walk("", kubeapi.Trim(before), kubeapi.Trim(after))
	return out
}

// listEdits compares two lists: items with names by name (a container's
// fields each count, other items count whole), items without names as
// multisets (a replaced item is one edit), lists of scalars as one field.
func listEdits(path string, o, n []any, walk func(string, any, any)) []string {
	if named(o) && named(n) {
		om, nm := byName(o), byName(n)
		var out []string
		for _, name := range unionKeys(om, nm) {
			item := fmt.Sprintf("%s[%s]", path, name)
			a, hadA := om[name]
			b, hasB := nm[name]
			switch {
			case reflect.DeepEqual(a, b):
			case hadA && hasB && containerLists[lastKey(path)]:
				walk(item, a, b) // a container's fields each count

			default:
				out = append(out, item)
			}
		}
		return out
	}
	if scalars(o) && scalars(n) {
		return []string{path}
	}
	// Multisets of items: what is in one and not the other.
	count := map[string]int{}
	for _, it := range o {
		count[canonical(it)]++
	}
	added := 0
	for _, it := range n {
		k := canonical(it)
		if count[k] > 0 {
			count[k]--
			continue
		}
		added++
	}
	removed := 0
	for _, c := range count {
		removed += c
	}
	var out []string
	for i := 0; i < max(added, removed); i++ {
		switch {
		case i < min(added, removed):
			out = append(out, path+"[~]")
		case added > removed:
			out = append(out, path+"[+]")
		default:
			out = append(out, path+"[-]")
		}
	}
	return out
}

// named says whether every item of l is an object with a string name
// (an empty list is named: items of it added or removed count by name).
func named(l []any) bool {
	seen := map[string]bool{}
	for _, it := range l {
		m, ok := it.(map[string]any)
		if !ok {
			return false
		}
		name, ok := m["name"].(string)
		if !ok || seen[name] {
			return false
		}
		seen[name] = true
	}
	return true
}

func byName(l []any) map[string]any {
	out := make(map[string]any, len(l))
	for _, it := range l {
		m := it.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

// scalars says whether no item of l is an object or a list.
func scalars(l []any) bool {
	for _, it := range l {
		switch it.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func canonical(v any) string {
	b, _ := json.Marshal(v) // map keys sorted
	return string(b)
}

// lastKey is the last field name of a dotted path, without an item.
func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}

// unionKeys are the keys of a and b, sorted.
func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
