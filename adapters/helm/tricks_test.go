package helm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/catalog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// preview previews op with args under call identity id.
func preview(t *testing.T, a *helm.Adapter, id, op string, args map[string]any) (*catalog.Change, helm.ChangeResult, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	c, out, err := a.Preview(catalog.WithCallID(context.Background(), id), op, raw)
	var res helm.ChangeResult
	if err == nil {
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
	}
	return c, res, err
}

// objects names a change's objects: "create Secret ns/listed".
func objects(c *catalog.Change) []string {
	var out []string
	for _, o := range c.Objects {
		out = append(out, o.Action+" "+o.Object())
	}
	return out
}

// TestWhatHelmDoesIsWhatThePlanSays: what a chart or script might try to
// slip past the policy or out of a preview shows in the change the policy
// judges, or never leaves the adapter.
func TestWhatHelmDoesIsWhatThePlanSays(t *testing.T) {
	a := newAdapter(t)
	cs, _ := clients(t)
	tricky := chart("tricky")

	t.Run("a random render is applied as previewed", func(t *testing.T) {
		ns := cp.Namespace(t)
		args := map[string]any{"release": "r", "namespace": ns, "chart": tricky, "values": map[string]any{"random": true}, "wait": false}
		_, planned, err := preview(t, a, "pin-1", "helm.install", args)
		if err != nil {
			t.Fatal(err)
		}
		_, again, _ := preview(t, a, "pin-2", "helm.install", args)
		if planned.Notes == again.Notes {
			t.Fatalf("the chart renders the same twice (%q): nothing to pin", planned.Notes)
		}
		raw, _ := json.Marshal(args)
		out, err := a.Call(catalog.WithCallID(context.Background(), "pin-1"), "helm.install", raw)
		if err != nil {
			t.Fatal(err)
		}
		var applied helm.ChangeResult
		_ = json.Unmarshal(out, &applied)
		if applied.Notes != planned.Notes {
			t.Errorf("applied notes %q, previewed %q", applied.Notes, planned.Notes)
		}
		var manifest []map[string]any
		call(t, a, "helm.get_manifest", map[string]any{"release": "r", "namespace": ns}, &manifest)
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "random", metav1.GetOptions{})
		if err != nil || len(manifest) != 1 || manifest[0]["data"].(map[string]any)["value"] != cm.Data["value"] {
			t.Errorf("release records %v, cluster holds %v (%v)", manifest, cm.Data, err)
		}
	})

	for _, tc := range []struct {
		name   string
		values map[string]any
		setup  func(t *testing.T, ns string)
		op     string
		want   []string // the change's objects ("" namespace replaced by ns)
		hidden []string // never in the result, the change or the error
	}{
		{name: "a List's items are objects of their own", values: map[string]any{"list": true},
			want: []string{"create Secret NS/listed"}, hidden: []string{"hidden-in-a-list"}},
		{name: "a hook replaces an object of its name", values: map[string]any{"hook": "config"},
			setup: func(t *testing.T, ns string) { configMap(t, ns, "config") },
			want:  []string{"delete ConfigMap NS/config", "create ConfigMap NS/config"}},
		{name: "a cluster-scoped object has no namespace", values: map[string]any{"priorityClass": true},
			want: []string{"create PriorityClass r-high"}},
		{name: "a lookup reads no Secret while rendering", values: map[string]any{"lookup": "target"},
			setup: secret, want: []string{"create ConfigMap NS/looked-up"}, hidden: []string{"c2VjcmV0LXZhbHVl", "secret-value"}},
		{name: "a failing lookup shows no Secret", values: map[string]any{"failLookup": "target"},
			setup: secret, hidden: []string{"c2VjcmV0LXZhbHVl", "secret-value"}},
		// A release record holds its release's values and rendered Secrets
		// (base64 of gzip: "H4sI", "SDRzSU" once more encoded).
		{name: "a lookup reads no release record", values: map[string]any{"lookup": "sh.helm.release.v1.victim.v1"},
			setup: victim, want: []string{"create ConfigMap NS/looked-up"}, hidden: []string{"H4sI", "SDRzSU", "s3cr3t"}},
		{name: "a failing lookup shows no release record", values: map[string]any{"failLookup": "sh.helm.release.v1.victim.v1"},
			setup: victim, hidden: []string{"H4sI", "SDRzSU", "s3cr3t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t)
			if tc.setup != nil {
				tc.setup(t, ns)
			}
			c, res, err := preview(t, a, "x", "helm.install", map[string]any{"release": "r", "namespace": ns, "chart": tricky, "values": tc.values})
			b, _ := json.Marshal(res)
			cb, _ := json.Marshal(c)
			for _, h := range tc.hidden {
				if strings.Contains(string(b), h) || strings.Contains(string(cb), h) || err != nil && strings.Contains(err.Error(), h) {
					t.Errorf("a secret value (%s) came out: %s %s %v", h, b, cb, err)
				}
			}
			if tc.want == nil {
				if err == nil {
					t.Errorf("previewed, want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, strings.ReplaceAll(w, "NS", ns))
			}
			if diff := cmp.Diff(want, objects(c)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("an upgrade recreating a deleted RoleBinding says so", func(t *testing.T) {
		ns := cp.Namespace(t)
		args := map[string]any{"release": "r", "namespace": ns, "chart": tricky, "values": map[string]any{"rbac": true}, "wait": false}
		call(t, a, "helm.install", args, nil)
		if err := cs.RbacV1().RoleBindings(ns).Delete(context.Background(), "r-reader", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		c, _, err := preview(t, a, "y", "helm.upgrade", args)
		if err != nil {
			t.Fatal(err)
		}
		if got := objects(c); !slices.Equal(got, []string{"create RoleBinding " + ns + "/r-reader"}) || !c.Objects[0].Privileged {
			t.Errorf("objects %v", got)
		}
	})

	// The rules judge a release's objects as rendered, as they judge a
	// typed create: a privileged pod template, a namespace opened to
	// privileged pods (TestOneJudgmentPerObject has the other paths).
	t.Run("a privileged pod template and a loosened namespace are judged", func(t *testing.T) {
		ns := cp.Namespace(t)
		c, _, err := preview(t, a, "p", "helm.install", map[string]any{"release": "r", "namespace": ns, "chart": tricky,
			"values": map[string]any{"privileged": true, "podSecurity": "privileged"}, "wait": false})
		if err != nil {
			t.Fatal(err)
		}
		var pod, critical string
		for _, o := range c.Objects {
			if o.Kind == "Deployment" {
				pod = o.PodSecurity
			}
			if o.Kind == "Namespace" {
				critical = o.Critical
			}
		}
		if !strings.Contains(pod, "privileged (container \"agent\" must not set securityContext.privileged=true)") || !strings.Contains(pod, "host namespaces (hostPID=true)") {
			t.Errorf("the Deployment's pod security: %q", pod)
		}
		if !strings.Contains(critical, "enforce: (none) → privileged") {
			t.Errorf("the Namespace: %q", critical)
		}
		if !strings.Contains(strings.Join(c.Diff, "\n"), "⚠ pod security: its pods would violate the baseline Pod Security Standard") {
			t.Errorf("the plan does not say it:\n%s", strings.Join(c.Diff, "\n"))
		}
	})

	t.Run("an upgrade that restores a privilege removed by hand is judged", func(t *testing.T) {
		ns := cp.Namespace(t)
		args := map[string]any{"release": "r", "namespace": ns, "chart": tricky, "values": map[string]any{"privileged": true}, "wait": false}
		call(t, a, "helm.install", args, nil)
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"agent","securityContext":{"privileged":false}}]}}}}`)
		if _, err := cs.AppsV1().Deployments(ns).Patch(context.Background(), "agent", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		c, _, err := preview(t, a, "q", "helm.upgrade", args)
		if err != nil {
			t.Fatal(err)
		}
		judged := ""
		for _, o := range c.Objects {
			if o.Kind == "Deployment" {
				judged = o.PodSecurity
			}
		}
		if !strings.Contains(judged, "its pods would violate the baseline Pod Security Standard: host namespaces (hostPID=true), privileged") {
			t.Errorf("the Deployment set back to privileged: %q (objects %v)", judged, objects(c))
		}
	})

	t.Run("createNamespace creates a Namespace", func(t *testing.T) {
		ns := fmt.Sprintf("%s-new", cp.Namespace(t))
		c, _, err := preview(t, a, "z", "helm.install", map[string]any{"release": "r", "namespace": ns, "chart": tricky, "createNamespace": true})
		if err != nil {
			t.Fatal(err)
		}
		if got := objects(c); !slices.Equal(got, []string{"create Namespace " + ns}) {
			t.Errorf("objects %v", got)
		}
	})
}

func configMap(t *testing.T, ns, name string) {
	t.Helper()
	cs, _ := clients(t)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// victim installs release victim (chart kinds), whose Secret holds a
// password: its release record is Secret sh.helm.release.v1.victim.v1.
func victim(t *testing.T, ns string) {
	t.Helper()
	install(t, newAdapter(t), ns, "victim", "kinds", nil)
}

// secret creates Secret target holding "secret-value" (c2VjcmV0LXZhbHVl).
func secret(t *testing.T, ns string) {
	t.Helper()
	cs, _ := clients(t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "target"}, Data: map[string][]byte{"k": []byte("secret-value")}}
	if _, err := cs.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDriverConfigMapsRefused: release records as ConfigMaps would let
// scripts read their secret values.
func TestDriverConfigMapsRefused(t *testing.T) {
	if _, err := helm.New(cp.Admin, &helm.Options{Driver: "configmaps"}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("New with the configmaps driver: %v", err)
	}
}
