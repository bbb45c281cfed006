package main

import (
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/examples"
)

// prompts returns the MCP prompts served: each hands the agent a script
// of examples/prompts to run.
func prompts() ([]*broker.Prompt, error) {
	var out []*broker.Prompt
	for _, s := range examples.Prompts() {
		p, err := broker.NewPrompt(s.Name, s.Title, s.Script, s.Required...)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
