package kubeapi

import (
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
