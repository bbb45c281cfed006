package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/internal/editdistance"
)

// argError is an invalid argument, naming the field.
type argError struct {
	field string
	msg   string
}

func (e *argError) Error() string { return e.msg }

// validateArgs checks args against op's Input schema before any API call.
func validateArgs(op *catalog.Operation, args json.RawMessage) *argError {
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return &argError{msg: fmt.Sprintf("arguments of %s are not valid JSON: %v", op.Name, err)}
	}
	if op.Input == nil {
		return nil
	}
	return check(op.Name, op.Input, v, "")
}

func check(opName string, s *catalog.Schema, v any, path string) *argError {
	where := "argument"
	if path != "" {
		where = fmt.Sprintf("field %q", path)
	}
	fail := func(format string, a ...any) *argError {
		return &argError{field: path, msg: fmt.Sprintf("%s: %s %s", opName, where, fmt.Sprintf(format, a...))}
	}
	if v == nil {
		return nil // null is "not given" (and a Nullable schema's value)
	}
	if len(s.AnyOf) > 0 {
		return checkUnion(opName, s, v, path, fail)
	}
	typ := s.Type
	if typ == "" && len(s.PrefixItems) > 0 {
		typ = "array"
	}
	switch typ {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fail("must be an object, got %s", jsonType(v))
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				return &argError{field: join(path, r), msg: fmt.Sprintf("%s: missing required field %q", opName, join(path, r))}
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil {
					ps = s.AdditionalProperties
				} else if len(s.Properties) > 0 {
					msg := fmt.Sprintf("%s: unknown field %q", opName, join(path, k))
					if near := nearest(k, s.Properties); near != "" {
						msg += fmt.Sprintf("; did you mean %q?", near)
					}
					return &argError{field: join(path, k), msg: msg + " (known: " + strings.Join(sortedKeys(s.Properties), ", ") + ")"}
				} else {
					continue
				}
			}
			if err := check(opName, ps, m[k], join(path, k)); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fail("must be an array, got %s", jsonType(v))
		}
		if n := len(s.PrefixItems); n > 0 && s.Items == nil && len(a) > n {
			return fail("must have at most %d items, got %d", n, len(a))
		}
		for i, x := range a {
			is := s.Items
			if i < len(s.PrefixItems) {
				is = s.PrefixItems[i]
			}
			if is == nil {
				continue
			}
			if err := check(opName, is, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fail("must be a string, got %s", jsonType(v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fail("must be a boolean, got %s", jsonType(v))
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return fail("must be a number, got %s", jsonType(v))
		}
		f, err := n.Float64()
		if err != nil {
			return fail("is not a number: %v", err)
		}
		if s.Type == "integer" && f != math.Trunc(f) {
			return fail("must be an integer, got %s", n)
		}
		if s.Minimum != nil && f < *s.Minimum {
			return fail("must be at least %v, got %s", *s.Minimum, n)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return fail("must be at most %v, got %s", *s.Maximum, n)
		}
	}
	if len(s.Enum) > 0 {
		for _, e := range s.Enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				return nil
			}
		}
		return fail("must be one of %v, got %v", s.Enum, v)
	}
	return nil
}

// checkUnion checks v against the forms of the union s: it is valid when
// one of them takes it. When only one form is of v's JSON type, its error
// is the answer (it says what is wrong inside); otherwise the error lists
// the forms.
func checkUnion(opName string, s *catalog.Schema, v any, path string, fail func(string, ...any) *argError) *argError {
	var (
		forms []string
		typed *argError // the error of the one form of v's type
		n     int       // forms of v's type
	)
	for _, b := range s.Branches() {
		if b == nil {
			return nil
		}
		err := check(opName, b, v, path)
		if err == nil {
			return nil
		}
		if accepts(b, v) {
			typed = err
			n++
		}
		if f := describe(b, 2); !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	if n == 1 {
		return typed
	}
	return fail("expected one of: %s; got %s", strings.Join(forms, ", "), jsonType(v))
}

// accepts says whether v's JSON type is one s allows, whatever else s
// requires of it.
func accepts(s *catalog.Schema, v any) bool {
	switch v.(type) {
	case map[string]any:
		return s.Type == "object" || s.Type == "" && len(s.PrefixItems) == 0
	case []any:
		return s.Type == "array" || s.Type == ""
	case string:
		return s.Type == "string" || s.Type == "" && len(s.PrefixItems) == 0 || s.IntOrString
	case bool:
		return s.Type == "boolean" || s.Type == "" && len(s.PrefixItems) == 0
	case json.Number:
		return s.Type == "number" || s.Type == "integer" || s.Type == "" && len(s.PrefixItems) == 0 || s.IntOrString
	}
	return true
}

// describe writes s briefly, as a type the error names: "string",
// "{path: string, line?: number}", "string[]". depth bounds the objects
// written out; deeper ones are "object".
func describe(s *catalog.Schema, depth int) string {
	if s == nil {
		return "unknown"
	}
	var t string
	switch {
	case len(s.AnyOf) > 0:
		var forms []string
		for _, b := range s.Branches() {
			forms = append(forms, describe(b, depth))
		}
		t = strings.Join(forms, " | ")
	case len(s.Enum) > 0 && len(s.Enum) <= 4:
		var lits []string
		for _, e := range s.Enum {
			j, _ := json.Marshal(e)
			lits = append(lits, string(j))
		}
		t = strings.Join(lits, " | ")
	case s.IntOrString:
		t = "number | string"
	case len(s.PrefixItems) > 0:
		var items []string
		for _, p := range s.PrefixItems {
			items = append(items, describe(p, depth-1))
		}
		t = "[" + strings.Join(items, ", ") + "]"
	case s.Type == "array":
		t = describe(s.Items, depth-1)
		if strings.Contains(t, " | ") {
			t = "(" + t + ")"
		}
		t += "[]"
	case s.Type == "integer":
		t = "integer"
	case s.Type == "object" && len(s.Properties) > 0 && depth > 0:
		keys := sortedKeys(s.Properties)
		sort.SliceStable(keys, func(i, j int) bool {
			return slices.Contains(s.Required, keys[i]) && !slices.Contains(s.Required, keys[j])
		})
		var fields []string
		for i, k := range keys {
			if i == 4 {
				fields = append(fields, "…")
				break
			}
			opt := "?"
			if slices.Contains(s.Required, k) {
				opt = ""
			}
			fields = append(fields, k+opt+": "+describe(s.Properties[k], depth-1))
		}
		t = "{" + strings.Join(fields, ", ") + "}"
	case s.Type != "":
		t = s.Type
	default:
		t = "unknown"
	}
	if s.Nullable {
		t += " | null"
	}
	return t
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return "null"
}

func sortedKeys(m map[string]*catalog.Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func nearest(k string, props map[string]*catalog.Schema) string {
	best, bestD := "", 1<<30
	for p := range props {
		d := editdistance.Levenshtein(strings.ToLower(k), strings.ToLower(p))
		if d < bestD || (d == bestD && p < best) {
			best, bestD = p, d
		}
	}
	if bestD <= max(2, len(k)/3) {
		return best
	}
	return ""
}
