package upstream

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/yaml"
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

// textValue is a text item as a value: JSON if it parses, a YAML object
// or list if it is one (Flux's MCP server answers in YAML), else the text.
func textValue(s string) any {
	t := strings.TrimSpace(s)
	if t == "" {
		return s
	}
	var v any
	if json.Unmarshal([]byte(t), &v) == nil {
		return v
	}
	// One line is text ("Echo: hello" is no map); a document of several
	// lines that YAML reads as an object or a list is one.
	if strings.Contains(t, "\n") && (yamlStartRE.MatchString(t) || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "---")) {
		if js, err := yaml.YAMLToJSON([]byte(t)); err == nil {
			var y any
			if json.Unmarshal(js, &y) == nil {
				switch y.(type) {
				case map[string]any, []any:
					return y
				}
			}
		}
	}
	return s
}
