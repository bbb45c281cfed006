package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubecode/kubecode/adapters/helm"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

var deployChart, _ = filepath.Abs("../../deploy/chart/kubecode")

// TestDeployChart: the chart for a team passes helm lint (strict, with
// each way of authenticating and with write access), and installs into
// the living cluster: its Deployment becomes Available, and the Service,
// PodDisruptionBudget, autoscaler, policy ConfigMap and plan key exist.
func TestDeployChart(t *testing.T) {
	for _, vals := range []map[string]any{
		nil,
		{"auth": "impersonate", "tokenAudience": "kubecode", "rbac": map[string]any{"write": true}, "autoscaling": map[string]any{"enabled": false}},
		{"auth": "none", "publicURL": "https://kubecode.example.com", "authorizationServers": []any{"https://issuer.example.com"}, "otlpEndpoint": "http://otel:4318"},
		{"upstreams": map[string]any{"upstreams": []any{map[string]any{"name": "grafana", "url": "http://grafana-mcp.monitoring:8000/mcp",
			"headers": map[string]any{"Authorization": map[string]any{"fromFile": "/var/run/secrets/grafana/token"}}}}},
			"upstreamPins":    map[string]any{"upstreams": map[string]any{}},
			"upstreamSecrets": map[string]any{"grafana-mcp-token": "/var/run/secrets/grafana"}},
		{"runbooks": map[string]any{"restart-deployment": "/**\n * Restarts a Deployment's pods.\n * @param {string} namespace  where\n */\nreturn params.namespace\n"}},
	} {
		lint := action.NewLint()
		lint.Strict = true
		res := lint.Run([]string{deployChart}, vals)
		if res.TotalChartsLinted != 1 || len(res.Errors) > 0 {
			t.Errorf("helm lint %v: %d charts linted, errors %v", vals, res.TotalChartsLinted, res.Errors)
		}
		for _, m := range res.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("helm lint %v: %v", vals, m)
			}
		}
	}

	ctx := context.Background()
	ns := cp.Namespace(t)
	h, err := helm.New(cp.Admin, &helm.Options{ChartSources: []string{deployChart}})
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"release": "kubecode", "namespace": ns, "chart": deployChart, "timeoutSeconds": 120,
		"values": map[string]any{"image": map[string]any{"tag": "test"}}})
	if _, err := h.Call(ctx, "helm.install", args); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	// Helm's wait reads the new ReplicaSet's ready replicas; the deployment
	// controller marks the Deployment Available a moment after.
	var d *appsv1.Deployment
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		d, err = cs.AppsV1().Deployments(ns).Get(ctx, "kubecode", metav1.GetOptions{})
		if err == nil && available(d) {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("Deployment kubecode not Available 10 s after the install waited (error: %v)", err)
		}
	}
	if c := d.Spec.Template.Spec.Containers[0]; c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, check := range []func() error{
		func() error { _, err := cs.CoreV1().Services(ns).Get(ctx, "kubecode", metav1.GetOptions{}); return err },
		func() error {
			_, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "kubecode", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "kubecode", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kubecode-policy", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Secrets(ns).Get(ctx, "kubecode-plan-key", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "kubecode-read", metav1.GetOptions{})
			return err
		},
	} {
		for err := check(); err != nil; err = check() {
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, "kubecode-read", metav1.DeleteOptions{}) })
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(ctx, "kubecode-read", metav1.DeleteOptions{}) })
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == "True" {
			return true
		}
	}
	return false
}
