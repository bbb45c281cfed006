package bridge

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecode/kubecode/catalog"
)

// TestValidateForms checks arguments against unions, tuples, nullable
// values and constants.
func TestValidateForms(t *testing.T) {
	str := &catalog.Schema{Type: "string"}
	num := &catalog.Schema{Type: "number"}
	pathObj := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{"path": str}, Required: []string{"path"}}
	urlObj := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{"url": str, "depth": {Type: "integer"}}, Required: []string{"url"}}
	input := func(props map[string]*catalog.Schema) *catalog.Operation {
		return &catalog.Operation{Name: "files.read", Input: &catalog.Schema{Type: "object", Properties: props}}
	}
	for _, c := range []struct {
		name string
		op   *catalog.Operation
		args string
		want string // "" for valid
	}{
		{"union first form", input(map[string]*catalog.Schema{"src": {AnyOf: []*catalog.Schema{str, pathObj}}}), `{"src": "a"}`, ""},
		{"union second form", input(map[string]*catalog.Schema{"src": {AnyOf: []*catalog.Schema{str, pathObj}}}), `{"src": {"path": "a"}}`, ""},
		{"union no form", input(map[string]*catalog.Schema{"src": {AnyOf: []*catalog.Schema{str, pathObj}}}), `{"src": 3}`,
			`files.read: field "src" expected one of: string, {path: string}; got a number`},
		{"union the one object form says what is wrong", input(map[string]*catalog.Schema{"src": {AnyOf: []*catalog.Schema{str, pathObj}}}), `{"src": {"paht": "a"}}`,
			`files.read: missing required field "src.path"`},
		{"union of two objects", input(map[string]*catalog.Schema{"src": {AnyOf: []*catalog.Schema{pathObj, urlObj}}}), `{"src": {"depth": 1}}`,
			`files.read: field "src" expected one of: {path: string}, {url: string, depth?: integer}; got an object`},
		{"union with shared properties", input(map[string]*catalog.Schema{"src": {
			Type: "object", Properties: map[string]*catalog.Schema{"mode": str},
			AnyOf: []*catalog.Schema{{Required: []string{"path"}, Properties: map[string]*catalog.Schema{"path": str}}, {Required: []string{"url"}, Properties: map[string]*catalog.Schema{"url": str}}},
		}}), `{"src": {"mode": "r", "url": "u"}}`, ""},
		{"union with shared properties, none", input(map[string]*catalog.Schema{"src": {
			Type: "object", Properties: map[string]*catalog.Schema{"mode": str},
			AnyOf: []*catalog.Schema{{Required: []string{"path"}, Properties: map[string]*catalog.Schema{"path": str}}, {Required: []string{"url"}, Properties: map[string]*catalog.Schema{"url": str}}},
		}}), `{"src": {"mode": "r"}}`,
			`files.read: field "src" expected one of: {path: string, mode?: string}, {url: string, mode?: string}; got an object`},
		{"tuple", input(map[string]*catalog.Schema{"at": {Type: "array", PrefixItems: []*catalog.Schema{str, num}}}), `{"at": ["a", 1]}`, ""},
		{"tuple shorter", input(map[string]*catalog.Schema{"at": {Type: "array", PrefixItems: []*catalog.Schema{str, num}}}), `{"at": ["a"]}`, ""},
		{"tuple wrong position", input(map[string]*catalog.Schema{"at": {Type: "array", PrefixItems: []*catalog.Schema{str, num}}}), `{"at": ["a", "b"]}`,
			`files.read: field "at[1]" must be a number, got a string`},
		{"tuple too long", input(map[string]*catalog.Schema{"at": {Type: "array", PrefixItems: []*catalog.Schema{str, num}}}), `{"at": ["a", 1, 2]}`,
			`files.read: field "at" must have at most 2 items, got 3`},
		{"tuple with rest", input(map[string]*catalog.Schema{"at": {Type: "array", PrefixItems: []*catalog.Schema{str}, Items: num}}), `{"at": ["a", 1, 2]}`, ""},
		{"tuple rest wrong", input(map[string]*catalog.Schema{"at": {Type: "array", PrefixItems: []*catalog.Schema{str}, Items: num}}), `{"at": ["a", 1, "x"]}`,
			`files.read: field "at[2]" must be a number, got a string`},
		{"nullable null", input(map[string]*catalog.Schema{"n": {Type: "string", Nullable: true}}), `{"n": null}`, ""},
		{"nullable value", input(map[string]*catalog.Schema{"n": {Type: "string", Nullable: true}}), `{"n": 1}`,
			`files.read: field "n" must be a string, got a number`},
		{"constant", input(map[string]*catalog.Schema{"op": {Type: "string", Enum: []any{"add"}}}), `{"op": "add"}`, ""},
		{"constant other", input(map[string]*catalog.Schema{"op": {Type: "string", Enum: []any{"add"}}}), `{"op": "remove"}`,
			`files.read: field "op" must be one of [add], got remove`},
		{"array of unions", input(map[string]*catalog.Schema{"xs": {Type: "array", Items: &catalog.Schema{AnyOf: []*catalog.Schema{str, num}}}}), `{"xs": ["a", 1, true]}`,
			`files.read: field "xs[2]" expected one of: string, number; got a boolean`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			if err := validateArgs(c.op, json.RawMessage(c.args)); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("validateArgs(%s) (-want +got):\n%s", c.args, diff)
			}
		})
	}
}
