package kubernetes

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kubecode/kubecode/catalog"
	"k8s.io/client-go/rest"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestDiscoverRetriesMissingSchemas: when a group's OpenAPI schema fails
// to load, discovery says its catalog is partial, and the next discovery
// loads the schema and changes the version.
func TestDiscoverRetriesMissingSchemas(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if failing.Load() && strings.HasPrefix(r.URL.Path, "/openapi/v3/apis/apps/v1") {
				return nil, errors.New("injected failure")
			}
			return rt.RoundTrip(r)
		})
	})
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	replicas := func(ops []*catalog.Operation) bool {
		for _, op := range ops {
			if op.Name == "kubernetes.deployments.get" && op.Output != nil && op.Output.Properties["spec"] != nil {
				return op.Output.Properties["spec"].Properties["replicas"] != nil
			}
		}
		return false
	}
	ops, v1, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(v1, "~partial") || replicas(ops) {
		t.Fatalf("with apps/v1's schema failing: version %q, Deployment has replicas: %v", v1, replicas(ops))
	}
	failing.Store(false)
	ops, v2, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(v2, "~partial") || v2 == v1 || !replicas(ops) {
		t.Errorf("once the schema loads: version %q (was %q), Deployment has replicas: %v", v2, v1, replicas(ops))
	}
}
