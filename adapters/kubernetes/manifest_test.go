package kubernetes

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/catalog"
)

// TestApplyManifest: kubernetes.apply takes YAML text, objects or Lists,
// previews each object on top of the ones before it (a namespace, then
// what goes in it), applies them in order, and says what each became.
func TestApplyManifest(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	fresh := ns + "-m"
	t.Cleanup(func() {
		_, _ = a.Call(context.Background(), "kubernetes.namespaces.delete", json.RawMessage(`{"name":"`+fresh+`"}`))
	})
	ctx := context.Background()
	yaml := `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: ` + fresh + `}
data: {a: "1"}
---
apiVersion: v1
kind: Namespace
metadata: {name: ` + fresh + `}
`
	args, _ := json.Marshal(map[string]any{"manifest": yaml})
	c, out, err := a.Preview(catalog.WithPlanState(ctx, &catalog.PlanState{}), ApplyOp, args)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if len(c.Objects) != 2 || c.Objects[0].Kind != "Namespace" || !strings.Contains(c.Objects[1].Validated, "is created by this plan") {
		t.Fatalf("change %+v", c)
	}
	var got struct {
		Applied []map[string]any `json:"applied"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"kind": "Namespace", "name": fresh, "action": "created"}, {"kind": "ConfigMap", "namespace": fresh, "name": "cfg", "action": "created"}}
	if d := cmp.Diff(want, got.Applied); d != "" {
		t.Errorf("preview (-want +got):\n%s", d)
	}
	for i, action := range []string{"created", "unchanged"} {
		out, err := a.Call(ctx, ApplyOp, args)
		if err != nil {
			t.Fatalf("apply %d: %v", i+1, err)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Applied) != 2 || got.Applied[1]["action"] != action {
			t.Errorf("apply %d: %v, want the ConfigMap %s", i+1, got.Applied, action)
		}
	}
	// An object list, with the namespace given by the call.
	list := `{"manifest":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"a":"2"}}],"namespace":"` + fresh + `"}`
	c, _, err = a.Preview(ctx, ApplyOp, json.RawMessage(list))
	if err != nil || len(c.Objects) != 1 || !cmp.Equal(c.Objects[0].Edits, []string{"data.a"}) {
		t.Errorf("list preview: %v %+v", err, c)
	}
	for _, tc := range []struct{ args, want string }{
		{`{}`, "apply needs manifest"},
		{`{"manifest":""}`, "holds no object"},
		{`{"manifest":"kind: ConfigMap\nmetadata: {name: x}"}`, "needs apiVersion and kind"},
		{`{"manifest":"apiVersion: v1\nkind: Gadget\nmetadata: {name: x}"}`, "serves no Gadget in v1"},
		{`{"manifest":"a: [unclosed"}`, "manifest document 1"},
		{`{"manifest":[{"apiVersion":"v1","kind":"ConfigMap"}]}`, "metadata.name is missing"},
		{`{"manifest":7}`, "YAML text, an object or a list of objects"},
	} {
		_, _, err := a.Preview(ctx, ApplyOp, json.RawMessage(tc.args))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
	}
	many := strings.Repeat("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", maxManifestObjects+1)
	b, _ := json.Marshal(map[string]any{"manifest": many})
	if _, _, err := a.Preview(ctx, ApplyOp, b); err == nil || !strings.Contains(err.Error(), "split it") {
		t.Errorf("%d objects: %v", maxManifestObjects+1, err)
	}
}
