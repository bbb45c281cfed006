package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Search returns what search_tools answers for query, and the operations
// it names, best first. Answers disclose progressively, since every byte
// is a token the model pays for:
//
//   - a query that is an operation's name (or alias) answers with that
//     operation's complete declaration, result types in detail;
//   - a query that is a result type's name ("Pod") answers with the
//     declaration of the operation that gets one, in detail;
//   - any other query answers with the full declarations of the best
//     FullDeclarations matches, then one-line signatures of the others.
func (b *Broker) Search(ctx context.Context, query string, limit int) (string, []*catalog.Operation, error) {
	st, err := b.state(ctx)
	if err != nil {
		return "", nil, err
	}
	if op := st.index.Lookup(query); op != nil {
		return st.detail.Declarations([]*catalog.Operation{op}), []*catalog.Operation{op}, nil
	}
	if op := st.types[strings.ToLower(strings.TrimSpace(query))]; op != nil {
		return st.detail.Declarations([]*catalog.Operation{op}), []*catalog.Operation{op}, nil
	}
	if limit <= 0 {
		limit = b.opts.SearchLimit
	}
	hits, err := st.index.Search(query, limit)
	if err != nil {
		return "", nil, err
	}
	if len(hits) == 0 {
		return "", nil, nil
	}
	ops := make([]*catalog.Operation, len(hits))
	for i, h := range hits {
		ops[i] = h.Op
	}
	full := min(b.opts.FullDeclarations, len(ops))
	var out strings.Builder
	out.WriteString(st.decl.Declarations(ops[:full]))
	if len(ops) > full {
		out.WriteString("// Also (search a name for its declaration):\n")
		for _, op := range ops[full:] {
			out.WriteString("// " + st.decl.Signature(op) + "\n")
		}
	}
	return out.String(), ops, nil
}

// resultTypes maps each result type's name, lower-case, to the operation
// whose declaration shows it best: a get (one object) over a list, an
// operation on the core group's resource over another group's.
func resultTypes(ops []*catalog.Operation) map[string]*catalog.Operation {
	out := map[string]*catalog.Operation{}
	rank := func(op *catalog.Operation) int {
		r := 0
		if op.Verb != "get" {
			r += 2
		}
		if op.Group != "" {
			r++
		}
		return r
	}
	for _, op := range ops {
		if op.OutputName == "" {
			continue
		}
		k := strings.ToLower(op.OutputName)
		if prev := out[k]; prev == nil || rank(op) < rank(prev) {
			out[k] = op
		}
	}
	return out
}

func (b *Broker) searchTool(ctx context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, any, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return textResult("query is empty: describe what you want to do, e.g. \"list pods that restarted\"", true), nil, nil
	}
	if in.Limit < 0 || in.Limit > 50 {
		return textResult("limit must be between 1 and 50", true), nil, nil
	}
	decls, ops, err := b.Search(ctx, q, in.Limit)
	if err != nil {
		return textResult("search failed: "+err.Error(), true), nil, nil
	}
	if len(ops) == 0 {
		return textResult(fmt.Sprintf("No operation matches %q. Try other words (a resource such as \"pods\", a verb such as \"logs\"), or run tools.kubernetes.api_resources() in execute_code to see every resource.", q), false), nil, nil
	}
	return textResult(decls, false), nil, nil
}
