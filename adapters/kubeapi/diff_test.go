package kubeapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDiff: one engine names fields for plans, drift rows and reverts
// alike: keyed list items by key, odd keys in brackets, a Secret's
// diff pointing where a revert patches.
func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     []Delta
	}{
		{"scalar changed", `{"spec":{"replicas":2}}`, `{"spec":{"replicas":0}}`,
			[]Delta{{Path: "spec.replicas", Pointer: []string{"spec", "replicas"}, Keys: []string{"spec", "replicas"}, Old: 2.0, New: 0.0, HasOld: true, HasNew: true}}},
		{"containers by name, moved", `{"c":[{"name":"a","image":"1"},{"name":"b","image":"1"}]}`, `{"c":[{"name":"b","image":"2"},{"name":"a","image":"1"}]}`,
			[]Delta{{Path: "c[b].image", Pointer: []string{"c", "0", "image"}, Keys: []string{"c", "b", "image"}, Old: "1", New: "2", HasOld: true, HasNew: true}}},
		{"item removed points at the append", `{"c":[{"name":"a"},{"name":"b"}]}`, `{"c":[{"name":"a"}]}`,
			[]Delta{{Path: "c[b]", Pointer: []string{"c", "-"}, Keys: []string{"c", "b"}, KeyField: "name", Old: map[string]any{"name": "b"}, HasOld: true}}},
		{"ports by containerPort", `{"p":[{"containerPort":80,"protocol":"TCP"}]}`, `{"p":[{"containerPort":80,"protocol":"UDP"}]}`,
			[]Delta{{Path: "p[80].protocol", Pointer: []string{"p", "0", "protocol"}, Keys: []string{"p", "80", "protocol"}, Old: "TCP", New: "UDP", HasOld: true, HasNew: true}}},
		{"annotation key in brackets", `{"metadata":{"annotations":{"checksum/config":"a"}}}`, `{"metadata":{"annotations":{"checksum/config":"b"}}}`,
			[]Delta{{Path: "metadata.annotations[checksum/config]", Pointer: []string{"metadata", "annotations", "checksum/config"}, Keys: []string{"metadata", "annotations", "checksum/config"}, Old: "a", New: "b", HasOld: true, HasNew: true}}},
		{"unkeyed lists of one length by index", `{"args":["a","b"]}`, `{"args":["a","c"]}`,
			[]Delta{{Path: "args[1]", Pointer: []string{"args", "1"}, Keys: []string{"args", "1"}, Old: "b", New: "c", HasOld: true, HasNew: true}}},
		{"unkeyed lists of two lengths whole", `{"args":["a"]}`, `{"args":["a","c"]}`,
			[]Delta{{Path: "args", Pointer: []string{"args"}, Keys: []string{"args"}, Old: []any{"a"}, New: []any{"a", "c"}, HasOld: true, HasNew: true}}},
		{"equal", `{"a":{"b":[1,2]}}`, `{"a":{"b":[1,2]}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Diff(obj(t, tc.old), obj(t, tc.new))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestLeaves: a value on one side only splits into the fields a plan
// lists and Change.Paths holds; the key of a keyed item is its name, not a
// field.
func TestLeaves(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     []string // Line of each leaf
	}{
		{"labels added where there were none", `{"metadata":{}}`, `{"metadata":{"labels":{"a":"1","pod-security.kubernetes.io/enforce":"privileged"}}}`,
			[]string{`metadata.labels.a: (none) → "1"`, `metadata.labels[pod-security.kubernetes.io/enforce]: (none) → "privileged"`}},
		{"env var added", `{"env":[{"name":"A","value":"1"}]}`, `{"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}`,
			[]string{`env[B].value: (none) → "2"`}},
		{"container removed", `{"c":[{"name":"a","image":"x","ports":[{"containerPort":80}]}]}`, `{"c":[]}`,
			[]string{`c[a].image: "x" → (none)`, `c[a].ports[80]: {"containerPort":80} → (none)`}},
		{"empty map and keyless list whole", `{}`, `{"a":{},"b":[1,2]}`,
			[]string{`a: (none) → {}`, `b: (none) → [1,2]`}},
		{"both sides: its own leaf", `{"a":{"x":1}}`, `{"a":"flat"}`,
			[]string{`a: {"x":1} → "flat"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range Diff(obj(t, tc.old), obj(t, tc.new)) {
				for _, l := range d.Leaves() {
					got = append(got, Line(l, false))
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if d := cmp.Diff([]string{"spec.template.spec.containers[web].image", "spec.template.spec.containers[web].resources.limits.cpu"},
		Leaves(obj(t, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"x","resources":{"limits":{"cpu":"1"}}}],"$setElementOrder/containers":[{"name":"web"}]}}}}`), "")); d != "" {
		t.Errorf("Leaves of a strategic patch (-want +got):\n%s", d)
	}
	added := Diff(obj(t, `{"c":[]}`), obj(t, `{"c":[{"name":"a","image":"x"}]}`))[0].Leaves()
	if d := cmp.Diff([]string{"c", "0", "image"}, added[0].Pointer); d != "" {
		t.Errorf("pointer of an added item's field (-want +got):\n%s", d)
	}
}

func TestLine(t *testing.T) {
	if f := FieldOf(Delta{Path: "a", Old: strings.Repeat("x", 70), HasOld: true}, false); len(f.Before) != 72 || f.After != "(none)" {
		t.Errorf("FieldOf is whole: %+v", f)
	}
	for _, tc := range []struct {
		d      Delta
		hidden bool
		want   string
	}{
		{Delta{Path: "data.password", Old: "a", New: "b", HasOld: true, HasNew: true}, true, "data.password: changed (value not shown)"},
		{Delta{Path: LastAppliedPath, New: `{"spec":{}}`, HasNew: true}, false, "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]: (none) → 11 bytes"},
		{Delta{Path: "data.big", Old: "ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé", HasOld: true}, false,
			`data.big: "éééééééééééééééééééééééééééééééééééééééééééééééééééééééé… → (none)`},
		// Long values are cut only where both sides agree: the rule
		// that changed, the toleration's operator, shows on both sides.
		{Delta{Path: "rules", HasOld: true, HasNew: true,
			Old: []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps", "secrets"}, "verbs": []any{"get", "list", "watch"}}},
			New: []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get", "list", "watch"}}}}, false,
			`rules: …"configmaps","secrets"],"verbs":["… → …"configmaps"],"verbs":["…`},
		{Delta{Path: "spec.tolerations", HasOld: true, HasNew: true,
			Old: []any{map[string]any{"effect": "NoSchedule", "key": "dedicated-node-pool", "operator": "Exists"}},
			New: []any{map[string]any{"effect": "NoSchedule", "key": "dedicated-node-pool", "operator": "Equal", "value": "gpu"}}}, false,
			`spec.tolerations: …operator":"Exists"}] → …operator":"Equal","value":"gpu"}]`},
		{Delta{Path: "a", Old: strings.Repeat("x", 70) + "1", New: strings.Repeat("x", 70) + "2", HasOld: true, HasNew: true}, false,
			`a: …xxxxxxxxxxxx1" → …xxxxxxxxxxxx2"`},
	} {
		if got := Line(tc.d, tc.hidden); got != tc.want {
			t.Errorf("Line(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestTrim: what the cluster keeps for itself is no change of the owner's.
func TestTrim(t *testing.T) {
	in := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","status":{"replicas":1},
		"metadata":{"name":"web","uid":"u","resourceVersion":"9","managedFields":[{}],"labels":{"a":"1"},
			"annotations":{"deployment.kubernetes.io/revision":"3","keep":"x"},"finalizers":["f"]},"spec":{"replicas":1}}`)
	want := obj(t, `{"metadata":{"labels":{"a":"1"},"annotations":{"keep":"x"},"finalizers":["f"]},"spec":{"replicas":1}}`)
	if d := cmp.Diff(want, Trim(in)); d != "" {
		t.Errorf("Trim (-want +got):\n%s", d)
	}
	if _, ok := in["metadata"].(map[string]any)["annotations"].(map[string]any)["deployment.kubernetes.io/revision"]; !ok {
		t.Error("Trim changed its argument")
	}
	onlyRevision := obj(t, `{"metadata":{"annotations":{"deployment.kubernetes.io/revision":"3"}}}`)
	if d := cmp.Diff(map[string]any{}, Trim(onlyRevision)); d != "" {
		t.Errorf("Trim of the revision alone (-want +got):\n%s", d)
	}
}

func TestLookup(t *testing.T) {
	v := obj(t, `{"c":[{"name":"a","ports":[{"containerPort":80,"protocol":"TCP"}]}],"args":["x","y"]}`)
	for _, tc := range []struct {
		keys []string
		want any
		ok   bool
	}{
		{[]string{"c", "a", "ports", "80", "protocol"}, "TCP", true},
		{[]string{"args", "1"}, "y", true},
		{[]string{"c", "b"}, nil, false},
		{[]string{"args", "7"}, nil, false},
	} {
		got, ok := Lookup(v, tc.keys)
		if ok != tc.ok || !cmp.Equal(got, tc.want) {
			t.Errorf("Lookup(%v) = %v, %v; want %v, %v", tc.keys, got, ok, tc.want, tc.ok)
		}
	}
}

// TestNormalize: values from the API (int64, map[string]string) and from
// JSON compare equal once normalized.
func TestNormalize(t *testing.T) {
	api := map[string]any{"spec": map[string]any{"replicas": int64(3)}, "metadata": map[string]any{"labels": map[string]string{"a": "1"}}}
	fromJSON := obj(t, `{"spec":{"replicas":3},"metadata":{"labels":{"a":"1"}}}`)
	if d := Diff(Normalize(api), fromJSON); len(d) != 0 {
		t.Errorf("Diff after Normalize: %+v", d)
	}
	if d := Diff(api, fromJSON); len(d) == 0 {
		t.Error("Diff before Normalize found nothing: the test proves nothing")
	}
}
