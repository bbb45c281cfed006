package kubeapi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/catalog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestLoosenedPodSecurity: a namespace's pod security loosens when a mode
// is set to privileged or a looser level, removed, set to no level, or
// pinned to a version other than latest; tightening and labels of other
// kinds are no loosening.
func TestLoosenedPodSecurity(t *testing.T) {
	const e, w, ev = "pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/warn", "pod-security.kubernetes.io/enforce-version"
	for _, tc := range []struct {
		name          string
		before, after map[string]string
		want          string
	}{
		{"created privileged", nil, map[string]string{e: "privileged"}, "enforce: (none) → privileged"},
		{"created restricted", nil, map[string]string{e: "restricted"}, ""},
		{"created without labels", nil, map[string]string{"team": "web"}, ""},
		{"restricted to baseline", map[string]string{e: "restricted"}, map[string]string{e: "baseline"}, "enforce: restricted → baseline"},
		{"baseline to restricted", map[string]string{e: "baseline"}, map[string]string{e: "restricted"}, ""},
		{"removed", map[string]string{e: "restricted"}, map[string]string{}, "enforce: restricted → removed"},
		{"no level", nil, map[string]string{w: "open"}, `warn: "open" is no level`},
		{"an old version", map[string]string{e: "restricted"}, map[string]string{e: "restricted", ev: "v1.20"}, "enforce-version: (none) → v1.20 (an older version checks less)"},
		{"latest", map[string]string{e: "restricted"}, map[string]string{e: "restricted", ev: "latest"}, ""},
		{"unchanged privileged", map[string]string{e: "privileged"}, map[string]string{e: "privileged", "team": "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, LoosenedPodSecurity(tc.before, tc.after)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkJudgePodSecurity: the Pod Security Standards judgment of one
// created Deployment, as every create or template change pays it.
func BenchmarkJudgePodSecurity(b *testing.B) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27",
				"securityContext": map[string]any{"privileged": true}}}}}}}}
	b.ReportAllocs()
	for b.Loop() {
		c := &catalog.Change{}
		JudgePodSecurity(c, nil, obj)
		if c.PodSecurity == "" {
			b.Fatal("not judged")
		}
	}
}

// TestJudgePodSecurity: the template judged is where the object's kind
// keeps it (a decoy elsewhere hides nothing), and a change of a template
// that already fails baseline is judged too (a new hostPath path or image
// in a privileged pod), while one that leaves the specs as they were (a
// restart's annotation) is not.
func TestJudgePodSecurity(t *testing.T) {
	obj := func(s string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(s)); err != nil {
			t.Fatal(err)
		}
		return u
	}
	const plain = `{"containers":[{"name":"app","image":"nginx"}]}`
	const privileged = `{"containers":[{"name":"app","image":"nginx","securityContext":{"privileged":true}}]}`
	deployment := func(template, decoy string) *unstructured.Unstructured {
		extra := ""
		if decoy != "" {
			extra = `,"jobTemplate":{"spec":{"template":{"spec":` + decoy + `}}}`
		}
		return obj(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"metadata":{"annotations":{"a":"1"}},"spec":` + template + `}` + extra + `}}`)
	}
	daemon := func(path, image string) *unstructured.Unstructured {
		return obj(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent"},"spec":{"template":{"spec":{"containers":[{"name":"a","image":"` + image + `","securityContext":{"privileged":true}}],"volumes":[{"name":"data","hostPath":{"path":"` + path + `"}}]}}}}`)
	}
	for _, tc := range []struct {
		name          string
		before, after *unstructured.Unstructured
		want          string // in c.PodSecurity; "" means not set
	}{
		{"a Deployment behind a decoy job template", nil, deployment(privileged, plain), "its pods would violate the baseline Pod Security Standard: privileged"},
		{"a Pod behind a decoy template", nil, obj(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"app","image":"nginx","securityContext":{"privileged":true}}],"template":{"spec":` + plain + `}}}`), "privileged"},
		{"a plain Deployment", nil, deployment(plain, ""), ""},
		{"a privileged pod's hostPath moved to /", daemon("/var/log", "agent:1"), daemon("/", "agent:1"), "it changes pods that violate the baseline Pod Security Standard: hostPath volumes"},
		{"a privileged pod's image changed", daemon("/var/log", "agent:1"), daemon("/var/log", "agent:2"), "it changes pods that violate"},
		{"a privileged pod left as it is", daemon("/var/log", "agent:1"), daemon("/var/log", "agent:1"), ""},
		{"a restart's annotation", deployment(privileged, ""), obj(strings.Replace(mustJSON(t, deployment(privileged, "")), `"a":"1"`, `"a":"2"`, 1)), ""},
		{"a custom resource with a template", nil, obj(`{"apiVersion":"example.com/v1","kind":"Runner","metadata":{"name":"r"},"spec":{"template":{"spec":` + privileged + `}}}`), "privileged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &catalog.Change{}
			JudgePodSecurity(c, tc.before, tc.after)
			if tc.want == "" && c.PodSecurity != "" || tc.want != "" && !strings.Contains(c.PodSecurity, tc.want) {
				t.Errorf("PodSecurity %q, want %q", c.PodSecurity, tc.want)
			}
		})
	}
}

func mustJSON(t *testing.T, u *unstructured.Unstructured) string {
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
