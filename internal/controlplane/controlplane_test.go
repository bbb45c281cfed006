package controlplane

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// cp is the control plane shared by this package's tests.
var cp *ControlPlane

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runOrphanHelper() // never returns
	}
	os.Exit(Main(nil, func(_ context.Context, c *ControlPlane) error {
		cp = c
		return nil
	}, m.Run))
}

func clientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestConfigMapRoundTrip(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	want := map[string]string{"greeting": "hello", "empty": ""}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "round-trip"}, Data: want}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "round-trip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("ConfigMap data (-want +got):\n%s", diff)
	}
}

func TestServerVersion(t *testing.T) {
	v, err := clientset(t, cp.Admin).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != KubernetesVersion {
		t.Errorf("server version = %q, want %q", v.GitVersion, KubernetesVersion)
	}
}

func TestViewerPermissions(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	tests := []struct {
		name      string
		list      func(cs *kubernetes.Clientset) error
		forbidden bool
	}{
		{"pods", func(cs *kubernetes.Clientset) error {
			_, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err
		}, false},
		{"pods all namespaces", func(cs *kubernetes.Clientset) error {
			_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		}, false},
		{"secrets", func(cs *kubernetes.Clientset) error {
			_, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		}, true},
		{"configmaps", func(cs *kubernetes.Clientset) error {
			_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}, true},
	}
	for _, kubeconfig := range []string{"config", "file"} {
		for _, tt := range tests {
			t.Run(kubeconfig+"/"+tt.name, func(t *testing.T) {
				cfg := cp.Viewer
				if kubeconfig == "file" {
					var err error
					if cfg, err = clientcmd.BuildConfigFromFlags("", cp.ViewerKubeconfig); err != nil {
						t.Fatal(err)
					}
				}
				err := tt.list(clientset(t, cfg))
				if got := apierrors.IsForbidden(err); got != tt.forbidden {
					t.Errorf("forbidden = %v, want %v (err: %v)", got, tt.forbidden, err)
				}
				if !tt.forbidden && err != nil {
					t.Errorf("unexpected error: %v", err)
				}
			})
		}
	}
}

func TestAdminKubeconfig(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clientset(t, cfg).CoreV1().Secrets("default").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("admin list secrets: %v", err)
	}
}

func TestNodesRegistered(t *testing.T) {
	nodes, err := clientset(t, cp.Admin).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes.Items {
		got = append(got, n.Name)
		if want, err := cp.Kubelet.PortOf(n.Name); err != nil || int(n.Status.DaemonEndpoints.KubeletEndpoint.Port) != want {
			t.Errorf("node %s kubelet port = %d, want %d (%v)", n.Name, n.Status.DaemonEndpoints.KubeletEndpoint.Port, want, err)
		}
	}
	want := append(cp.SimulatedNodes, cp.Kubelet.Nodes()...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

// TestStopLeavesNothing starts a second control plane and checks that Stop
// ends all five processes and removes the data directory.
func TestStopLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	c, err := Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pids := c.PIDs()
	if len(pids) != 6 {
		t.Fatalf("PIDs = %v, want six (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, metrics-server)", pids)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d still running after Stop", pid)
		}
	}
	if _, err := os.Stat(c.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data dir %s still there: %v", c.Dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// alive reports whether pid names a process that is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Field 3 is the state; Z is a zombie waiting for its parent.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func waitGone(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func BenchmarkStart(b *testing.B) {
	bins, err := EnsureBinaries(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := Start(context.Background(), &Options{Binaries: bins})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
