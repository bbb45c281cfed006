package broker_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// createGadgetCRD installs gadgets.test.kubecode.io, waits until it is
// established, and creates one Gadget in ns.
func createGadgetCRD(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets.test.kubecode.io"},
		"spec": map[string]any{
			"group": "test.kubecode.io",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": []any{"gdg"}},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "properties": map[string]any{
							"size":  map[string]any{"type": "integer"},
							"color": map[string]any{"type": "string", "enum": []any{"red", "blue"}},
						}},
					},
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(crdGVR).Delete(context.Background(), "gadgets.test.kubecode.io", metav1.DeleteOptions{})
	})
	deadline := time.Now().Add(30 * time.Second)
	for !established(ctx, dyn) {
		if time.Now().After(deadline) {
			t.Fatal("CRD never became established")
		}
		time.Sleep(100 * time.Millisecond)
	}
	gvr := schema.GroupVersionResource{Group: "test.kubecode.io", Version: "v1", Resource: "gadgets"}
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.kubecode.io/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1", "namespace": ns},
		"spec":     map[string]any{"size": int64(3), "color": "red"},
	}}
	for {
		_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func established(ctx context.Context, dyn dynamic.Interface) bool {
	u, err := dyn.Resource(crdGVR).Get(ctx, "gadgets.test.kubecode.io", metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
