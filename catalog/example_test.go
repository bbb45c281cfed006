package catalog_test

import (
	"fmt"

	"github.com/kubecode/kubecode/catalog"
)

func ExampleIndex_Search() {
	ops := []*catalog.Operation{
		{Name: "kubernetes.pods.list", Resource: "pods", Kind: "Pod", ShortNames: []string{"po"}, Verb: "list",
			Description: "List pods in a namespace or across all namespaces.", Keywords: []string{"crash", "restart"},
			Annotations: catalog.Annotations{ReadOnly: true}},
		{Name: "kubernetes.pods.logs", Resource: "pods", Kind: "Pod", Verb: "logs",
			Description: "Read a pod container's logs as text.", Annotations: catalog.Annotations{ReadOnly: true}},
		{Name: "kubernetes.deployments.list", Group: "apps", Resource: "deployments", Kind: "Deployment", Verb: "list",
			Description: "List deployments.", Annotations: catalog.Annotations{ReadOnly: true}},
	}
	idx, err := catalog.NewIndex(ops, nil)
	if err != nil {
		panic(err)
	}
	hits, err := idx.Search("pod logs", 2)
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Println(h.Op.Name)
	}
	hits, _ = idx.Search("deployments.list", 1)
	fmt.Println(hits[0].Op.Name)
	// Output:
	// kubernetes.pods.logs
	// kubernetes.pods.list
	// kubernetes.deployments.list
}

func ExampleDeclaration() {
	op := &catalog.Operation{
		Name:        "kubernetes.pods.logs",
		Description: "Read a pod container's logs as text.",
		Input: &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{
			"name": {Type: "string"}, "tailLines": {Type: "integer"}, "previous": {Type: "boolean"},
		}},
		Output: &catalog.Schema{Type: "string"},
	}
	fmt.Print(catalog.Declaration(op))
	// Output:
	// declare const tools: {
	//   kubernetes: {
	//     pods: {
	//       /** Read a pod container's logs as text. */
	//       logs(input: { name: string; previous?: boolean; tailLines?: number }): Promise<string>;
	//     };
	//   };
	// };
}

func ExampleDeclarations() {
	pod := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
		"metadata": {Type: "object"},
		"status": {Type: "object", Properties: map[string]*catalog.Schema{
			"phase": {Type: "string", Enum: []any{"Pending", "Running"}},
		}},
	}}
	ops := []*catalog.Operation{
		{Name: "kubernetes.pods.list", Description: "List pods.", Kind: "Pod", OutputName: "Pod",
			Input:  &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{"namespace": {Type: "string"}}},
			Output: &catalog.Schema{Type: "array", Items: pod}},
		{Name: "kubernetes.pods.get", Description: "Get one pod.", Kind: "Pod", OutputName: "Pod",
			Input:  &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{"name": {Type: "string"}}},
			Output: pod},
	}
	fmt.Print(catalog.Declarations(ops))
	// Output:
	// declare const tools: {
	//   kubernetes: {
	//     pods: {
	//       /** List pods. */
	//       list(input?: { namespace?: string }): Promise<Pod[]>;
	//       /** Get one pod. */
	//       get(input: { name: string }): Promise<Pod>;
	//     };
	//   };
	// };
	// interface Pod { metadata: ObjectMeta; status?: { phase?: "Pending" | "Running" } }
	// interface ObjectMeta { name: string; namespace?: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; resourceVersion?: string; generation?: number; ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[]; [k: string]: unknown }
}
