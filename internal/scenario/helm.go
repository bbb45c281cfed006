package scenario

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

// The Helm part of the demo: release HelmRelease of chart web-app in
// namespace HelmNamespace, edited by hand after it was installed.
const (
	HelmNamespace = "helm-demo"
	HelmRelease   = "web"
)

// HelmEdits are the hand edits SeedHelm makes after installing the
// release, as helm.drift reports them (object, path, change).
var HelmEdits = [][3]string{
	{"Deployment/web", "spec.replicas", "changed"},
	{"Deployment/web", "spec.template.spec.containers[web].image", "changed"},
	{"Deployment/web", "spec.template.spec.containers[web].env[DEBUG]", "added"},
	{"ConfigMap/web-config", "data.color", "removed"},
}

// SeedHelm installs chart web-app from chartsDir (examples/charts) as
// release web in namespace helm-demo, waits until it is ready, then edits
// it by hand so that the demo has drift to find: Deployment web scaled to
// 4, its image tag moved to 1.28, an env var DEBUG added, and key color
// removed from ConfigMap web-config. The edits carry the field managers
// kubectl records for the same commands (kubectl scale, kubectl set image,
// kubectl set env, kubectl patch).
func SeedHelm(ctx context.Context, cfg *rest.Config, chartsDir string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: HelmNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("scenario: helm: %w", err)
	}
	a, err := helm.New(cfg, &helm.Options{ChartSources: []string{chartsDir}})
	if err != nil {
		return err
	}
	args, _ := json.Marshal(map[string]any{"release": HelmRelease, "namespace": HelmNamespace, "chart": filepath.Join(chartsDir, "web-app"), "timeoutSeconds": 120})
	if _, err := a.Call(ctx, "helm.install", args); err != nil {
		return fmt.Errorf("scenario: helm install: %w", err)
	}
	deployments := cs.AppsV1().Deployments(HelmNamespace)
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
		if _, err := deployments.Patch(ctx, HelmRelease, e.pt, []byte(e.body), metav1.PatchOptions{FieldManager: e.manager}, subs...); err != nil {
			return fmt.Errorf("scenario: helm edit: %w", err)
		}
	}
	_, err = cs.CoreV1().ConfigMaps(HelmNamespace).Patch(ctx, HelmRelease+"-config", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/data/color"}]`), metav1.PatchOptions{FieldManager: "kubectl-patch"})
	if err != nil {
		return fmt.Errorf("scenario: helm edit: %w", err)
	}
	return nil
}
