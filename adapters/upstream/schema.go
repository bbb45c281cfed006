package upstream

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// An MCP tool's inputSchema and outputSchema are JSON Schema of whatever
// draft the server's library writes (2020-12 from the go-sdk and FastMCP,
// draft-07 from zod-to-json-schema). SchemaOf walks that JSON into the
// catalog's schema tree: references resolved inline, the keywords the
// catalog has kept, the rest dropped. The schema comes from a server
// kubecode does not control, so the walk is bounded (depth, nodes, chains
// of references) and never fails on what it does not understand: that
// part becomes an empty schema, any value, written "unknown".

// errInvalidJSON is SchemaOf's only error: the schema is not JSON at all.
var errInvalidJSON = errors.New("schema is not valid JSON")

const (
	// maxSchemaDepth is how deep subschemas nest (properties, items,
	// forms of a union) before the rest is any value.
	maxSchemaDepth = 20
	// maxSchemaNodes bounds the subschemas one schema expands to, so
	// references fanning out (each definition using the next one ten
	// times) cannot multiply into an exponential tree.
	maxSchemaNodes = 10000
	// maxRefChain bounds references followed one inside another without
	// nesting in between ($ref to a $ref to a $ref ...).
	maxRefChain = 64
)

// SchemaOf converts a JSON Schema (as an MCP tool's inputSchema/outputSchema
// arrives: any draft, usually 2020-12 or draft-07) into the catalog's
// schema tree.
//
// References within the document ("#/$defs/X", "#/definitions/X", any
// JSON pointer) are resolved inline; one to a schema already being
// expanded on the same path (recursion), an external one, or one that
// leads nowhere becomes an empty schema: any value. The boolean schemas
// true and false become an empty schema too (false, "no value", is not
// worth a type of its own in an argument). anyOf and oneOf become AnyOf,
// a {"type": "null"} form becoming Nullable; allOf is merged into one
// schema; const becomes an Enum of one value. Descriptions and titles are
// kept as they are: cleaning them is the caller's. The result is a tree
// (no node appears twice), the caller's to modify.
//
// It fails only when raw is not JSON; any JSON gives a schema, at worst an
// empty one.
func SchemaOf(raw json.RawMessage) (*catalog.Schema, error) {
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, errInvalidJSON
	}
	w := &schemaWalker{root: root, refs: []string{""}}
	return w.walk(root, 0), nil
}

// schemaWalker converts one document.
type schemaWalker struct {
	root  any
	refs  []string // JSON pointers being expanded on the current path, the root's ("") first
	nodes int
}

// walk converts the schema v found depth subschemas below the root.
func (w *schemaWalker) walk(v any, depth int) *catalog.Schema {
	w.nodes++ // every call: after the last, a call costs no more than its empty schema
	m, ok := v.(map[string]any)
	if !ok || depth > maxSchemaDepth || w.nodes > maxSchemaNodes {
		return &catalog.Schema{}
	}
	s := w.keywords(m, depth)
	if ref, ok := m["$ref"]; ok {
		s = mergeSchemas(s, w.ref(ref, depth))
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, b := range all {
			s = mergeSchemas(s, w.walk(b, depth+1))
		}
	}
	forms, ok := m["anyOf"].([]any)
	if !ok {
		forms, _ = m["oneOf"].([]any)
	}
	if len(forms) > 0 {
		s = w.union(s, forms, depth)
	}
	return s
}

// keywords converts m's own keywords, those that are no reference or
// combination of other schemas.
func (w *schemaWalker) keywords(m map[string]any, depth int) *catalog.Schema {
	s := &catalog.Schema{}
	s.Description, _ = m["description"].(string)
	s.Title, _ = m["title"].(string)
	s.Format, _ = m["format"].(string)
	s.Minimum = schemaNumber(m, "minimum", "exclusiveMinimum")
	s.Maximum = schemaNumber(m, "maximum", "exclusiveMaximum")

	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok && !slices.Contains(types, x) {
				types = append(types, x)
			}
		}
	}
	var kinds []string
	for _, t := range types {
		switch {
		case t == "null":
			s.Nullable = true
		case schemaType(t):
			kinds = append(kinds, t)
		}
	}
	switch types = kinds; len(types) {
	case 0:
	case 1:
		s.Type = types[0]
	default:
		for _, t := range types {
			s.AnyOf = append(s.AnyOf, &catalog.Schema{Type: t})
		}
	}

	if props, ok := m["properties"].(map[string]any); ok && len(props) > 0 {
		s.Properties = make(map[string]*catalog.Schema, len(props))
		for _, k := range schemaKeys(props) {
			s.Properties[k] = w.walk(props[k], depth+1)
		}
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if r, ok := r.(string); ok && !slices.Contains(s.Required, r) {
				s.Required = append(s.Required, r)
			}
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		if ap {
			s.AdditionalProperties = &catalog.Schema{}
		}
	case map[string]any:
		s.AdditionalProperties = w.walk(ap, depth+1)
	}

	// Items: 2020-12 has prefixItems and items (the rest); draft-07 has
	// items as an array (the tuple) and additionalItems (the rest).
	rest := m["items"]
	tuple, ok := m["prefixItems"].([]any)
	if !ok {
		if t, ok := rest.([]any); ok {
			tuple, rest = t, m["additionalItems"]
		}
	}
	for _, p := range tuple {
		s.PrefixItems = append(s.PrefixItems, w.walk(p, depth+1))
	}
	switch it := rest.(type) {
	case bool:
		if it {
			s.Items = &catalog.Schema{}
		}
	case map[string]any:
		s.Items = w.walk(it, depth+1)
	}

	if c, ok := m["const"]; ok {
		s.Enum = []any{c}
	} else if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		s.Enum = slices.Clone(e)
	}

	if s.Type == "" && len(s.AnyOf) == 0 {
		switch {
		case len(s.Properties) > 0:
			s.Type = "object"
		case s.Items != nil || len(s.PrefixItems) > 0:
			s.Type = "array"
		}
	}
	return s
}

// ref follows the reference v, a URI whose fragment is a JSON pointer into
// this document.
func (w *schemaWalker) ref(v any, depth int) *catalog.Schema {
	ref, ok := v.(string)
	if !ok || !strings.HasPrefix(ref, "#") || len(w.refs) > maxRefChain {
		return &catalog.Schema{}
	}
	ptr, err := url.PathUnescape(ref[1:])
	if err != nil || slices.Contains(w.refs, ptr) {
		return &catalog.Schema{}
	}
	target, ok := w.pointer(ptr)
	if !ok {
		return &catalog.Schema{}
	}
	w.refs = append(w.refs, ptr)
	defer func() { w.refs = w.refs[:len(w.refs)-1] }()
	return w.walk(target, depth)
}

// pointer returns the value the JSON pointer ptr ("/$defs/a~1b") names in
// the document.
func (w *schemaWalker) pointer(ptr string) (any, bool) {
	if ptr == "" {
		return w.root, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false // an anchor ("#node"): not followed
	}
	cur := w.root
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// union makes s the union of forms, the values of an anyOf or a oneOf. A
// form that is only null makes s Nullable; a single other form is merged
// into s.
func (w *schemaWalker) union(s *catalog.Schema, forms []any, depth int) *catalog.Schema {
	var rest []*catalog.Schema
	null := false
	for _, f := range forms {
		b := w.walk(f, depth+1)
		if onlyNull(b) {
			null = true
			continue
		}
		rest = append(rest, b)
	}
	switch {
	case slices.ContainsFunc(rest, emptySchema):
		// A form that takes any value makes the union take any.
	case len(rest) == 1:
		s = mergeSchemas(s, rest[0])
	case len(rest) > 1 && len(s.AnyOf) == 0:
		s.AnyOf = rest
	}
	// Several forms beside a union of types ({"type": ["string",
	// "object"], "anyOf": ...}) would need an intersection of unions: the
	// types are kept and the forms dropped.
	s.Nullable = s.Nullable || null
	return s
}

// onlyNull says whether s allows null and nothing else: {"type": "null"},
// {"const": null}.
func onlyNull(s *catalog.Schema) bool {
	if len(s.Enum) > 0 {
		return !slices.ContainsFunc(s.Enum, func(v any) bool { return v != nil })
	}
	return s.Nullable && s.Type == "" && len(s.AnyOf) == 0 && len(s.Properties) == 0 &&
		s.Items == nil && len(s.PrefixItems) == 0 && s.AdditionalProperties == nil
}

// mergeSchemas merges b into a, as allOf asks (a value matching both): the
// properties and required fields of both, a's description, title and
// constraints ahead of b's. Schemas that cannot merge (conflicting types,
// two unions) give a. Either may be modified and returned.
func mergeSchemas(a, b *catalog.Schema) *catalog.Schema {
	if emptySchema(a) {
		if a.Description != "" {
			b.Description = a.Description
		}
		if a.Title != "" {
			b.Title = a.Title
		}
		return b
	}
	if emptySchema(b) {
		if a.Description == "" {
			a.Description = b.Description
		}
		if a.Title == "" {
			a.Title = b.Title
		}
		return a
	}
	if a.Type != "" && b.Type != "" && a.Type != b.Type || len(a.AnyOf) > 0 && len(b.AnyOf) > 0 {
		return a
	}
	a.Nullable = (a.Nullable || !typedSchema(a)) && (b.Nullable || !typedSchema(b))
	if a.Type == "" {
		a.Type = b.Type
	}
	if a.AnyOf == nil {
		a.AnyOf = b.AnyOf
	}
	if len(b.Properties) > 0 && a.Properties == nil {
		a.Properties = make(map[string]*catalog.Schema, len(b.Properties))
	}
	for _, k := range schemaKeys(b.Properties) {
		if p, ok := a.Properties[k]; ok {
			a.Properties[k] = mergeSchemas(p, b.Properties[k])
		} else {
			a.Properties[k] = b.Properties[k]
		}
	}
	for _, r := range b.Required {
		if !slices.Contains(a.Required, r) {
			a.Required = append(a.Required, r)
		}
	}
	switch {
	case a.Items != nil && b.Items != nil:
		a.Items = mergeSchemas(a.Items, b.Items)
	case a.Items == nil:
		a.Items = b.Items
	}
	if len(a.PrefixItems) == 0 {
		a.PrefixItems = b.PrefixItems
	}
	if a.AdditionalProperties == nil {
		a.AdditionalProperties = b.AdditionalProperties
	}
	if len(a.Enum) == 0 {
		a.Enum = b.Enum
	}
	if a.Description == "" {
		a.Description = b.Description
	}
	if a.Title == "" {
		a.Title = b.Title
	}
	if a.Format == "" {
		a.Format = b.Format
	}
	if a.Minimum == nil {
		a.Minimum = b.Minimum
	}
	if a.Maximum == nil {
		a.Maximum = b.Maximum
	}
	return a
}

// emptySchema says whether s constrains nothing: any value (its
// description and title aside).
func emptySchema(s *catalog.Schema) bool {
	return !typedSchema(s) && len(s.Properties) == 0 && len(s.Required) == 0 && s.Items == nil &&
		len(s.PrefixItems) == 0 && s.AdditionalProperties == nil && s.Format == "" &&
		s.Minimum == nil && s.Maximum == nil && !s.Nullable
}

// typedSchema says whether s says what kind of value it takes, so that null is
// not one unless it is Nullable.
func typedSchema(s *catalog.Schema) bool {
	return s.Type != "" || len(s.AnyOf) > 0 || len(s.Enum) > 0
}

// schemaType says whether t is one of JSON Schema's types other than null.
func schemaType(t string) bool {
	switch t {
	case "object", "array", "string", "integer", "number", "boolean":
		return true
	}
	return false
}

// schemaNumber returns the first of m's keys holding a number.
func schemaNumber(m map[string]any, keys ...string) *float64 {
	for _, k := range keys {
		if f, ok := m[k].(float64); ok {
			return &f
		}
	}
	return nil
}

// schemaKeys returns m's keys in order, so that a schema too large for
// its bounds is cut the same way each time.
func schemaKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
