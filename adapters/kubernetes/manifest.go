package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ApplyOp is the generic apply: a manifest of any kinds, as kubectl
// apply -f takes it.
const ApplyOp = "kubernetes.apply"

// maxManifestObjects bounds the objects of one manifest.
const maxManifestObjects = 50

// applyOperation declares kubernetes.apply.
func applyOperation() *catalog.Operation {
	item := &catalog.Schema{Type: "object", Required: []string{"kind", "name", "action"}, Properties: map[string]*catalog.Schema{
		"kind": {Type: "string"}, "namespace": {Type: "string"}, "name": {Type: "string"},
		"action": {Type: "string", Enum: []any{"created", "configured", "unchanged"}},
	}}
	return &catalog.Operation{
		Name: ApplyOp, Provider: "kubernetes", Verb: "apply", Resource: "manifests",
		Description: "Apply a manifest of any kinds, like kubectl apply -f: YAML text (documents separated by ---), one object, a list of objects or a List. Each object is server-side applied (field manager kubecode) in order, namespaces first; all are planned together." + gated,
		Keywords:    []string{"yaml", "kubectl apply -f", "create or update", "documents"},
		Hints: &catalog.Hints{Intents: []string{"yaml", "documents"},
			VerbWords: []string{"apply", "create", "update"}},
		Input: &catalog.Schema{Type: "object", Required: []string{"manifest"}, Properties: map[string]*catalog.Schema{
			"manifest":  {Description: "YAML or JSON text (documents separated by ---), an object, or a list of objects"},
			"namespace": prop("string", "for namespaced objects that name none; default the context's namespace"),
			"force":     prop("boolean", "take over fields other managers own"),
		}},
		Output: &catalog.Schema{Type: "object", Required: []string{"applied"}, Properties: map[string]*catalog.Schema{
			"applied": {Type: "array", Items: item},
			"dryRun":  {Type: "boolean", Description: "true when the apply was only planned"},
		}},
		OutputName: "Applied",
	}
}

type applyArgs struct {
	Manifest  json.RawMessage `json:"manifest"`
	Namespace string          `json:"namespace"`
	Force     bool            `json:"force"`
}

// manifestWrites decodes a manifest into one apply per object, namespaces
// first, then the others in the order given.
func (a *Adapter) manifestWrites(raw json.RawMessage) ([]*write, error) {
	var args applyArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	objs, err := manifestObjects(args.Manifest)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, badRequest("the manifest holds no object")
	}
	if len(objs) > maxManifestObjects {
		return nil, badRequest("the manifest holds %d objects; at most %d are applied in one call: split it", len(objs), maxManifestObjects)
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].GetKind() == "Namespace" && objs[j].GetKind() != "Namespace" })
	var ws []*write
	for i, o := range objs {
		where := fmt.Sprintf("manifest object %d (%s %s)", i+1, orDefault(o.GetKind(), "no kind"), orDefault(o.GetName(), "no name"))
		if o.GetAPIVersion() == "" || o.GetKind() == "" {
			return nil, badRequest("%s needs apiVersion and kind", where)
		}
		r, err := a.resourceFor(o.GroupVersionKind())
		if err != nil {
			return nil, badRequest("%s: %v", where, err)
		}
		body, _ := json.Marshal(map[string]any{"manifest": o.Object, "namespace": orDefault(o.GetNamespace(), args.Namespace), "force": args.Force})
		w, err := a.decodeWrite(r, "apply", body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// manifestObjects reads YAML or JSON text, an object, or a list of
// objects; Lists are expanded.
func manifestObjects(raw json.RawMessage) ([]*unstructured.Unstructured, error) {
	var docs []map[string]any
	var text string
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, badRequest("apply needs manifest: YAML text, an object or a list of objects")
	case json.Unmarshal(raw, &text) == nil:
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
		for n := 1; ; n++ {
			var m map[string]any
			err := dec.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, badRequest("manifest document %d: %v", n, err)
			}
			if len(m) > 0 {
				docs = append(docs, m)
			}
		}
	case bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")):
		if err := json.Unmarshal(raw, &docs); err != nil {
			return nil, badRequest("manifest: a list of objects: %v", err)
		}
	default:
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, badRequest("manifest: YAML text, an object or a list of objects: %v", err)
		}
		docs = []map[string]any{m}
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		o := &unstructured.Unstructured{Object: d}
		if strings.HasSuffix(o.GetKind(), "List") {
			items, _, _ := unstructured.NestedSlice(d, "items")
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					out = append(out, &unstructured.Unstructured{Object: m})
				}
			}
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// resourceFor finds the resource serving gvk (any version of its group
// and kind when the manifest's version is not the one discovered).
func (a *Adapter) resourceFor(gvk schema.GroupVersionKind) (*resource, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var near *resource
	for _, r := range a.resources {
		if r.kind != gvk.Kind || r.gvr.Group != gvk.Group || !r.hasOp("apply") {
			continue
		}
		if r.gvr.Version == gvk.Version {
			return r, nil
		}
		near = r
	}
	if near == nil {
		return nil, fmt.Errorf("the cluster serves no %s in %s (see kubernetes.api_resources)", gvk.Kind, gvk.GroupVersion())
	}
	cp := *near
	cp.gvr.Version = gvk.Version
	return &cp, nil
}

// previewManifest dry-runs each object of a manifest on top of the ones
// before it: one change with each object's change in Objects.
func (a *Adapter) previewManifest(ctx context.Context, raw json.RawMessage) (*catalog.Change, json.RawMessage, error) {
	ws, err := a.manifestWrites(raw)
	if err != nil {
		return nil, nil, err
	}
	if catalog.PlanStateFrom(ctx) == nil {
		// Without a plan (apply mode) the objects still build on each
		// other: a namespace, then what goes in it.
		ctx = catalog.WithPlanState(ctx, &catalog.PlanState{})
	}
	c := &catalog.Change{Action: "apply", Kind: "Manifest", Name: fmt.Sprintf("%d %s", len(ws), plural("object", len(ws)))}
	var applied []map[string]any
	var impacts []string
	for _, w := range ws {
		oc, after, err := a.previewWrite(ctx, w)
		if oc != nil {
			oc.ObjectOp = "kubernetes." + w.r.seg + ".apply"
			c.Objects = append(c.Objects, *oc)
		}
		if err != nil {
			return c, nil, fmt.Errorf("%s %s: %w", w.r.kind, objName(w), err)
		}
		action := "configured"
		switch {
		case !oc.Existed:
			action = "created"
		case len(oc.Edits) == 0:
			action = "unchanged"
		}
		item := map[string]any{"kind": oc.Kind, "name": after.GetName(), "action": action}
		if oc.Namespace != "" {
			item["namespace"] = oc.Namespace
		}
		applied = append(applied, item)
		for _, d := range oc.Diff {
			c.Diff = append(c.Diff, oc.Object()+": "+d)
		}
		if oc.Impact != "" {
			impacts = append(impacts, oc.Impact)
		}
		c.Pods.Add(oc.Pods)
	}
	c.Impact = strings.Join(impacts, "; ")
	for _, o := range c.Objects {
		if o.Namespace != "" { // the call's own place: each object is judged where it goes
			c.Namespace = o.Namespace
			break
		}
	}
	if len(c.Diff) > 3*maxDiffLines {
		c.Diff = append(c.Diff[:3*maxDiffLines-1], fmt.Sprintf("… %d more lines", len(c.Diff)-3*maxDiffLines+1))
	}
	out, err := json.Marshal(map[string]any{"applied": applied, "dryRun": true})
	return c, out, err
}

// applyManifest applies each object of a manifest for real, in order.
func (a *Adapter) applyManifest(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	ws, err := a.manifestWrites(raw)
	if err != nil {
		return nil, err
	}
	applied := []map[string]any{}
	for _, w := range ws {
		before, err := a.current(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", w.r.kind, objName(w), err)
		}
		after, err := a.do(ctx, w, false)
		if err != nil {
			return nil, fmt.Errorf("%s %s (after %d applied): %w", w.r.kind, objName(w), len(applied), err)
		}
		action := "created"
		if before != nil {
			action = "configured"
			if len(edits(before.Object, after.Object)) == 0 {
				action = "unchanged"
			}
		}
		item := map[string]any{"kind": w.r.kind, "name": after.GetName(), "action": action}
		if w.ns != "" {
			item["namespace"] = w.ns
		}
		applied = append(applied, item)
	}
	return json.Marshal(map[string]any{"applied": applied})
}

func objName(w *write) string {
	if w.ns == "" {
		return w.name
	}
	return w.ns + "/" + w.name
}
