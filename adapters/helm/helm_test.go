package helm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/internal/controlplane"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplane.Main(nil, func(_ context.Context, c *controlplane.ControlPlane) error {
		cp = c
		return nil
	}, m.Run))
}

// charts are the test charts and the examples' charts, the only chart
// sources the tests' adapters allow.
var (
	testCharts, _    = filepath.Abs("testdata/charts")
	exampleCharts, _ = filepath.Abs("../../examples/charts")
)

func newAdapter(t testing.TB) *helm.Adapter {
	t.Helper()
	a, err := helm.New(cp.Admin, &helm.Options{ChartSources: []string{testCharts, exampleCharts}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// call runs op with args and decodes its result into out (when not nil).
func call(t testing.TB, a *helm.Adapter, op string, args map[string]any, out any) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Call(context.Background(), op, raw)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s: %v\n%s", op, err, res)
		}
	}
}

func clients(t testing.TB) (*kubernetes.Clientset, *dynamic.DynamicClient) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dyn
}

// patch edits an object as a person would, under the field manager the
// kubectl command doing the same would record.
func patch(t testing.TB, resource, ns, name, manager string, pt types.PatchType, body string, subresources ...string) {
	t.Helper()
	_, dyn := clients(t)
	gvr := map[string][3]string{
		"deployments": {"apps", "v1", "deployments"}, "configmaps": {"", "v1", "configmaps"}, "secrets": {"", "v1", "secrets"},
		"services": {"", "v1", "services"}, "gadgets": {"drift.kubecode.io", "v1", "gadgets"},
	}[resource]
	r := dyn.Resource(schemaGVR(gvr)).Namespace(ns)
	if _, err := r.Patch(context.Background(), name, pt, []byte(body), metav1.PatchOptions{FieldManager: manager}, subresources...); err != nil {
		t.Fatalf("patch %s %s/%s: %v", resource, ns, name, err)
	}
}

// eventually polls cond every 100 ms until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func chart(name string) string {
	if name == "web-app" {
		return filepath.Join(exampleCharts, name)
	}
	return filepath.Join(testCharts, name)
}

func install(t testing.TB, a *helm.Adapter, ns, release, chartName string, values map[string]any) {
	t.Helper()
	call(t, a, "helm.install", map[string]any{"release": release, "namespace": ns, "chart": chart(chartName), "values": values, "wait": false}, nil)
}

func schemaGVR(g [3]string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: g[0], Version: g[1], Resource: g[2]}
}
