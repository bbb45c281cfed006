package upstream

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// Almost no MCP server declares an outputSchema, and `unknown` makes a
// script narrow every result by hand. kubecode learns the type from the
// results a tool returns: each answer's shape is merged into what was
// seen, and the operation's declaration says so. Only shapes are kept,
// never values; an object whose keys do not read as field names (a map
// keyed by users, hosts, addresses) is typed as a map, so that data does
// not reach the declarations as property names.

const (
	inferDepth   = 8  // deeper values are unknown
	inferKeys    = 32 // an object with more keys is a map
	inferItems   = 50 // array items looked at
	inferBranch  = 4  // differing types kept as a union; more is unknown
	inferLessons = 20 // answers a tool's type is learnt from
)

var fieldNameRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,39}$`)

// inferSchema is the type of a JSON value v.
func inferSchema(v any, depth int) *catalog.Schema {
	if depth > inferDepth {
		return &catalog.Schema{}
	}
	switch v := v.(type) {
	case nil:
		return &catalog.Schema{Nullable: true}
	case bool:
		return &catalog.Schema{Type: "boolean"}
	case float64, json.Number:
		return &catalog.Schema{Type: "number"}
	case string:
		return &catalog.Schema{Type: "string"}
	case []any:
		var items *catalog.Schema
		for i, x := range v {
			if i == inferItems {
				break
			}
			items = mergeSchema(items, inferSchema(x, depth+1), depth+1)
		}
		if items == nil {
			items = &catalog.Schema{}
		}
		return &catalog.Schema{Type: "array", Items: items}
	case map[string]any:
		mapLike := len(v) > inferKeys
		for k := range v {
			// A key that reads as a sentence to the model
			// (IGNORE_ALL_PREVIOUS_INSTRUCTIONS) or was hidden as a secret
			// is data, not a field: the object is a map.
			if !fieldNameRE.MatchString(k) || instructionRE.MatchString(strings.Join(nameWords(k), " ")) || confusable(k) {
				mapLike = true
			}
		}
		if mapLike {
			var vals *catalog.Schema
			n := 0
			for _, x := range v {
				if n++; n > inferItems {
					break
				}
				vals = mergeSchema(vals, inferSchema(x, depth+1), depth+1)
			}
			if vals == nil {
				vals = &catalog.Schema{}
			}
			return &catalog.Schema{Type: "object", AdditionalProperties: vals}
		}
		s := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{}, AdditionalProperties: &catalog.Schema{}}
		for k, x := range v {
			s.Properties[k] = inferSchema(x, depth+1)
			s.Required = append(s.Required, k)
		}
		slices.Sort(s.Required)
		return s
	}
	return &catalog.Schema{}
}

// mergeSchema is a type that holds values of both a and b (nil a: b).
func mergeSchema(a, b *catalog.Schema, depth int) *catalog.Schema {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case isAny(a) || isAny(b) || depth > inferDepth:
		return &catalog.Schema{}
	}
	nullable := a.Nullable || b.Nullable
	if a.Type == "" && a.Nullable && len(a.AnyOf) == 0 { // null alone
		c := *b
		c.Nullable = true
		return &c
	}
	if b.Type == "" && b.Nullable && len(b.AnyOf) == 0 {
		c := *a
		c.Nullable = true
		return &c
	}
	var branches []*catalog.Schema
	for _, s := range [2]*catalog.Schema{a, b} {
		if len(s.AnyOf) > 0 {
			branches = append(branches, s.AnyOf...)
		} else {
			c := *s
			c.Nullable = false
			branches = append(branches, &c)
		}
	}
	// Branches of one type merge into one.
	var out []*catalog.Schema
	for _, br := range branches {
		i := slices.IndexFunc(out, func(o *catalog.Schema) bool {
			return o.Type == br.Type && (o.Type != "object" || (o.Properties == nil) == (br.Properties == nil))
		})
		if i < 0 {
			out = append(out, br)
			continue
		}
		out[i] = mergeSame(out[i], br, depth)
	}
	if len(out) > inferBranch {
		return &catalog.Schema{}
	}
	if len(out) == 1 {
		c := *out[0]
		c.Nullable = nullable
		return &c
	}
	return &catalog.Schema{AnyOf: out, Nullable: nullable}
}

// mergeSame merges two schemas of one type.
func mergeSame(a, b *catalog.Schema, depth int) *catalog.Schema {
	switch a.Type {
	case "array":
		return &catalog.Schema{Type: "array", Items: mergeSchema(a.Items, b.Items, depth+1)}
	case "object":
		if a.Properties == nil { // maps
			return &catalog.Schema{Type: "object", AdditionalProperties: mergeSchema(a.AdditionalProperties, b.AdditionalProperties, depth+1)}
		}
		s := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{}, AdditionalProperties: &catalog.Schema{}}
		for k, p := range a.Properties {
			s.Properties[k] = p
		}
		for k, p := range b.Properties {
			s.Properties[k] = mergeSchema(s.Properties[k], p, depth+1)
		}
		if len(s.Properties) > inferKeys {
			return &catalog.Schema{Type: "object", AdditionalProperties: &catalog.Schema{}}
		}
		for _, k := range a.Required { // required: seen in every answer
			if slices.Contains(b.Required, k) {
				s.Required = append(s.Required, k)
			}
		}
		return s
	}
	return a
}

func isAny(s *catalog.Schema) bool {
	return s.Type == "" && !s.Nullable && len(s.AnyOf) == 0 && len(s.Properties) == 0 && s.AdditionalProperties == nil && s.Items == nil
}
