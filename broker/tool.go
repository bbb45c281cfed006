package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool adds a tool whose arguments are an In, as mcp.AddTool does: the
// input schema inferred from In, the arguments validated against it (the
// same "validating \"arguments\"" error for the model to fix), then
// decoded into In. Unlike mcp.AddTool it decodes with encoding/json: the
// SDK's decoder takes a 32 KB buffer for every value it decodes, twice per
// call here, which was a fifth of everything the server allocated per
// execute_code. Handlers set the result's content themselves; an error
// they return becomes an error result, as with mcp.AddTool.
func addTool[In any](s *mcp.Server, t *mcp.Tool, h func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, any, error)) {
	schema, err := jsonschema.ForType(reflect.TypeFor[In](), &jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err)) // a programming error: In is ours
	}
	resolved, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err))
	}
	tt := *t
	tt.InputSchema = schema
	s.AddTool(&tt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil {
			return errorResult(fmt.Errorf("validating \"arguments\": unmarshaling arguments: %w", err)), nil
		}
		if err := resolved.Validate(m); err != nil {
			return errorResult(fmt.Errorf("validating \"arguments\": %w", err)), nil
		}
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return errorResult(err), nil
		}
		res, _, err := h(ctx, req, in)
		if err != nil {
			return errorResult(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		return res, nil
	})
}

// errorResult is a tool error the model reads and can fix.
func errorResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}
