package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Prompt is an MCP prompt for a question people start with ("is this
// namespace healthy?"): its message hands the agent a script to run with
// execute_code, not data gathered beforehand, so the answer still costs
// a few hundred tokens.
type Prompt struct {
	Name, Title string
	// Description is what the prompt answers: the script's leading
	// comment.
	Description string
	Arguments   []*mcp.PromptArgument
	// Script's first line is "const args = { a: '', ... }": the prompt
	// replaces it with the values asked for.
	Script string
}

// argsLine is a prompt script's first line.
var argsLine = regexp.MustCompile(`^const args = \{([^}]*)\}\s*$`)

// NewPrompt makes the prompt name of script, whose first line names its
// arguments (const args = { namespace: ” }) and whose leading comment
// says what it answers; required are the arguments it needs.
func NewPrompt(name, title, script string, required ...string) (*Prompt, error) {
	first, rest, _ := strings.Cut(script, "\n")
	m := argsLine.FindStringSubmatch(first)
	if m == nil {
		return nil, fmt.Errorf("prompt %s: its script must begin with const args = { name: '', ... }", name)
	}
	p := &Prompt{Name: name, Title: title, Script: script}
	for _, field := range strings.Split(m[1], ",") {
		key, _, _ := strings.Cut(strings.TrimSpace(field), ":")
		if key = strings.TrimSpace(key); key != "" {
			p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: key, Required: slices.Contains(required, key)})
		}
	}
	var desc []string
	for _, l := range strings.Split(rest, "\n") {
		c, ok := strings.CutPrefix(strings.TrimSpace(l), "//")
		if !ok {
			break
		}
		desc = append(desc, strings.TrimSpace(c))
	}
	p.Description = strings.Join(desc, " ")
	for _, a := range p.Arguments {
		a.Description = "the " + a.Name
		if !a.Required {
			a.Description += " (optional)"
		}
	}
	return p, nil
}

// message is the prompt's message for args: the script, its arguments
// set, and how to run it.
func (p *Prompt) message(args map[string]string) (*mcp.GetPromptResult, error) {
	values := map[string]string{}
	for _, a := range p.Arguments {
		v := strings.TrimSpace(args[a.Name])
		if v == "" && a.Required {
			return nil, fmt.Errorf("prompt %s needs the argument %s", p.Name, a.Name)
		}
		values[a.Name] = v
	}
	for k := range args {
		if !slices.ContainsFunc(p.Arguments, func(a *mcp.PromptArgument) bool { return a.Name == k }) {
			return nil, fmt.Errorf("prompt %s has no argument %s", p.Name, k)
		}
	}
	// The values as one JSON object: whatever they hold stays a string.
	obj, _ := json.Marshal(values)
	_, rest, _ := strings.Cut(p.Script, "\n")
	code := "const args = " + string(obj) + "\n" + rest
	text := "Answer this with kubecode: run the script below with execute_code exactly as it is (it returns only the findings, a few hundred tokens), then explain what it found and what to do about it. Change nothing unless asked.\n\n```ts\n" + strings.TrimRight(code, "\n") + "\n```"
	return &mcp.GetPromptResult{Description: p.Description, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
}

// addPrompts serves the broker's prompts on s.
func (b *Broker) addPrompts(s *mcp.Server) {
	for _, p := range b.opts.Prompts {
		s.AddPrompt(&mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: p.Arguments},
			func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return p.message(req.Params.Arguments)
			})
	}
}
