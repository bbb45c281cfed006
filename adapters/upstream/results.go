package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// MaxResult bounds an upstream call's result, as JSON: a script gets an
// error rather than a result that would fill the worker's memory.
const MaxResult = 8 << 20

// resultOf is what a script gets from a tool's result: its
// structuredContent; else its one content item decoded (JSON text, YAML
// text of an object or list, else the text); several items, a list of
// them. Images and audio are described, not passed (their bytes are no
// use to a script): {type, mimeType, bytes}. A result the tool marks as an
// error is a *catalog.CallError with Reason "ToolError" and its text.
func resultOf(op string, res *mcp.CallToolResult) (json.RawMessage, error) {
	if res.IsError {
		var msgs []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				msgs = append(msgs, t.Text)
			}
		}
		msg := strings.TrimSpace(strings.Join(msgs, "\n"))
		if msg == "" {
			msg = "the tool reported an error and said nothing more"
		}
		if len(msg) > 4096 {
			msg = msg[:4096] + "…"
		}
		return nil, &catalog.CallError{Reason: "ToolError", Message: op + ": " + msg}
	}
	var v any
	if res.StructuredContent != nil {
		v = res.StructuredContent
	} else {
		items := make([]any, 0, len(res.Content))
		for _, c := range res.Content {
			items = append(items, contentValue(c))
		}
		switch len(items) {
		case 0:
			v = nil
		case 1:
			v = items[0]
		default:
			v = items
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: its result is no JSON value: %v", op, err)
	}
	if len(out) > MaxResult {
		return nil, &catalog.CallError{Status: 413, Reason: "TooLarge",
			Message: fmt.Sprintf("%s returned %d MiB, more than the %d MiB a result may hold: ask for less (a filter, a page, a path)", op, len(out)>>20, MaxResult>>20)}
	}
	return out, nil
}

// contentValue decodes one content item.
func contentValue(c mcp.Content) any {
	switch c := c.(type) {
	case *mcp.TextContent:
		return textValue(c.Text)
	case *mcp.ImageContent:
		return map[string]any{"type": "image", "mimeType": c.MIMEType, "bytes": len(c.Data)}
	case *mcp.AudioContent:
		return map[string]any{"type": "audio", "mimeType": c.MIMEType, "bytes": len(c.Data)}
	case *mcp.ResourceLink:
		return map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name, "mimeType": c.MIMEType}
	case *mcp.EmbeddedResource:
		r := map[string]any{"type": "resource"}
		if c.Resource != nil {
			r["uri"], r["mimeType"] = c.Resource.URI, c.Resource.MIMEType
			if c.Resource.Text != "" {
				r["text"] = c.Resource.Text
			} else {
				r["bytes"] = len(c.Resource.Blob)
			}
		}
		return r
	}
	return map[string]any{"type": "unknown"}
}

var yamlStartRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*:(\s|$)`)

// textValue is a text item as a value: a JSON object or list if it is one
// (numbers kept exact); a YAML object or list if it is one document of
// several lines that reads as one (Flux's MCP server answers in YAML),
// with only plain JSON-like scalars taken as numbers, booleans and null
// ("NO", "0755", "1.10" stay text); else the text.
func textValue(s string) any {
	t := strings.TrimSpace(s)
	if t == "" {
		return s
	}
	if t[0] == '{' || t[0] == '[' {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil && !dec.More() {
			if _, err := dec.Token(); err == io.EOF {
				return v
			}
		}
	}
	// One line is text ("Echo: hello" is no map); so are several
	// documents.
	if strings.Contains(t, "\n") && !strings.Contains(t, "\n---") && (yamlStartRE.MatchString(t) || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "---")) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(t), &doc) == nil && len(doc.Content) == 1 {
			if v, ok := yamlValue(doc.Content[0], 0); ok {
				switch v.(type) {
				case map[string]any, []any:
					return v
				}
			}
		}
	}
	return s
}

var (
	jsonIntRE   = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,14})$`) // exact in a script's numbers
	jsonFloatRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// yamlValue converts a YAML node as JSON would read its text; ok is
// false for what has no such reading (aliases, keys that are not text).
func yamlValue(n *yaml.Node, depth int) (any, bool) {
	if depth > 64 {
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, false
			}
			v, ok := yamlValue(n.Content[i+1], depth+1)
			if !ok {
				return nil, false
			}
			m[k.Value] = v
		}
		return m, true
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, ok := yamlValue(c, depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case yaml.ScalarNode:
		if n.Style != 0 && n.Style != yaml.FlowStyle { // quoted or block text
			return n.Value, true
		}
		switch {
		case n.Value == "true":
			return true, true
		case n.Value == "false":
			return false, true
		case n.Value == "null" || n.Value == "~" || n.Value == "":
			return nil, true
		case jsonIntRE.MatchString(n.Value):
			return json.Number(n.Value), true
		case jsonFloatRE.MatchString(n.Value):
			// Only a number that reads back as written ("1.10" is a
			// version, not 1.1).
			if f, err := strconv.ParseFloat(n.Value, 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) == n.Value {
				return json.Number(n.Value), true
			}
		}
		return n.Value, true
	}
	return nil, false
}
