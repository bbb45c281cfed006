package search

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecode/kubecode/catalog"
)

// A made-up provider: the index knows nothing of any real one, and every
// mechanism works on what the descriptors carry.
func shopOperations() []*catalog.Operation {
	orderHints := &catalog.Hints{Intents: []string{"late", "stuck", "delayed"}}
	noteHints := &catalog.Hints{Intents: []string{"why", "late", "stuck"}, VerbWords: []string{"why", "comments", "history"}}
	cancelHints := &catalog.Hints{VerbWords: []string{"abort", "stop", "refund"}}
	read := catalog.Annotations{ReadOnly: true}
	ops := []*catalog.Operation{
		{Name: "shop.orders.list", Provider: "shop", Resource: "orders", Kind: "Order", ShortNames: []string{"ord"}, Verb: "list",
			Description: "List orders of a customer or of every customer.", Keywords: []string{"purchase", "basket"}, Hints: orderHints, Annotations: read},
		{Name: "shop.orders.get", Provider: "shop", Resource: "orders", Kind: "Order", ShortNames: []string{"ord"}, Verb: "get",
			Description: "Get one order by id.", Keywords: []string{"purchase"}, Hints: orderHints, Annotations: read},
		{Name: "shop.orders.notes", Provider: "shop", Resource: "orders", Kind: "Order", Verb: "notes",
			Description: "Read the notes written on an order.", Hints: noteHints, Annotations: read},
		{Name: "shop.orders.cancel", Provider: "shop", Resource: "orders", Kind: "Order", Verb: "cancel",
			Description: "Cancel one order.", Hints: cancelHints},
		{Name: "shop.customers.list", Aliases: []string{"shop.customer.list", "shop.cust.list"}, Provider: "shop", Resource: "customers", Kind: "Customer",
			ShortNames: []string{"cust"}, Verb: "list", Description: "List customers.", Keywords: []string{"buyer", "account"}, Annotations: read},
		{Name: "shop.giftcards.list", Provider: "shop", Resource: "giftcards", Kind: "GiftCard", Verb: "list",
			Description: "List gift cards.", Keywords: []string{"voucher", "balance"}, Annotations: read},
		{Name: "shop.warehouses.list", Provider: "shop", Resource: "warehouses", Kind: "Warehouse", Verb: "list",
			Description: "List warehouses and their stock.", Keywords: []string{"inventory", "stock"}, Annotations: read},
		{Name: "shop.summary", Provider: "shop", Verb: "list", Description: "Summarize the shop's numbers today.", Annotations: read},
	}
	return ops
}

func TestSearchMechanisms(t *testing.T) {
	x, err := NewIndex(shopOperations(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		first string // the first hit
		want  []string
	}{
		{query: "shop.orders.get", first: "shop.orders.get"},                                      // exact name
		{query: "tools.shop.orders.get", first: "shop.orders.get"},                                // as scripts write it
		{query: "orders.cancel", first: "shop.orders.cancel"},                                     // without the provider
		{query: "shop.cust.list", first: "shop.customers.list"},                                   // an alias
		{query: "cust", first: "shop.customers.list"},                                             // a short name
		{query: "list orders", first: "shop.orders.list"},                                         // subject and verb
		{query: "why is my order stuck", want: []string{"shop.orders.notes", "shop.orders.list"}}, // intents and verb words
		{query: "refund an order", first: "shop.orders.cancel"},                                   // a verb word
		{query: "gift cards", first: "shop.giftcards.list"},                                       // words run together
		{query: "warehuose stock", first: "shop.warehouses.list"},                                 // a typo
		{query: "voucher balance", first: "shop.giftcards.list"},                                  // keywords
		{query: "summary", first: "shop.summary"},                                                 // an operation on no resource
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			hits, err := x.Search(tc.query, 3)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.Op.Name)
			}
			if tc.first != "" && (len(got) == 0 || got[0] != tc.first) {
				t.Errorf("first hit of %q: got %v, want %s first", tc.query, got, tc.first)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || g == w
				}
				if !found {
					t.Errorf("%q: %s not in top 3: %v", tc.query, w, got)
				}
			}
		})
	}
}

// Without a verb asked for, a subject's list ranks ahead of its other
// operations, and writes last.
func TestSearchVerbOrder(t *testing.T) {
	x, err := NewIndex(shopOperations(), nil)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := x.Search("order", 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, h.Op.Name)
	}
	if len(got) != 4 || got[0] != "shop.orders.list" || got[3] != "shop.orders.cancel" {
		t.Errorf("hits for \"order\" = %v, want shop.orders.list first and shop.orders.cancel last", got)
	}
}

func TestNewIndexRejectsDuplicates(t *testing.T) {
	ops := append(shopOperations(), &catalog.Operation{Name: "shop.orders.get", Provider: "shop"})
	if _, err := NewIndex(ops, nil); !errors.Is(err, errDuplicate) {
		t.Fatalf("NewIndex with a duplicate name: err = %v, want %v", err, errDuplicate)
	}
}

func TestSearchEmpty(t *testing.T) {
	x, err := NewIndex(shopOperations(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"", "   ", "?!"} {
		hits, err := x.Search(q, 3)
		if err != nil || len(hits) != 0 {
			t.Errorf("Search(%q) = %v, %v; want no hits", q, hits, err)
		}
	}
}

// Each hit says which of the question's words name it, whether the
// question names its subject, and whether it is a Scope of a question
// about something else: what an answer needs to show each operation
// once.
func TestHitTerms(t *testing.T) {
	ops := append(shopOperations(),
		&catalog.Operation{Name: "shop.cards.list", Provider: "shop", Resource: "cards", Kind: "Card", Verb: "list",
			Description: "List the payment cards on file.", Annotations: catalog.Annotations{ReadOnly: true}},
		&catalog.Operation{Name: "shop.stores.list", Provider: "shop", Resource: "stores", Kind: "Store", Verb: "list",
			Description: "List stores.", Hints: &catalog.Hints{Scope: true}, Annotations: catalog.Annotations{ReadOnly: true}},
		&catalog.Operation{Name: "shop.stores.create", Provider: "shop", Resource: "stores", Kind: "Store", Verb: "create",
			Description: "Open a store.", Hints: &catalog.Hints{Scope: true}},
		&catalog.Operation{Name: "shop.orders_legacy.list", Provider: "shop", Group: "legacy.shop", Resource: "orders", Kind: "Order", Verb: "list",
			Description: "List orders of the old system.", Annotations: catalog.Annotations{ReadOnly: true}},
	)
	x, err := NewIndex(ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	type hit struct {
		Terms                  []string
		Subject, Asked, Scoped bool
	}
	tests := []struct {
		query string
		want  map[string]hit // by operation; others are not checked
	}{
		// "gift cards" names gift cards, not the payment cards.
		{"gift cards", map[string]hit{"shop.giftcards.list": {Terms: []string{"giftcard"}, Subject: true}}},
		{"cards", map[string]hit{"shop.cards.list": {Terms: []string{"card"}, Subject: true}}},
		// "stuck" is an intent word of orders; "why" asks for notes, but a
		// stop word names nothing.
		{"why is my order stuck", map[string]hit{
			"shop.orders.list":  {Terms: []string{"order", "stuck"}, Subject: true},
			"shop.orders.notes": {Terms: []string{"order", "stuck"}, Subject: true, Asked: true},
		}},
		{"refund an order", map[string]hit{"shop.orders.cancel": {Terms: []string{"refund", "order"}, Subject: true, Asked: true}}},
		// A store is where orders are kept: a Scope.
		{"orders in a store", map[string]hit{
			"shop.orders.list": {Terms: []string{"order"}, Subject: true},
			"shop.stores.list": {Terms: []string{"store"}, Subject: true, Scoped: true},
		}},
		// Asked for its verb, a Scope is the question's subject.
		{"create a store for orders", map[string]hit{
			"shop.stores.create": {Terms: []string{"creat", "store"}, Subject: true, Asked: true},
		}},
		// Named by its description only.
		{"payment on file", map[string]hit{"shop.cards.list": {}}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			hits, err := x.Search(tc.query, 20)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]hit{}
			for _, h := range hits {
				if _, ok := tc.want[h.Op.Name]; ok {
					got[h.Op.Name] = hit{h.Terms, h.Subject, h.Asked, h.Scoped}
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("hits (-want +got):\n%s", d)
			}
		})
	}
	// One kind in two groups: the core group's ranks first.
	hits, err := x.Search("list orders", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) < 2 || hits[0].Op.Name != "shop.orders.list" {
		var got []string
		for _, h := range hits {
			got = append(got, h.Op.Name)
		}
		t.Errorf("hits for \"list orders\": %v, want shop.orders.list first", got)
	}
}
