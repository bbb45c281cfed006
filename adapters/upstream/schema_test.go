package upstream

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecode/kubecode/catalog"
)

func TestSchemaOf(t *testing.T) {
	str := func() *catalog.Schema { return &catalog.Schema{Type: "string"} }
	obj := func(props map[string]*catalog.Schema, required ...string) *catalog.Schema {
		return &catalog.Schema{Type: "object", Properties: props, Required: required}
	}
	one := 1.0
	for _, c := range []struct {
		name string
		raw  string
		want *catalog.Schema
		in   string // the input as the declaration writes it
	}{
		{
			name: "filesystem edit_file",
			raw: `{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object",
				"properties":{"oldText":{"type":"string","description":"Text to search for - must match exactly"},
				"newText":{"type":"string","description":"Text to replace with"}},"required":["oldText","newText"],"additionalProperties":false}},
				"dryRun":{"type":"boolean","default":false,"description":"Preview changes using git-style diff format"}},
				"required":["path","edits"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
			want: obj(map[string]*catalog.Schema{
				"path": str(),
				"edits": {Type: "array", Items: obj(map[string]*catalog.Schema{
					"oldText": {Type: "string", Description: "Text to search for - must match exactly"},
					"newText": {Type: "string", Description: "Text to replace with"},
				}, "oldText", "newText")},
				"dryRun": {Type: "boolean", Description: "Preview changes using git-style diff format"},
			}, "path", "edits"),
			in: "input: { path: string; edits: { oldText: string; newText: string }[]; dryRun?: boolean }",
		},
		{
			name: "recursive tree",
			raw: `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object",
				"properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}}}`,
			want: obj(map[string]*catalog.Schema{"root": obj(map[string]*catalog.Schema{
				"name": str(), "children": {Type: "array", Items: &catalog.Schema{}},
			}, "name")}),
			in: "input?: { root?: { name: string; children?: unknown[] } }",
		},
		{
			name: "recursion through the root",
			raw:  `{"type":"object","properties":{"name":{"type":"string"},"parent":{"$ref":"#"}}}`,
			want: obj(map[string]*catalog.Schema{"name": str(), "parent": {}}),
			in:   "input?: { name?: string; parent?: unknown }",
		},
		{
			name: "anyOf with null",
			raw: `{"type":"object","properties":{"limit":{"anyOf":[{"type":"integer","minimum":1},{"type":"null"}],"default":null,"title":"Limit"},
				"path":{"type":["string","null"]},"tag":{"oneOf":[{"const":null},{"type":"string"},{"type":"integer"}]}}}`,
			want: obj(map[string]*catalog.Schema{
				"limit": {Type: "integer", Minimum: &one, Nullable: true, Title: "Limit"},
				"path":  {Type: "string", Nullable: true},
				"tag":   {AnyOf: []*catalog.Schema{str(), {Type: "integer"}}, Nullable: true},
			}),
			in: "input?: { limit?: number | null; path?: string | null; tag?: string | number | null }",
		},
		{
			name: "several types",
			raw:  `{"type":"object","properties":{"v":{"type":["string","number","null"],"description":"a value"}}}`,
			want: obj(map[string]*catalog.Schema{"v": {Description: "a value", Nullable: true,
				AnyOf: []*catalog.Schema{str(), {Type: "number"}}}}),
			in: "input?: { v?: string | number | null }",
		},
		{
			name: "oneOf of two objects",
			raw: `{"type":"object","required":["source"],"properties":{"source":{"description":"where from","oneOf":[
				{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},
				{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}]}}}`,
			want: obj(map[string]*catalog.Schema{"source": {Description: "where from", AnyOf: []*catalog.Schema{
				obj(map[string]*catalog.Schema{"path": str()}, "path"),
				obj(map[string]*catalog.Schema{"url": {Type: "string", Format: "uri"}}, "url"),
			}}}, "source"),
			in: "input: { source: { path: string } | { url: string } }",
		},
		{
			name: "allOf merged",
			raw: `{"description":"both","allOf":[{"$ref":"#/$defs/base"},{"properties":{"b":{"type":"integer"},"a":{"description":"the a"}},"required":["b"]},
				{"type":"string"}],"$defs":{"base":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}`,
			want: &catalog.Schema{Type: "object", Description: "both", Required: []string{"a", "b"}, Properties: map[string]*catalog.Schema{
				"a": {Type: "string", Description: "the a"}, "b": {Type: "integer"},
			}},
			in: "input: { a: string; b: number }",
		},
		{
			name: "ref beside a description",
			raw:  `{"type":"object","properties":{"mode":{"$ref":"#/definitions/Mode","description":"how to open"}},"definitions":{"Mode":{"type":"string","enum":["r","w"],"description":"a mode"}}}`,
			want: obj(map[string]*catalog.Schema{"mode": {Type: "string", Enum: []any{"r", "w"}, Description: "how to open"}}),
			in:   `input?: { mode?: "r" | "w" }`,
		},
		{
			name: "tuples",
			raw: `{"type":"object","properties":{"at":{"type":"array","items":[{"type":"string"},{"type":"number"}],"additionalItems":false},
				"span":{"prefixItems":[{"type":"integer"}],"items":{"type":"string"}},"any":{"type":"array","items":true}}}`,
			want: obj(map[string]*catalog.Schema{
				"at":   {Type: "array", PrefixItems: []*catalog.Schema{str(), {Type: "number"}}},
				"span": {Type: "array", PrefixItems: []*catalog.Schema{{Type: "integer"}}, Items: str()},
				"any":  {Type: "array", Items: &catalog.Schema{}},
			}),
			in: "input?: { any?: unknown[]; at?: [string, number]; span?: [number, ...string[]] }",
		},
		{
			name: "enums and constants",
			raw:  `{"type":"object","required":["op"],"properties":{"op":{"const":"add"},"sortBy":{"type":"string","enum":["name","size"]},"level":{"enum":[1,2,3]}}}`,
			want: obj(map[string]*catalog.Schema{
				"op": {Enum: []any{"add"}}, "sortBy": {Type: "string", Enum: []any{"name", "size"}}, "level": {Enum: []any{1.0, 2.0, 3.0}},
			}, "op"),
			in: `input: { op: "add"; level?: 1 | 2 | 3; sortBy?: "name" | "size" }`,
		},
		{
			name: "maps",
			raw:  `{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}},"meta":{"type":"object","additionalProperties":true}}}`,
			want: obj(map[string]*catalog.Schema{
				"env": {Type: "object", AdditionalProperties: str()}, "meta": {Type: "object", AdditionalProperties: &catalog.Schema{}},
			}),
			in: "input?: { env?: Record<string, string>; meta?: Record<string, unknown> }",
		},
		{
			name: "references of every kind",
			raw: `{"properties":{"a":{"$ref":"#/definitions/A"},"b":{"$ref":"#/$defs/x~1y~0z"},"c":{"$ref":"#/properties/a"},
				"d":{"$ref":"https://example.com/s.json"},"e":{"$ref":"#/$defs/missing"},"f":{"$ref":"#/$defs/a%20b"},
				"g":{"$ref":"#/$defs/list/1"},"h":{"$ref":"#node"},"i":{"$ref":"#/$defs/A/type"}},
				"definitions":{"A":{"type":"string"}},"$defs":{"x/y~z":{"type":"boolean"},"a b":{"type":"integer"},"list":[{},{"type":"number"}]}}`,
			want: obj(map[string]*catalog.Schema{
				"a": str(), "b": {Type: "boolean"}, "c": str(), "d": {}, "e": {}, "f": {Type: "integer"}, "g": {Type: "number"}, "h": {}, "i": {},
			}),
			in: "input?: { a?: string; b?: boolean; c?: string; d?: unknown; e?: unknown; f?: number; g?: number; h?: unknown; i?: unknown }",
		},
		{
			name: "ref cycle",
			raw: `{"$ref":"#/$defs/A","$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}},
				"B":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}}}`,
			want: obj(map[string]*catalog.Schema{"b": obj(map[string]*catalog.Schema{"a": {}})}),
			in:   "input?: { b?: { a?: unknown } }",
		},
		{
			name: "ref to itself",
			raw:  `{"$ref":"#/$defs/A","$defs":{"A":{"allOf":[{"$ref":"#/$defs/B"}]},"B":{"$ref":"#/$defs/A"}}}`,
			want: &catalog.Schema{},
			in:   "input?: unknown",
		},
		{name: "properties not an object", raw: `{"properties": 5}`, want: &catalog.Schema{}, in: "input?: unknown"},
		{name: "ref not a string", raw: `{"$ref": 7}`, want: &catalog.Schema{}, in: "input?: unknown"},
		{name: "an array", raw: `[]`, want: &catalog.Schema{}, in: "input?: unknown"},
		{name: "true", raw: `true`, want: &catalog.Schema{}, in: "input?: unknown"},
		{name: "false", raw: `false`, want: &catalog.Schema{}, in: "input?: unknown"},
		{
			name: "keywords of the wrong kind",
			raw: `{"type":5,"required":"x","items":"y","enum":3,"anyOf":{},"allOf":[1,null],"oneOf":[true,"x"],"minimum":"1",
				"description":7,"additionalProperties":"no","prefixItems":{},"$defs":[]}`,
			want: &catalog.Schema{},
			in:   "input?: unknown",
		},
		{
			name: "properties of the wrong kind",
			raw:  `{"type":["object",3],"properties":{"a":5,"b":null,"c":[]},"required":["a",1,"a"]}`,
			want: obj(map[string]*catalog.Schema{"a": {}, "b": {}, "c": {}}, "a"),
			in:   "input: { a: unknown; b?: unknown; c?: unknown }",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := SchemaOf(json.RawMessage(c.raw))
			if err != nil {
				t.Fatalf("SchemaOf: %v", err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("SchemaOf (-want +got):\n%s", diff)
			}
			op := &catalog.Operation{Name: "files.read_file", Provider: "files", Verb: "read_file", Input: got}
			want := "declare const tools: {\n  files: {\n    read_file(" + c.in + "): Promise<unknown>;\n  };\n};\n"
			if diff := cmp.Diff(want, catalog.Declaration(op)); diff != "" {
				t.Errorf("declaration (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSchemaOfBounds: hostile schemas end in unknown, quickly.
func TestSchemaOfBounds(t *testing.T) {
	t.Run("deep", func(t *testing.T) {
		raw := strings.Repeat(`{"type":"object","properties":{"x":`, 1000) + "{}" + strings.Repeat("}}", 1000)
		got, err := SchemaOf(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		want := &catalog.Schema{}
		in := "unknown"
		for range maxSchemaDepth + 1 {
			want = &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{"x": want}}
			in = "{ x?: " + in + " }"
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("SchemaOf (-want +got):\n%s", diff)
		}
		op := &catalog.Operation{Name: "files.read_file", Provider: "files", Verb: "read_file", Input: got}
		if decl := catalog.Declaration(op); !strings.Contains(decl, "read_file(input?: "+in+")") {
			t.Errorf("declaration: no %s in\n%s", in, decl)
		}
	})
	t.Run("deep arrays", func(t *testing.T) {
		raw := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
		got, err := SchemaOf(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&catalog.Schema{}, got); diff != "" {
			t.Errorf("SchemaOf (-want +got):\n%s", diff)
		}
	})
	for _, width := range []int{10, 3000} {
		t.Run("fan-out "+strconv.Itoa(width), func(t *testing.T) {
			// Each definition uses the next width times: width^30 nodes
			// if expanded.
			var defs []string
			for i := range 30 {
				var props []string
				for j := range width {
					props = append(props, `"p`+strconv.Itoa(j)+`":{"$ref":"#/$defs/d`+strconv.Itoa(i+1)+`"}`)
				}
				defs = append(defs, `"d`+strconv.Itoa(i)+`":{"type":"object","properties":{`+strings.Join(props, ",")+`}}`)
			}
			raw := `{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`
			start := time.Now()
			got, err := SchemaOf(json.RawMessage(raw))
			if err != nil {
				t.Fatal(err)
			}
			// Past the bound, each property of an object being
			// converted is an empty schema.
			if n, most := countNodes(got), maxSchemaNodes+width*(maxSchemaDepth+1); n > most {
				t.Errorf("%d nodes, want at most %d", n, most)
			}
			t.Logf("%d nodes in %v", countNodes(got), time.Since(start))
		})
	}
	t.Run("chain of refs", func(t *testing.T) {
		var defs []string
		for i := range 500 {
			defs = append(defs, `"d`+strconv.Itoa(i)+`":{"$ref":"#/$defs/d`+strconv.Itoa(i+1)+`"}`)
		}
		raw := `{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `,"d500":{"type":"string"}}}`
		got, err := SchemaOf(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&catalog.Schema{}, got); diff != "" {
			t.Errorf("SchemaOf (-want +got):\n%s", diff)
		}
	})
	for _, raw := range []string{`{"type":`, ``, `{} {}`, strings.Repeat("[", 20000) + strings.Repeat("]", 20000)} {
		if _, err := SchemaOf(json.RawMessage(raw)); err == nil {
			t.Errorf("SchemaOf(%.20q): no error", raw)
		}
	}
}

// countNodes counts the schemas in s's tree.
func countNodes(s *catalog.Schema) int {
	if s == nil {
		return 0
	}
	n := 1 + countNodes(s.Items) + countNodes(s.AdditionalProperties)
	for _, p := range s.Properties {
		n += countNodes(p)
	}
	for _, b := range s.AnyOf {
		n += countNodes(b)
	}
	for _, b := range s.PrefixItems {
		n += countNodes(b)
	}
	return n
}
