package tokenbench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubecode/kubecode/internal/tokencount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Side is one MCP server under measurement, connected.
type Side struct {
	Name string
	// Definitions is the tools/list result as the model is given it.
	Definitions string
	cs          *mcp.ClientSession
	closers     []func() error
}

// Connect opens an MCP session over t and reads the tool definitions.
func Connect(ctx context.Context, name string, t mcp.Transport) (*Side, error) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "kubecode-tokenbench", Version: "1"}, nil).Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("tokenbench: connect %s: %w", name, err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		cs.Close()
		return nil, fmt.Errorf("tokenbench: %s: list tools: %w", name, err)
	}
	defs, err := json.Marshal(tools.Tools)
	if err != nil {
		cs.Close()
		return nil, fmt.Errorf("tokenbench: %s: %w", name, err)
	}
	return &Side{Name: name, Definitions: string(defs), cs: cs}, nil
}

// Close ends the session and stops what serves it.
func (s *Side) Close() error {
	err := s.cs.Close()
	for _, c := range s.closers {
		_ = c()
	}
	return err
}

// Call is one tool call an agent made, as the model wrote and read it.
type Call struct {
	Tool   string
	Args   string // JSON
	Result string
	Error  bool
}

// Run is one side's answer to one scenario.
type Run struct {
	Side, Scenario, Question string
	Of                       string // the scenario whose peer run it is compared with
	Definitions              string
	Calls                    []Call
	Answer                   string // JSON
}

// Tokens of each part of a run.
func (r *Run) definitionTokens() int { return tokencount.Count(r.Definitions) }

func callTokens(c Call) int {
	return tokencount.Count(c.Tool+c.Args) + tokencount.Count(c.Result)
}

// Total is the context the run ends with: definitions, question, every
// call and result, and the answer.
func (r *Run) Total() int {
	n := r.definitionTokens() + tokencount.Count(r.Question) + tokencount.Count(r.Answer)
	for _, c := range r.Calls {
		n += callTokens(c)
	}
	return n
}

// WithoutDefinitions is Total less the tool definitions.
func (r *Run) WithoutDefinitions() int { return r.Total() - r.definitionTokens() }

// CallTokens is what the run's tool calls cost: each call's name and arguments
// and its result. It is what a question costs once a client caches the
// tool definitions (the question and the model's answer cost the same on
// every side).
func (r *Run) CallTokens() int {
	n := 0
	for _, c := range r.Calls {
		n += callTokens(c)
	}
	return n
}

// CumulativeInput adds up the input of every turn of the agent loop: the
// turn that makes call i re-sends the definitions, the question and calls
// 0..i-1 with their results; the last turn, which answers, re-sends all.
func (r *Run) CumulativeInput() int {
	base := r.definitionTokens() + tokencount.Count(r.Question)
	total, history := 0, 0
	for _, c := range r.Calls {
		total += base + history
		history += callTokens(c)
	}
	return total + base + history
}

// recorder is what a scenario's agent calls tools through.
type recorder struct {
	ctx  context.Context
	side *Side
	run  *Run
}

// call makes one tool call and records it. A tool error is returned as an
// error after being recorded: the model read it too.
func (r *recorder) call(tool string, args map[string]any) (string, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	res, err := r.side.cs.CallTool(r.ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", tool, a, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	r.run.Calls = append(r.run.Calls, Call{Tool: tool, Args: string(a), Result: text.String(), Error: res.IsError})
	if res.IsError {
		return text.String(), fmt.Errorf("%s %s failed: %.300s", tool, a, text.String())
	}
	return text.String(), nil
}
