package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Search returns what search_tools answers for query: a first line naming
// the best matches, then their TypeScript declarations.
func (b *Broker) Search(ctx context.Context, query string, limit int) (string, []*catalog.Operation, error) {
	st, err := b.state(ctx)
	if err != nil {
		return "", nil, err
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
	names := make([]string, len(hits))
	for i, h := range hits {
		ops[i] = h.Op
		names[i] = "tools." + h.Op.Name
	}
	// The first line names the matches, best first; the declarations follow.
	return "// Best matches: " + strings.Join(names, ", ") + "\n" + st.decl.Declarations(ops), ops, nil
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
