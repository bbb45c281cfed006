package kubernetes

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEdits: changes are counted as a reviewer names them, not by leaves.
func TestEdits(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after string
		want          []string
	}{
		{"one scalar", `{"spec":{"replicas":1}}`, `{"spec":{"replicas":3}}`, []string{"spec.replicas"}},
		{"restated unchanged", `{"spec":{"replicas":1,"strategy":{"type":"RollingUpdate"}}}`, `{"spec":{"replicas":1,"strategy":{"type":"RollingUpdate"}}}`, nil},
		{"an exact toleration is one",
			`{"tolerations":[{"key":"a","operator":"Exists"}]}`,
			`{"tolerations":[{"key":"a","operator":"Exists"},{"key":"gpu","operator":"Equal","value":"true","effect":"NoSchedule"}]}`,
			[]string{"tolerations[+]"}},
		{"a toleration replaced is one",
			`{"tolerations":[{"key":"gpu","operator":"Exists"}]}`,
			`{"tolerations":[{"key":"gpu","operator":"Equal","value":"true","effect":"NoSchedule"}]}`,
			[]string{"tolerations[~]"}},
		{"a toleration removed, one before it", `{"t":[{"k":"a"},{"k":"b"}]}`, `{"t":[{"k":"b"}]}`, []string{"t[-]"}},
		{"requests and limits are one block",
			`{"containers":[{"name":"web","image":"a","resources":{"limits":{"cpu":"100m"}}}]}`,
			`{"containers":[{"name":"web","image":"a","resources":{"requests":{"cpu":"200m","memory":"64Mi"},"limits":{"cpu":"500m","memory":"128Mi"}}}]}`,
			[]string{"containers[web].resources"}},
		{"a container's fields each count",
			`{"containers":[{"name":"web","image":"a","env":[{"name":"A","value":"1"}]}]}`,
			`{"containers":[{"name":"web","image":"b","env":[{"name":"A","value":"2"},{"name":"B","value":"x"}]}]}`,
			[]string{"containers[web].env[A]", "containers[web].env[B]", "containers[web].image"}},
		{"a container added is one",
			`{"containers":[{"name":"web","image":"a"}]}`,
			`{"containers":[{"name":"web","image":"a"},{"name":"side","image":"s","ports":[{"containerPort":80}]}]}`,
			[]string{"containers[side]"}},
		{"a container replaced by a renamed one counts every field it changes",
			`{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}`,
			`{"spec":{"containers":[{"name":"evil","image":"busybox:1.36","securityContext":{"privileged":true},"volumeMounts":[{"name":"root","mountPath":"/host"}]}],"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`,
			[]string{"spec.volumes[root]", "spec.containers[evil].image", "spec.containers[evil].name", "spec.containers[evil].securityContext", "spec.containers[evil].volumeMounts[root]"}},
		{"a probe is one", `{"c":{}}`, `{"c":{"livenessProbe":{"httpGet":{"path":"/","port":80},"periodSeconds":5}}}`, []string{"c.livenessProbe"}},
		{"labels each count", `{"metadata":{"labels":{"a":"1"}}}`, `{"metadata":{"labels":{"a":"2","b":"1"}}}`, []string{"metadata.labels.a", "metadata.labels.b"}},
		{"a key with a slash in brackets", `{"metadata":{}}`, `{"metadata":{"annotations":{"app.kubernetes.io/owner":"x"}}}`, []string{"metadata.annotations[app.kubernetes.io/owner]"}},
		{"a port by its number", `{"ports":[{"containerPort":80}]}`, `{"ports":[{"containerPort":80},{"containerPort":443}]}`, []string{"ports[443]"}},
		{"args are one", `{"args":["a","b"]}`, `{"args":["a","c","d"]}`, []string{"args"}},
		{"bookkeeping is none", `{"metadata":{"resourceVersion":"1","generation":1},"status":{"x":1}}`, `{"metadata":{"resourceVersion":"2","generation":2},"status":{"x":2}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b, a map[string]any
			if err := json.Unmarshal([]byte(tc.before), &b); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.after), &a); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, edits(b, a)); d != "" {
				t.Errorf("edits (-want +got):\n%s", d)
			}
		})
	}
}

// BenchmarkEdits: the edits of a Deployment whose template changed in
// three ways, as every preview of a change computes them.
func BenchmarkEdits(b *testing.B) {
	var before, after map[string]any
	if err := json.Unmarshal([]byte(deploymentManifest("web", "registry.example/web:1.0", 3)), &before); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal([]byte(deploymentManifest("web", "registry.example/web:1.1", 3)), &after); err != nil {
		b.Fatal(err)
	}
	spec := after["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	spec["tolerations"] = []any{map[string]any{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}}
	c := spec["containers"].([]any)[0].(map[string]any)
	c["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m"}, "limits": map[string]any{"cpu": "200m"}}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(edits(before, after)); n != 3 {
			b.Fatalf("%d edits", n)
		}
	}
}
