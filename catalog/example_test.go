package catalog_test

import (
	"fmt"

	"github.com/kubecode/kubecode/catalog"
)

func ExampleDeclaration() {
	op := &catalog.Operation{
		Name:        "shop.orders.notes",
		Description: "Read an order's notes as text.",
		Input: &catalog.Schema{Type: "object", Required: []string{"id"}, Properties: map[string]*catalog.Schema{
			"id": {Type: "string"}, "last": {Type: "integer"}, "internal": {Type: "boolean"},
		}},
		Output: &catalog.Schema{Type: "string"},
	}
	fmt.Print(catalog.Declaration(op))
	// Output:
	// declare const tools: {
	//   shop: {
	//     orders: {
	//       /** Read an order's notes as text. */
	//       notes(input: { id: string; internal?: boolean; last?: number }): Promise<string>;
	//     };
	//   };
	// };
}

// Result types shared by operations are declared once, and so are shared
// types (schemas with a Name) that results use.
func ExampleDeclarer_Declarations() {
	meta := &catalog.Schema{Name: "Meta", Type: "object", Required: []string{"id"},
		Properties: map[string]*catalog.Schema{"id": {Type: "string"}, "created": {Type: "string"}}}
	order := &catalog.Schema{Type: "object", Required: []string{"meta"}, Properties: map[string]*catalog.Schema{
		"meta":  meta,
		"state": {Type: "string", Enum: []any{"open", "shipped"}},
	}}
	ops := []*catalog.Operation{
		{Name: "shop.orders.list", Description: "List orders.", OutputName: "Order",
			Input:  &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{"customer": {Type: "string"}}},
			Output: &catalog.Schema{Type: "array", Items: order}},
		{Name: "shop.orders.get", Description: "Get one order.", OutputName: "Order",
			Input:  &catalog.Schema{Type: "object", Required: []string{"id"}, Properties: map[string]*catalog.Schema{"id": {Type: "string"}}},
			Output: order},
	}
	d := catalog.NewDeclarer(nil) // one per catalog version: it remembers compacted types
	fmt.Print(d.Declarations(ops))
	// Output:
	// declare const tools: {
	//   shop: {
	//     orders: {
	//       /** List orders. */
	//       list(input?: { customer?: string }): Promise<Order[]>;
	//       /** Get one order. */
	//       get(input: { id: string }): Promise<Order>;
	//     };
	//   };
	// };
	// interface Order { meta: Meta; state?: "open" | "shipped" }
	// interface Meta { id: string; created?: string }
}
