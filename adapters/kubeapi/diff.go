package kubeapi

import (
	"encoding/json"
	"fmt"
	"github.com/kubecode/kubecode/catalog"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Delta is one difference between two values at a path: Old is what the
// first holds there (absent when !HasOld), New what the second holds
// (absent when !HasNew). Plans diff an object before and after a change;
// drift diffs what a release sets against what the cluster holds.
type Delta struct {
	// Path names the field as plans, drift rows and Change.Paths show it:
	// fields dotted, list items by their key where they have one
	// ("spec.template.spec.containers[web].image") or else by index, and
	// a key holding ".", "/", "[" or "]" in brackets
	// ("metadata.annotations[checksum/config]").
	Path string
	// Pointer is the field's JSON pointer into the new value, unescaped
	// segments; for an item only the old value has, it ends in "-" (where
	// an append would put it). Nil for the leaves of a removed value.
	Pointer []string
	// Keys are the same segments with list items named as Path names
	// them: Lookup follows them into either value.
	Keys []string
	// KeyField is, for an item of a keyed list only one side has, the
	// field that names it ("name", "containerPort"): Leaves leaves it out.
	KeyField string
	Old      any
	New      any
	HasOld   bool
	HasNew   bool
}

// Diff lists the differences between old and new. Maps are compared key
// by key; lists whose items have a key (name, mountPath, containerPort,
// ...) item by item, as Kubernetes merges them; other lists of equal
// length index by index, and the rest whole. A map or item present on one
// side only is one delta: Leaves splits it into its fields.
func Diff(old, new any) []Delta {
	return diff(nil, "", nil, nil, old, new, true, true)
}

func diff(out []Delta, path string, ptr, keys []string, old, new any, hasOld, hasNew bool) []Delta {
	if hasOld && hasNew && reflect.DeepEqual(old, new) {
		return out
	}
	om, ook := old.(map[string]any)
	nm, nok := new.(map[string]any)
	if ook && nok {
		for _, k := range unionKeys(om, nm) {
			ov, ho := om[k]
			nv, hn := nm[k]
			out = diff(out, JoinPath(path, k), append(clip(ptr), k), append(clip(keys), k), ov, nv, ho, hn)
		}
		return out
	}
	ol, ook := old.([]any)
	nl, nok := new.([]any)
	if ook && nok {
		if key := listKey(ol, nl); key != "" {
			newAt := map[string]int{}
			for i, item := range nl {
				newAt[itemKey(item, key)] = i
			}
			seen := map[string]bool{}
			for _, item := range ol {
				k := itemKey(item, key)
				seen[k] = true
				seg := "[" + k + "]"
				if i, ok := newAt[k]; ok {
					out = diff(out, path+seg, append(clip(ptr), strconv.Itoa(i)), append(clip(keys), k), item, nl[i], true, true)
				} else {
					out = append(out, Delta{Path: path + seg, Pointer: append(clip(ptr), "-"), Keys: append(clip(keys), k), KeyField: key, Old: item, HasOld: true})
				}
			}
			for i, item := range nl {
				if k := itemKey(item, key); !seen[k] {
					out = append(out, Delta{Path: path + "[" + k + "]", Pointer: append(clip(ptr), strconv.Itoa(i)), Keys: append(clip(keys), k), KeyField: key, New: item, HasNew: true})
				}
			}
			return out
		}
		if len(ol) == len(nl) {
			for i := range ol {
				seg := strconv.Itoa(i)
				out = diff(out, path+"["+seg+"]", append(clip(ptr), seg), append(clip(keys), seg), ol[i], nl[i], true, true)
			}
			return out
		}
	}
	return append(out, Delta{Path: path, Pointer: clip(ptr), Keys: clip(keys), Old: old, New: new, HasOld: hasOld, HasNew: hasNew})
}

// Leaves splits a delta whose value is present on one side only into one
// delta per field that value sets: the fields of a map, the items of a
// keyed list by their key (the key itself no field of its own), an empty
// map or a list without keys whole. Strategic-merge directives ("$patch",
// "$setElementOrder/...") are no fields. Any other delta is its own leaf.
func (d Delta) Leaves() []Delta {
	if d.HasOld == d.HasNew {
		return []Delta{d}
	}
	v := d.New
	if d.HasOld {
		v = d.Old
	}
	var out []Delta
	var walk func(leaf Delta, v any)
	// walkItem walks a keyed list's item, its key no field of its own.
	walkItem := func(leaf Delta, item map[string]any, key string) {
		rest := make(map[string]any, len(item))
		for f, fv := range item {
			if f != key {
				rest[f] = fv
			}
		}
		if len(rest) == 0 {
			leaf.Old, leaf.New = pick(d, item)
			out = append(out, leaf)
			return
		}
		walk(leaf, rest)
	}
	walk = func(leaf Delta, v any) {
		child := func(path, ptrSeg, keySeg string) Delta {
			c := Delta{Path: path, Keys: append(clip(leaf.Keys), keySeg), HasOld: d.HasOld, HasNew: d.HasNew}
			if d.HasNew {
				c.Pointer = append(clip(leaf.Pointer), ptrSeg)
			}
			return c
		}
		switch t := v.(type) {
		case map[string]any:
			n := 0
			for _, k := range sortedKeys(t) {
				if strings.HasPrefix(k, "$") {
					continue
				}
				n++
				walk(child(JoinPath(leaf.Path, k), k, k), t[k])
			}
			if n > 0 {
				return
			}
		case []any:
			if key := listKey(t, t); key != "" {
				for i, item := range t {
					k := itemKey(item, key)
					walkItem(child(leaf.Path+"["+k+"]", strconv.Itoa(i), k), item.(map[string]any), key)
				}
				return
			}
		}
		leaf.Old, leaf.New = pick(d, v)
		out = append(out, leaf)
	}
	root := d
	root.Old, root.New, root.KeyField = nil, nil, ""
	if d.HasOld {
		root.Pointer = nil
	}
	if m, ok := v.(map[string]any); ok && d.KeyField != "" {
		walkItem(root, m, d.KeyField)
	} else {
		walk(root, v)
	}
	return out
}

// pick puts v on the side d has.
func pick(d Delta, v any) (old, new any) {
	if d.HasOld {
		return v, nil
	}
	return nil, v
}

// Leaves lists the paths of the fields v sets below path (Delta.Leaves of
// v as a new value), sorted: what a patch or a manifest sets.
func Leaves(v any, path string) []string {
	var out []string
	for _, l := range (Delta{Path: path, New: v, HasNew: true}).Leaves() {
		out = append(out, l.Path)
	}
	sort.Strings(out)
	return out
}

// Trim returns the parts of an object its owner sets, which plans and
// drift compare: everything but apiVersion, kind, status and the metadata
// the cluster keeps (uid, resourceVersion, generation, timestamps,
// managedFields, a Deployment's revision annotation); labels, annotations,
// finalizers and owner references stay. obj is not changed.
func Trim(obj map[string]any) map[string]any {
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
			if ann, ok := keep["annotations"].(map[string]any); ok {
				if _, ok := ann[revisionAnnotation]; ok {
					c := make(map[string]any, len(ann))
					for ak, av := range ann {
						if ak != revisionAnnotation {
							c[ak] = av
						}
					}
					keep["annotations"] = c
					if len(c) == 0 {
						delete(keep, "annotations")
					}
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

// Normalize returns v as JSON decodes it: every number a float64, every
// map a map[string]any (labels from the API are map[string]string), so
// that Diff compares values, not Go types. v is returned as it is when it
// is no JSON.
func Normalize(v map[string]any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// revisionAnnotation is the Deployment controller's count of rollouts.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// LastAppliedPath is where an object keeps kubectl's last applied
// manifest, as Delta.Path names it.
var LastAppliedPath = JoinPath("metadata.annotations", LastApplied)

// Line shows a delta to whoever reviews a change: "path: old → new", each
// value as JSON cut to 60 characters, "(none)" for an absent one; kubectl's
// last-applied record by its size; with hidden (a Secret's field, a
// password), only that it changes.
func Line(d Delta, hidden bool) string {
	switch {
	case hidden:
		return d.Path + ": changed (value not shown)"
	case d.Path == LastAppliedPath:
		return d.Path + ": " + size(d.Old, d.HasOld) + " → " + size(d.New, d.HasNew)
	}
	if d.HasOld && d.HasNew {
		old, new := showPair(full(d.Old, true), full(d.New, true))
		return d.Path + ": " + old + " → " + new
	}
	return d.Path + ": " + Show(d.Old, d.HasOld) + " → " + Show(d.New, d.HasNew)
}

// FieldOf is d as a reviewer reads it in full (catalog.Field): hidden
// shows no value.
// A value longer than maxField is cut there (a plan's record keeps every
// field of every change), and kubectl's last-applied configuration is
// shown by its size, as Line shows it.
func FieldOf(d Delta, hidden bool) catalog.Field {
	switch {
	case hidden:
		return catalog.Field{Path: d.Path, Before: hiddenValue(d.HasOld), After: hiddenValue(d.HasNew)}
	case d.Path == LastAppliedPath:
		return catalog.Field{Path: d.Path, Before: size(d.Old, d.HasOld), After: size(d.New, d.HasNew)}
	}
	return catalog.Field{Path: d.Path, Before: bounded(full(d.Old, d.HasOld)), After: bounded(full(d.New, d.HasNew))}
}

// maxField is how much of one value a Field holds, in bytes.
const maxField = 8 << 10

func bounded(s string) string {
	if len(s) <= maxField {
		return s
	}
	cut := maxField
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", s[:cut], len(s))
}

func hiddenValue(present bool) string {
	if !present {
		return "(none)"
	}
	return "(value not shown)"
}

// full is v as JSON, or "(none)" when absent.
func full(v any, present bool) string {
	if !present {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// maxShown is how many characters of a value a plan line shows.
const maxShown = 60

// Show is v as JSON cut to 60 characters, or "(none)" when absent.
func Show(v any, present bool) string {
	return cut(full(v, present))
}

func cut(s string) string {
	if r := []rune(s); len(r) > maxShown {
		return string(r[:maxShown-3]) + "…"
	}
	return s
}

// showPair shows two values of one field in a plan line: whole when
// short, else cut only where they agree — the start and end both share
// are elided around where they differ — so that a line never reads the
// same on both sides of its arrow.
func showPair(a, b string) (string, string) {
	ra, rb := []rune(a), []rune(b)
	if len(ra) <= maxShown && len(rb) <= maxShown {
		return a, b
	}
	p := 0
	for p < len(ra) && p < len(rb) && ra[p] == rb[p] {
		p++
	}
	s := 0
	for s < len(ra)-p && s < len(rb)-p && ra[len(ra)-1-s] == rb[len(rb)-1-s] {
		s++
	}
	const context = 12
	show := func(r []rune) string {
		var sb strings.Builder
		start := 0
		if p > context {
			start = p - context
			sb.WriteString("…")
		}
		end := len(r)
		if s > context {
			end = len(r) - s + context
		}
		mid := r[start:end]
		if len(mid) > maxShown {
			sb.WriteString(string(mid[:maxShown-3]) + "…")
			return sb.String()
		}
		sb.WriteString(string(mid))
		if end < len(r) {
			sb.WriteString("…")
		}
		return sb.String()
	}
	return show(ra), show(rb)
}

func size(v any, present bool) string {
	if !present {
		return "(none)"
	}
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%d bytes", len(s))
	}
	b, _ := json.Marshal(v)
	return fmt.Sprintf("%d bytes of JSON", len(b))
}

// JoinPath adds the field k to path as Delta.Path names it.
func JoinPath(path, k string) string {
	if strings.ContainsAny(k, "./[]") {
		return path + "[" + k + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// ItemKey names the i-th item of list as Delta.Path and Delta.Keys do:
// by its key when the list's items have one, else by its index.
func ItemKey(list []any, i int) string {
	if key := listKey(list, list); key != "" {
		return itemKey(list[i], key)
	}
	return strconv.Itoa(i)
}

// Lookup follows keys (Delta.Keys: fields, list items by key or index)
// into v.
func Lookup(v any, keys []string) (any, bool) {
	cur := v
	for _, k := range keys {
		switch t := cur.(type) {
		case map[string]any:
			x, ok := t[k]
			if !ok {
				return nil, false
			}
			cur = x
		case []any:
			found := false
			if key := listKey(t, t); key != "" {
				for _, item := range t {
					if itemKey(item, key) == k {
						cur, found = item, true
						break
					}
				}
			} else if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < len(t) {
				cur, found = t[i], true
			}
			if !found {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return cur, true
}

// listKeys are the fields that identify the items of Kubernetes' merged
// lists, in the order they are tried.
var listKeys = []string{"name", "mountPath", "devicePath", "containerPort", "port", "ip", "type", "topologyKey"}

// ListKey is the field that names the items of lists a and b (the old
// and new values of one list), by which Diff compares them: the first of
// name, mountPath, devicePath, containerPort, port, ip, type and
// topologyKey that every item of both has, unique in each; "" when none
// does or both are empty.
func ListKey(a, b []any) string { return listKey(a, b) }

func listKey(a, b []any) string {
	if len(a) == 0 && len(b) == 0 {
		return ""
	}
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

// clip returns s with no spare capacity, so appends copy.
func clip(s []string) []string { return s[:len(s):len(s)] }

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
