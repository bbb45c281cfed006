package helmdemo

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/kubecode/kubecode/adapters/helm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Release is the demo release of chart web-app, in Namespace.
const (
	Namespace = "helm-demo"
	Release   = "web"
)

// Edits are the hand edits Seed makes after installing the
// release, as helm.drift reports them (object, path, change).
var Edits = [][3]string{
	{"Deployment/web", "spec.replicas", "changed"},
	{"Deployment/web", "spec.template.spec.containers[web].image", "changed"},
	{"Deployment/web", "spec.template.spec.containers[web].env[DEBUG]", "added"},
	{"ConfigMap/web-config", "data.color", "removed"},
}

// Seed installs chart web-app from chartsDir (examples/charts) as
// release web in namespace helm-demo, waits until it is ready, then edits
// it by hand so that the demo has drift to find: Deployment web scaled to
// 4, its image tag moved to 1.28, an env var DEBUG added, and key color
// removed from ConfigMap web-config. The edits carry the field managers
// kubectl records for the same commands (kubectl scale, kubectl set image,
// kubectl set env, kubectl patch).
func Seed(ctx context.Context, cfg *rest.Config, chartsDir string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("helmdemo: %w", err)
	}
	a, err := helm.New(cfg, &helm.Options{ChartSources: []string{chartsDir}})
	if err != nil {
		return err
	}
	// No autoscaler: with metrics-server it would take the hand-scaled
	// replicas back to its minimum, and the drift to find is the hand's.
	args, _ := json.Marshal(map[string]any{"release": Release, "namespace": Namespace, "chart": filepath.Join(chartsDir, "web-app"), "timeoutSeconds": 120,
		"values": map[string]any{"autoscaling": map[string]any{"enabled": false}}})
	if _, err := a.Call(ctx, "helm.install", args); err != nil {
		return fmt.Errorf("helmdemo install: %w", err)
	}
	deployments := cs.AppsV1().Deployments(Namespace)
	edits := []struct {
		manager, sub string
		pt           types.PatchType
		body         string
	}{
		{"kubectl-scale", "scale", types.MergePatchType, `{"spec":{"replicas":4}}`},
		{"kubectl-set", "", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`},
		{"kubectl-set", "", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"DEBUG","value":"1"}]}]}}}}`},
	}
	for _, e := range edits {
		var subs []string
		if e.sub != "" {
			subs = []string{e.sub}
		}
		if _, err := deployments.Patch(ctx, Release, e.pt, []byte(e.body), metav1.PatchOptions{FieldManager: e.manager}, subs...); err != nil {
			return fmt.Errorf("helmdemo edit: %w", err)
		}
	}
	_, err = cs.CoreV1().ConfigMaps(Namespace).Patch(ctx, Release+"-config", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/data/color"}]`), metav1.PatchOptions{FieldManager: "kubectl-patch"})
	if err != nil {
		return fmt.Errorf("helmdemo edit: %w", err)
	}
	return nil
}
