package helm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/internal/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestHelmPlansAReviewerReads: a Helm install and upgrade read, per object,
// as a reviewer needs them — what each new object is, old → new for each
// changed value, what goes — in a golden file.
func TestHelmPlansAReviewerReads(t *testing.T) {
	a := newAdapter(t)
	ns := cp.Namespace(t)
	var out strings.Builder
	write := func(title string, diff []string) {
		out.WriteString("== " + title + "\n")
		for _, l := range diff {
			out.WriteString("   " + strings.ReplaceAll(l, ns, "NS") + "\n")
		}
	}
	args := map[string]any{"release": "web", "namespace": ns, "chart": chart("web-app"), "wait": false}
	c, _, err := preview(t, a, "review-1", "helm.install", args)
	if err != nil {
		t.Fatal(err)
	}
	write("install web-app", c.Diff)
	install(t, a, ns, "web", "web-app", nil)
	c, _, err = preview(t, a, "review-2", "helm.upgrade", map[string]any{"release": "web", "namespace": ns, "chart": chart("web-app"), "wait": false,
		"values": map[string]any{"image": map[string]any{"tag": "1.28"}, "replicaCount": 0, "env": map[string]any{"LOG_LEVEL": "info", "DEBUG": "1"},
			"config": map[string]any{"greeting": "hi"}, "autoscaling": map[string]any{"enabled": false}}})
	if err != nil {
		t.Fatal(err)
	}
	write("upgrade: image 1.28, replicas 0, env DEBUG, greeting, no autoscaler", c.Diff)
	golden.Check(t, "plans.txt", []byte(out.String()))
}

// TestHelmPlanIsLiveToDesired: a Helm upgrade's plan tells what happens
// to the cluster, not to the chart. The live Deployment was scaled to 4
// by hand and already runs nginx:1.28, and someone changed a ConfigMap
// value: an upgrade to replicaCount 3 and image tag 1.28 reads as the
// scale-down it is (4 → 3, one pod stopped), changes no image, and shows
// the ConfigMap value it sets back; once applied, its answer lists every
// object it changed, with the same values.
func TestHelmPlanIsLiveToDesired(t *testing.T) {
	a := newAdapter(t)
	ns := cp.Namespace(t)
	install(t, a, ns, "web", "web-app", map[string]any{"autoscaling": map[string]any{"enabled": false}})
	patch(t, "deployments", ns, "web", "kubectl-scale", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	patch(t, "deployments", ns, "web", "kubectl-set", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
	patch(t, "configmaps", ns, "web-config", "kubectl-edit", types.MergePatchType, `{"data":{"color":"red"}}`)
	args := map[string]any{"release": "web", "namespace": ns, "chart": chart("web-app"), "wait": false, "reuseValues": true,
		"values": map[string]any{"replicaCount": 3, "image": map[string]any{"tag": "1.28"}}}
	c, res, err := preview(t, a, "live-1", "helm.upgrade", args)
	if err != nil {
		t.Fatal(err)
	}
	deploy := "~ Deployment " + ns + "/web: spec.replicas: 4 → 3"
	config := "~ ConfigMap " + ns + "/web-config: data.color: \"red\" → \"blue\""
	want := []string{
		"upgrade release " + ns + "/web from web-app 0.1.0 (revision 1) to web-app 0.1.0",
		config,
		deploy,
	}
	if diff := cmp.Diff(want, c.Diff); diff != "" {
		t.Errorf("plan lines (-want +got):\n%s", diff)
	}
	if wantImpact := "stops 1 of the 4 pods of " + ns + "/web"; c.Impact != wantImpact {
		t.Errorf("impact = %q, want %q", c.Impact, wantImpact)
	}
	wantLines := []string{"update ConfigMap/web-config: data.color: \"red\" → \"blue\"", "update Deployment/web: spec.replicas: 4 → 3"}
	if diff := cmp.Diff(wantLines, res.Changes); diff != "" {
		t.Errorf("preview's changes (-want +got):\n%s", diff)
	}
	var applied helm.ChangeResult
	call(t, a, "helm.upgrade", args, &applied)
	if diff := cmp.Diff(wantLines, applied.Changes); diff != "" {
		t.Errorf("applied answer's changes (-want +got):\n%s", diff)
	}
	cs, _ := clients(t)
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := *d.Spec.Replicas; got != 3 {
		t.Errorf("replicas after the upgrade = %d, want 3 as planned", got)
	}
}

// TestHelmUpgradeThatChangesNothing: an upgrade with the same chart and
// values whose dry run changes no object is no change (Unchanged: not
// planned, no one asked); a value that changes an object is one.
func TestHelmUpgradeThatChangesNothing(t *testing.T) {
	a := newAdapter(t)
	ns := cp.Namespace(t)
	values := map[string]any{"autoscaling": map[string]any{"enabled": false}}
	install(t, a, ns, "web", "web-app", values)
	args := map[string]any{"release": "web", "namespace": ns, "chart": chart("web-app"), "wait": false, "values": values}
	c, _, err := preview(t, a, "same-1", "helm.upgrade", args)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Unchanged || len(c.Objects) != 0 {
		t.Errorf("the same chart and values: unchanged %v, objects %v\n%s", c.Unchanged, objects(c), strings.Join(c.Diff, "\n"))
	}
	args["values"] = map[string]any{"autoscaling": map[string]any{"enabled": false}, "replicaCount": 3}
	if c, _, err = preview(t, a, "same-2", "helm.upgrade", args); err != nil || c.Unchanged {
		t.Errorf("a new replica count: unchanged %v, %v", c.Unchanged, err)
	}
}
