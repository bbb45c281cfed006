package helm_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/helm"
	"helm.sh/helm/v3/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestDrift installs a release for each case, edits the cluster as a
// person would, and checks that drift reports exactly the edits: nothing
// on a fresh release or after an upgrade (server defaults never show),
// each kind of edit once, and what ignore and ignoreManagers leave out.
func TestDrift(t *testing.T) {
	a := newAdapter(t)
	cs, _ := clients(t)
	for _, tc := range []struct {
		name   string
		chart  string
		values map[string]any
		edit   func(t *testing.T, ns string)
		args   map[string]any
		want   []helm.DriftRow
	}{
		{name: "fresh web-app release", chart: "web-app"},
		{name: "fresh release of many kinds, a custom resource among them", chart: "kinds"},
		{name: "after an upgrade", chart: "web-app", edit: func(t *testing.T, ns string) {
			call(t, a, "helm.upgrade", map[string]any{"release": "rel", "namespace": ns, "chart": chart("web-app"), "wait": false,
				"values": map[string]any{"image": map[string]any{"tag": "1.28"}, "env": map[string]any{"LOG_LEVEL": "debug", "MODE": "fast"}, "config": map[string]any{"greeting": "hi"}}}, nil)
		}},
		{name: "scaled by hand after an upgrade", chart: "web-app", edit: func(t *testing.T, ns string) {
			call(t, a, "helm.upgrade", map[string]any{"release": "rel", "namespace": ns, "chart": chart("web-app"), "wait": false,
				"values": map[string]any{"replicaCount": 3, "image": map[string]any{"tag": "1.28"}}}, nil)
			patch(t, "deployments", ns, "rel", "kubectl-scale", types.MergePatchType, `{"spec":{"replicas":5}}`, "scale")
		}, want: []helm.DriftRow{{Object: "Deployment/rel", Path: "spec.replicas", Change: "changed", Expected: 3.0, Actual: 5.0, Manager: "kubectl-scale"}}},
		{name: "an upgrade adopted two of four hand edits and set one back: the fourth still shows", chart: "web-app", edit: func(t *testing.T, ns string) {
			patch(t, "deployments", ns, "rel", "kubectl-set", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
			patch(t, "deployments", ns, "rel", "kubectl-set", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
			patch(t, "configmaps", ns, "rel-config", "kubectl-edit", types.MergePatchType, `{"data":{"greeting":"hey"}}`)
			patch(t, "configmaps", ns, "rel-config", "kubectl-edit", types.MergePatchType, `{"data":{"color":"red"}}`)
			call(t, a, "helm.upgrade", map[string]any{"release": "rel", "namespace": ns, "chart": chart("web-app"), "wait": false, "reuseValues": true,
				"values": map[string]any{"image": map[string]any{"tag": "1.28"}, "config": map[string]any{"greeting": "hey"}}}, nil)
		}, want: []helm.DriftRow{
			{Object: "Deployment/rel", Path: "spec.template.spec.containers[web].env[DEBUG]", Change: "added", Actual: map[string]any{"name": "DEBUG", "value": "1"}, Manager: "kubectl-set"},
		}},
		{name: "scaled by hand", chart: "web-app", edit: func(t *testing.T, ns string) {
			patch(t, "deployments", ns, "rel", "kubectl-scale", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
		}, want: []helm.DriftRow{{Object: "Deployment/rel", Path: "spec.replicas", Change: "changed", Expected: 2.0, Actual: 4.0, Manager: "kubectl-scale"}}},
		{name: "image tag set by hand", chart: "web-app", edit: func(t *testing.T, ns string) {
			patch(t, "deployments", ns, "rel", "kubectl-set", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.29"}]}}}}`)
		}, want: []helm.DriftRow{{Object: "Deployment/rel", Path: "spec.template.spec.containers[web].image", Change: "changed", Expected: "nginx:1.27", Actual: "nginx:1.29", Manager: "kubectl-set"}}},
		{name: "env var added by hand", chart: "web-app", edit: func(t *testing.T, ns string) {
			patch(t, "deployments", ns, "rel", "kubectl-set", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
		}, want: []helm.DriftRow{{Object: "Deployment/rel", Path: "spec.template.spec.containers[web].env[DEBUG]", Change: "added", Actual: map[string]any{"name": "DEBUG", "value": "1"}, Manager: "kubectl-set"}}},
		{name: "ConfigMap key removed by hand", chart: "web-app", edit: func(t *testing.T, ns string) {
			patch(t, "configmaps", ns, "rel-config", "kubectl-patch", types.JSONPatchType, `[{"op":"remove","path":"/data/color"}]`)
		}, want: []helm.DriftRow{{Object: "ConfigMap/rel-config", Path: "data.color", Change: "removed", Expected: "blue"}}},
		{name: "label added by hand", chart: "web-app", edit: func(t *testing.T, ns string) {
			patch(t, "services", ns, "rel", "kubectl-label", types.MergePatchType, `{"metadata":{"labels":{"team":"payments"}}}`)
		}, want: []helm.DriftRow{{Object: "Service/rel", Path: "metadata.labels.team", Change: "added", Actual: "payments", Manager: "kubectl-label"}}},
		{name: "custom resource edited", chart: "kinds", edit: func(t *testing.T, ns string) {
			patch(t, "gadgets", ns, "rel", "kubectl-edit", types.MergePatchType, `{"spec":{"size":5,"color":"red"}}`)
		}, want: []helm.DriftRow{
			{Object: "Gadget/rel", Path: "spec.color", Change: "added", Actual: "red", Manager: "kubectl-edit"},
			{Object: "Gadget/rel", Path: "spec.size", Change: "changed", Expected: 3.0, Actual: 5.0, Manager: "kubectl-edit"},
		}},
		{name: "Secret value changed: reported, never shown", chart: "kinds", edit: func(t *testing.T, ns string) {
			patch(t, "secrets", ns, "rel-db", "kubectl-edit", types.MergePatchType, `{"stringData":{"password":"hunter2-hunter2"}}`)
		}, want: []helm.DriftRow{{Object: "Secret/rel-db", Path: "data.password", Change: "changed", Expected: "[redacted]", Actual: "[redacted]", Manager: "kubectl-edit"}}},
		{name: "object deleted", chart: "web-app", edit: func(t *testing.T, ns string) {
			if err := cs.CoreV1().Services(ns).Delete(context.Background(), "rel", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, want: []helm.DriftRow{{Object: "Service/rel", Change: "missing"}}},
		{name: "replicas the autoscaler set", chart: "web-app", values: map[string]any{"replicaCount": 1}, edit: waitAutoscaled,
			want: []helm.DriftRow{{Object: "Deployment/rel", Path: "spec.replicas", Change: "changed", Expected: 1.0, Actual: 2.0, Manager: "kube-controller-manager"}}},
		{name: "replicas the autoscaler set, its manager ignored", chart: "web-app", values: map[string]any{"replicaCount": 1}, edit: waitAutoscaled,
			args: map[string]any{"ignoreManagers": []string{"kube-controller-manager"}}},
		{name: "edits under ignored pointers", chart: "web-app", edit: func(t *testing.T, ns string) {
			patch(t, "deployments", ns, "rel", "kubectl-scale", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
			patch(t, "deployments", ns, "rel", "kubectl-set", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.29"}]}}}}`)
			patch(t, "configmaps", ns, "rel-config", "kubectl-edit", types.MergePatchType, `{"data":{"greeting":"hey"}}`)
		}, args: map[string]any{"ignore": []string{"/spec/replicas", "Deployment/rel:/spec/template/spec/containers/web/image", "ConfigMap:/data/*"}}},
		{name: "object no longer rendered but kept", chart: "kinds", values: map[string]any{"legacy": true}, edit: func(t *testing.T, ns string) {
			call(t, a, "helm.upgrade", map[string]any{"release": "rel", "namespace": ns, "chart": chart("kinds"), "wait": false, "values": map[string]any{"legacy": false}}, nil)
		}, args: map[string]any{"extra": true}, want: []helm.DriftRow{{Object: "ConfigMap/rel-legacy", Change: "extra"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t)
			install(t, a, ns, "rel", tc.chart, tc.values)
			if tc.edit != nil {
				tc.edit(t, ns)
			}
			args := map[string]any{"release": "rel", "namespace": ns}
			for k, v := range tc.args {
				args[k] = v
			}
			var got helm.Drift
			call(t, a, "helm.drift", args, &got)
			sort.Slice(got.Rows, func(i, j int) bool {
				return got.Rows[i].Object+" "+got.Rows[i].Path < got.Rows[j].Object+" "+got.Rows[j].Path
			})
			want := tc.want
			if want == nil {
				want = []helm.DriftRow{}
			}
			if diff := cmp.Diff(want, got.Rows); diff != "" {
				t.Errorf("drift rows (-want +got):\n%s", diff)
			}
			if got.Method != "server-side apply dry run" || got.Checked == 0 {
				t.Errorf("method %q, %d objects checked", got.Method, got.Checked)
			}
		})
	}
}

// TestDriftWhoeverInstalled: a release installed or upgraded by another
// Helm SDK client (Flux's helm-controller, Terraform's provider, a CI tool)
// records its fields under that client's field manager; drift knows the
// release's managers by what they own, so server defaults never show and
// four edits by hand are exactly four rows (a fifth, by server-side apply,
// one more).
func TestDriftWhoeverInstalled(t *testing.T) {
	a := newAdapter(t)
	as := func(manager string, f func()) {
		prev := kube.ManagedFieldsManager
		kube.ManagedFieldsManager = manager
		defer func() { kube.ManagedFieldsManager = prev }()
		f()
	}
	drift := func(t *testing.T, ns string) []helm.DriftRow {
		var got helm.Drift
		call(t, a, "helm.drift", map[string]any{"release": "rel", "namespace": ns}, &got)
		sort.Slice(got.Rows, func(i, j int) bool {
			return got.Rows[i].Object+" "+got.Rows[i].Path < got.Rows[j].Object+" "+got.Rows[j].Path
		})
		return got.Rows
	}
	t.Run("installed by helm-controller, edited by hand", func(t *testing.T) {
		ns := cp.Namespace(t)
		as("helm-controller", func() { install(t, a, ns, "rel", "web-app", nil) })
		if rows := drift(t, ns); len(rows) != 0 {
			t.Fatalf("a fresh release drifts: %v", rows)
		}
		patch(t, "deployments", ns, "rel", "kubectl-scale", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
		patch(t, "deployments", ns, "rel", "kubectl-set", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
		patch(t, "deployments", ns, "rel", "kubectl-set", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"DEBUG","value":"1"}]}]}}}}`)
		patch(t, "configmaps", ns, "rel-config", "kubectl-patch", types.JSONPatchType, `[{"op":"remove","path":"/data/color"}]`)
		// A server-side apply is never the release's.
		patch(t, "deployments", ns, "rel", "x-apply", types.ApplyPatchType,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"rel"},"spec":{"template":{"spec":{"hostNetwork":true}}}}`)
		want := []helm.DriftRow{
			{Object: "ConfigMap/rel-config", Path: "data.color", Change: "removed", Expected: "blue"},
			{Object: "Deployment/rel", Path: "spec.replicas", Change: "changed", Expected: 2.0, Actual: 4.0, Manager: "kubectl-scale"},
			{Object: "Deployment/rel", Path: "spec.template.spec.containers[web].env[DEBUG]", Change: "added", Actual: map[string]any{"name": "DEBUG", "value": "1"}, Manager: "kubectl-set"},
			{Object: "Deployment/rel", Path: "spec.template.spec.containers[web].image", Change: "changed", Expected: "nginx:1.27", Actual: "nginx:1.28", Manager: "kubectl-set"},
			{Object: "Deployment/rel", Path: "spec.template.spec.hostNetwork", Change: "added", Actual: true, Manager: "x-apply"},
		}
		if diff := cmp.Diff(want, drift(t, ns)); diff != "" {
			t.Errorf("drift rows (-want +got):\n%s", diff)
		}
	})
	t.Run("installed by helm, upgraded by terraform-provider-helm", func(t *testing.T) {
		ns := cp.Namespace(t)
		install(t, a, ns, "rel", "web-app", nil)
		as("terraform-provider-helm", func() {
			call(t, a, "helm.upgrade", map[string]any{"release": "rel", "namespace": ns, "chart": chart("web-app"), "wait": false,
				"values": map[string]any{"env": map[string]any{"LOG_LEVEL": "debug"}, "image": map[string]any{"pullPolicy": "Always"}}}, nil)
		})
		if rows := drift(t, ns); len(rows) != 0 {
			t.Fatalf("an upgraded release drifts: %v", rows)
		}
		patch(t, "services", ns, "rel", "kubectl-label", types.MergePatchType, `{"metadata":{"labels":{"team":"payments"}}}`)
		want := []helm.DriftRow{{Object: "Service/rel", Path: "metadata.labels.team", Change: "added", Actual: "payments", Manager: "kubectl-label"}}
		if diff := cmp.Diff(want, drift(t, ns)); diff != "" {
			t.Errorf("drift rows (-want +got):\n%s", diff)
		}
	})
}

// waitAutoscaled waits until the release's autoscaler has raised its
// Deployment to minReplicas (2).
func waitAutoscaled(t *testing.T, ns string) {
	cs, _ := clients(t)
	eventually(t, 60*time.Second, "the autoscaler scales Deployment rel to 2", func() bool {
		d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "rel", metav1.GetOptions{})
		return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 2
	})
}

// BenchmarkDrift50 times helm.drift of a 50-object release on the local
// cluster (goal: < 300 ms).
func BenchmarkDrift50(b *testing.B) {
	a := newAdapter(b)
	ns := cp.Namespace(b)
	install(b, a, ns, "many", "many", map[string]any{"count": 10})
	args := map[string]any{"release": "many", "namespace": ns}
	var got helm.Drift
	call(b, a, "helm.drift", args, &got)
	if got.Checked != 50 || len(got.Rows) != 0 {
		b.Fatalf("checked %d objects, %d rows: %v", got.Checked, len(got.Rows), got.Rows)
	}
	b.ResetTimer()
	for b.Loop() {
		call(b, a, "helm.drift", args, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/drift")
}
