package broker

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/kubecode/kubecode/catalog"
)

// Tables are how direct mode answers a list: one line per item with the
// columns the operation's hints name, as compact as the text a person
// reads from kubectl get.

// defaultColumns are the columns of a list whose hints name none.
var defaultColumns = []catalog.Column{
	{Name: "NAMESPACE", Paths: []string{"metadata.namespace"}},
	{Name: "NAME", Paths: []string{"metadata.name"}},
	{Name: "CREATED", Paths: []string{"metadata.creationTimestamp"}},
}

// maxCell bounds a table cell's bytes; cutMark ends a cell cut short.
const (
	maxCell = 80
	cutMark = ",..."
)

// table renders items (JSON objects) with cols. A column no item has a
// value for is left out.
func table(items []any, cols []catalog.Column) string {
	if len(cols) == 0 {
		cols = defaultColumns
	}
	cells := make([][]string, len(items))
	used := make([]bool, len(cols))
	for i, it := range items {
		cells[i] = make([]string, len(cols))
		for j, c := range cols {
			for _, p := range c.Paths {
				if v := cellValue(lookupPath(it, strings.Split(p, "."))); v != "" {
					cells[i][j] = v
					used[j] = true
					break
				}
			}
		}
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(vals []string) {
		var keep []string
		for j, v := range vals {
			if used[j] {
				if v == "" {
					v = "-"
				}
				keep = append(keep, v)
			}
		}
		fmt.Fprintln(w, strings.Join(keep, "\t"))
	}
	header := make([]string, len(cols))
	for j, c := range cols {
		header[j] = c.Name
	}
	row(header)
	for _, r := range cells {
		row(r)
	}
	_ = w.Flush()
	return b.String()
}

// lookupPath returns the values at path in v, flattening arrays.
func lookupPath(v any, path []string) []any {
	if len(path) == 0 {
		if arr, ok := v.([]any); ok {
			return arr
		}
		if v == nil {
			return nil
		}
		return []any{v}
	}
	switch t := v.(type) {
	case map[string]any:
		return lookupPath(t[path[0]], path[1:])
	case []any:
		var out []any
		for _, x := range t {
			out = append(out, lookupPath(x, path)...)
		}
		return out
	}
	return nil
}

// cellValue writes values for a cell: values joined by commas (an object
// as key=value pairs with sorted keys), cut to about maxCell bytes.
func cellValue(vals []any) string {
	var parts []string
	for _, v := range vals {
		switch t := v.(type) {
		case string:
			parts = append(parts, t)
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var kv []string
			for _, k := range keys {
				kv = append(kv, k+"="+cellValue([]any{t[k]}))
			}
			parts = append(parts, strings.Join(kv, ","))
		default:
			b, err := json.Marshal(t)
			if err != nil {
				continue
			}
			parts = append(parts, string(b))
		}
	}
	s := strings.Join(parts, ",")
	s = strings.Join(strings.Fields(s), " ") // one line
	if len(s) > maxCell {
		// Cut at a value's end where one is near, so no value comes back
		// shortened into another ("image:1.2" into "image"), and say so.
		cut := maxCell - len(cutMark)
		if i := strings.LastIndexByte(s[:cut], ','); i > maxCell/2 {
			cut = i
		}
		s = strings.ToValidUTF8(s[:cut], "") + cutMark
	}
	return s
}
