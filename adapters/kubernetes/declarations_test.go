package kubernetes

import (
	"context"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/internal/golden"
	"github.com/kubecode/kubecode/internal/tstest"
)

// TestDeclarations renders the declarations the model reads for operations
// discovered on the local API server (Kubernetes v1.37.1, so the schemas
// are fixed) with this adapter's hints: the shared ObjectMeta, the fields
// kept for each kind. go test -update rewrites the golden files.
func TestDeclarations(t *testing.T) {
	ops, _, err := newAdapter(t, nil).Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*catalog.Operation{}
	for _, op := range ops {
		byName[op.Name] = op
	}
	pick := func(names ...string) []*catalog.Operation {
		var out []*catalog.Operation
		for _, n := range names {
			op := byName[n]
			if op == nil {
				t.Fatalf("no operation %s", n)
			}
			out = append(out, op)
		}
		return out
	}
	for _, tc := range []struct {
		file string
		ops  []*catalog.Operation
	}{
		{"pods.ts", pick("kubernetes.pods.list", "kubernetes.pods.get", "kubernetes.pods.logs")},
		{"deployments.get.ts", pick("kubernetes.deployments.get")},
		{"events.list.ts", pick("kubernetes.events.list")},
		{"widgets.list.ts", pick("kubernetes.widgets.list")},
		{"api_resources.ts", pick("kubernetes.api_resources")},
		{"deployments.changes.ts", pick("kubernetes.deployments.scale", "kubernetes.deployments.patch", "kubernetes.deployments.apply", "kubernetes.deployments.delete",
			"kubernetes.deployments.rollout.status", "kubernetes.deployments.rollout.history", "kubernetes.deployments.rollout.undo")},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := catalog.Declarations(tc.ops)
			tstest.Parse(t, got)
			golden.Check(t, tc.file, []byte(got))
			if n := strings.Count(got, "interface ObjectMeta "); n > 1 {
				t.Errorf("ObjectMeta declared %d times, want at most once", n)
			}
		})
	}
	t.Run("whole catalog parses", func(t *testing.T) { tstest.Parse(t, catalog.Declarations(ops)) })
}
