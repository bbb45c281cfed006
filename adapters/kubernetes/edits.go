package kubernetes

import (
	"encoding/json"

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

// edits lists the changes a reviewer would name between before and after,
// read off their diff (kubeapi.Diff, what the cluster keeps for itself
// left out): one per scalar field changed, per list item added, removed or
// replaced, per block changed (blocks). Paths are named as in
// Change.Paths; items of lists without keys read "path[+]" (added),
// "path[-]" (removed) and "path[~]" (replaced).
func edits(before, after map[string]any) []string {
	b, a := kubeapi.Trim(before), kubeapi.Trim(after)
	var out []string
	seen := map[string]bool{}
	for _, d := range kubeapi.Diff(b, a) {
		for _, l := range d.Leaves() {
			for _, e := range editOf(l, b, a) {
				if !seen[e] {
					seen[e] = true
					out = append(out, e)
				}
			}
		}
	}
	drop, more := replacedContainers("", b, a)
	if len(drop) == 0 {
		return out
	}
	kept := out[:0]
	for _, e := range out {
		if !drop[e] {
			kept = append(kept, e)
		}
	}
	return append(kept, more...)
}

// replacedContainers finds containers replaced by others of another name
// in the same list (a removed one paired with an added one, in order):
// such a replacement counts every field it changes, as an edit of the
// container would, not one removal and one addition (a renamed container
// with a new image, privileged, mounting the node's root is not 2 edits).
// It returns the edits to drop and the ones that replace them.
func replacedContainers(path string, before, after any) (drop map[string]bool, more []string) {
	bm, ok1 := before.(map[string]any)
	am, ok2 := after.(map[string]any)
	if !ok1 || !ok2 {
		return nil, nil
	}
	drop = map[string]bool{}
	for k, av := range am {
		p := kubeapi.JoinPath(path, k)
		if !containerLists[k] {
			d, m := replacedContainers(p, bm[k], av)
			for e := range d {
				drop[e] = true
			}
			more = append(more, m...)
			continue
		}
		ol, _ := bm[k].([]any)
		nl, _ := av.([]any)
		gone, added := unmatched(ol, nl), unmatched(nl, ol)
		for i := 0; i < min(len(gone), len(added)); i++ {
			oc, nc := gone[i], added[i]
			on, nn := oc["name"].(string), nc["name"].(string)
			drop[p+"["+on+"]"], drop[p+"["+nn+"]"] = true, true
			for _, e := range edits(oc, nc) {
				more = append(more, p+"["+nn+"]."+e)
			}
		}
	}
	return drop, more
}

// unmatched are the named items of list whose name other lacks.
func unmatched(list, other []any) []map[string]any {
	names := map[string]bool{}
	for _, it := range other {
		if m, ok := it.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names[n] = true
			}
		}
	}
	var out []map[string]any
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			if n, ok := m["name"].(string); ok && !names[n] {
				out = append(out, m)
			}
		}
	}
	return out
}

// editOf names the edits a leaf of the diff of before and after belongs
// to: the first block on its way, an item of a list other than a
// container list (or a container added or removed), a list without keys
// as a whole (multisetEdits), else the leaf itself.
func editOf(l kubeapi.Delta, before, after any) []string {
	o, n := before, after
	path, field := "", ""
	for _, k := range l.Keys {
		v := o
		if v == nil {
			v = n
		}
		switch v.(type) {
		case map[string]any:
			path, field = kubeapi.JoinPath(path, k), k
			if blocks[k] {
				return []string{path}
			}
			o, n = child(o, k), child(n, k)
		case []any:
			ol, _ := o.([]any)
			nl, _ := n.([]any)
			if kubeapi.ListKey(ol, nl) == "" {
				return multisetEdits(path, ol, nl)
			}
			o, n = item(ol, k), item(nl, k)
			path += "[" + k + "]"
			if !containerLists[field] || o == nil || n == nil {
				return []string{path}
			}
		default:
			return []string{path}
		}
	}
	ol, oIsList := l.Old.([]any)
	nl, nIsList := l.New.([]any)
	if (oIsList || !l.HasOld) && (nIsList || !l.HasNew) && (oIsList || nIsList) {
		return multisetEdits(path, ol, nl)
	}
	return []string{path}
}

// child is v's field k, or nil.
func child(v any, k string) any {
	m, _ := v.(map[string]any)
	return m[k]
}

// item is the item of list that key names (kubeapi.Lookup), or nil.
func item(list []any, key string) any {
	if list == nil {
		return nil
	}
	v, _ := kubeapi.Lookup(list, []string{key})
	return v
}

// multisetEdits compares two lists without keys: lists of scalars as one
// field, others as multisets of items (a replaced item is one edit).
func multisetEdits(path string, o, n []any) []string {
	if scalars(o) && scalars(n) {
		return []string{path}
	}
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
