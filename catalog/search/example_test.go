package search_test

import (
	"fmt"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/search"
)

func ExampleIndex_Search() {
	ops := []*catalog.Operation{
		{Name: "shop.orders.list", Provider: "shop", Resource: "orders", Kind: "Order", Verb: "list",
			Description: "List orders.", Keywords: []string{"purchase"}, Annotations: catalog.Annotations{ReadOnly: true}},
		{Name: "shop.orders.notes", Provider: "shop", Resource: "orders", Kind: "Order", Verb: "notes",
			Description: "Read the notes written on an order.", Annotations: catalog.Annotations{ReadOnly: true},
			Hints: &catalog.Hints{Intents: []string{"why"}, VerbWords: []string{"why", "comments"}}},
		{Name: "shop.customers.list", Provider: "shop", Resource: "customers", Kind: "Customer", Verb: "list",
			Description: "List customers.", Annotations: catalog.Annotations{ReadOnly: true}},
	}
	idx, err := search.NewIndex(ops, nil)
	if err != nil {
		panic(err)
	}
	hits, err := idx.Search("why was my order late", 2)
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Println(h.Op.Name)
	}
	hits, _ = idx.Search("customers.list", 1) // an operation's name, without its provider
	fmt.Println(hits[0].Op.Name)
	// Output:
	// shop.orders.notes
	// shop.orders.list
	// shop.customers.list
}
