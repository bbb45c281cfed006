package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// TestTop: pods.top and nodes.top read metrics.k8s.io (the real
// metrics-server over the simulated kubelets) and set usage against
// requests, limits and allocatable; kubectl top agrees.
func TestTop(t *testing.T) {
	a := newAdapter(t, nil)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("100m"), corev1.ResourceMemory: apiresource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: apiresource.MustParse("32Mi")},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Resources: res}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var top []podTop
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := a.Call(ctx, "kubernetes.pods.top", json.RawMessage(`{"namespace":"`+ns+`"}`))
		if err == nil {
			if err := json.Unmarshal(out, &top); err != nil {
				t.Fatal(err)
			}
			if len(top) == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods.top never measured pod web: %v %s", err, out)
		}
		time.Sleep(time.Second)
	}
	p := top[0]
	if p.Name != "web" || p.CPU.Request == nil || *p.CPU.Request != 100 || p.CPU.Limit != nil || p.Memory.Limit == nil || *p.Memory.Limit != 32<<20 ||
		p.Memory.Usage < 8<<20 || p.Memory.OfLimit == nil || *p.Memory.OfLimit != (p.Memory.Usage*100+16<<20)/(32<<20) || len(p.Containers) != 1 {
		t.Errorf("pods.top: %+v", p)
	}
	var nodes []nodeTop
	call(t, a, "kubernetes.nodes.top", `{"sortBy":"memory"}`, &nodes)
	if len(nodes) < 3 || nodes[0].Memory.Allocatable == nil || nodes[0].Memory.Percent == nil || nodes[0].Memory.Usage < nodes[len(nodes)-1].Memory.Usage {
		t.Errorf("nodes.top: %+v", nodes)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	out, err := exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "top", "pod", "web", "-n", ns, "--no-headers").CombinedOutput()
	want := fmt.Sprintf("web %dm %dMi", p.CPU.Usage, p.Memory.Usage>>20)
	if got := strings.Join(strings.Fields(string(out)), " "); err != nil || got != want {
		t.Errorf("kubectl top pod: %q (%v), pods.top says %q", got, err, want)
	}
}
