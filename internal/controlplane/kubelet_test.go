package controlplane

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestLogsThroughAPIServer reads fixture logs with client-go: the request
// goes to kube-apiserver, which finds the pod's node and fetches the lines
// from the fake kubelet over TLS.
func TestLogsThroughAPIServer(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: corev1.PodSpec{
			NodeName: cp.Kubelet.Nodes()[0],
			Containers: []corev1.Container{
				{Name: "app", Image: "example.com/app:1"},
				{Name: "sidecar", Image: "example.com/sidecar:1"},
			},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.Kubelet.SetLogs(ns, "api", "app", false, []string{"starting", "listening on :8080", "GET /healthz 200"})
	cp.Kubelet.SetLogs(ns, "api", "app", true, []string{"starting", "panic: connection refused to postgres:5432"})
	cp.Kubelet.SetLogs(ns, "api", "sidecar", false, []string{"sidecar ready"})

	tests := []struct {
		name    string
		opts    corev1.PodLogOptions
		want    string
		wantErr string
	}{
		{"all", corev1.PodLogOptions{Container: "app"}, "starting\nlistening on :8080\nGET /healthz 200\n", ""},
		{"tail", corev1.PodLogOptions{Container: "app", TailLines: ptr.To[int64](1)}, "GET /healthz 200\n", ""},
		{"tail zero", corev1.PodLogOptions{Container: "app", TailLines: ptr.To[int64](0)}, "", ""},
		{"previous", corev1.PodLogOptions{Container: "app", Previous: true}, "starting\npanic: connection refused to postgres:5432\n", ""},
		{"previous tail", corev1.PodLogOptions{Container: "app", Previous: true, TailLines: ptr.To[int64](1)}, "panic: connection refused to postgres:5432\n", ""},
		{"other container", corev1.PodLogOptions{Container: "sidecar"}, "sidecar ready\n", ""},
		{"limit bytes", corev1.PodLogOptions{Container: "app", LimitBytes: ptr.To[int64](5)}, "start", ""},
		{"since seconds", corev1.PodLogOptions{Container: "app", SinceSeconds: ptr.To[int64](3600)}, "starting\nlistening on :8080\nGET /healthz 200\n", ""},
		{"no previous", corev1.PodLogOptions{Container: "sidecar", Previous: true}, "", `previous terminated container "sidecar" in pod "api" not found`},
		{"unknown container", corev1.PodLogOptions{Container: "nope"}, "", `container nope is not valid for pod api`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := cs.CoreV1().Pods(ns).GetLogs("api", &tt.opts)
			if tt.wantErr != "" {
				// Stream decodes the server's Status; DoRaw reports an
				// "unknown reason" for errors of this subresource.
				_, err := req.Stream(ctx)
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			b, err := req.DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("timestamps", func(t *testing.T) {
		b, err := cs.CoreV1().Pods(ns).GetLogs("api", &corev1.PodLogOptions{Container: "sidecar", Timestamps: true}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z sidecar ready\n$`).Match(b) {
			t.Errorf("logs with timestamps = %q", b)
		}
	})

	t.Run("viewer", func(t *testing.T) {
		b, err := clientset(t, cp.Viewer).CoreV1().Pods(ns).GetLogs("api", &corev1.PodLogOptions{Container: "sidecar"}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff("sidecar ready\n", string(b)); diff != "" {
			t.Errorf("viewer logs (-want +got):\n%s", diff)
		}
	})
}
