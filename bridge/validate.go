package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
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
		return nil // null is "not given"
	}
	switch s.Type {
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
		if s.Items != nil {
			for i, x := range a {
				if err := check(opName, s.Items, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
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
