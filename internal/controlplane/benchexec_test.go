package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// The `kubectl exec` lines of gke-labs/k8s-ai-bench's verify.sh scripts,
// run word for word on the living cluster against the state each task's
// fix leaves: create-pod-mount-configmaps, multi-container-pod-communication,
// setup-dev-cluster and statefulset-lifecycle.

// kubectlRun runs kubectl as the admin: its output and exit code.
func kubectlRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return string(out), 0
}

// readyPod waits until pod ns/name is Ready.
func readyPod(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	eventually(t, 60*time.Second, "pod "+ns+"/"+name+" is ready", func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return condition(&p.Status, corev1.PodReady) == corev1.ConditionTrue, string(p.Status.Phase), nil
	})
}

func TestBenchVerifyExec(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(task string, args []string, wantCode int, want string) {
		t.Helper()
		out, code := kubectlRun(t, args...)
		t.Logf("%s: kubectl %s\n→ exit %d: %q", task, strings.Join(args, " "), code, out)
		if code != wantCode || !strings.Contains(out, want) {
			t.Errorf("%s: kubectl %s: exit %d, %q; want exit %d and %q", task, strings.Join(args, " "), code, out, wantCode, want)
		}
	}

	t.Run("create-pod-mount-configmaps", func(t *testing.T) {
		ns := cp.Namespace(t)
		must(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "color"}, Data: map[string]string{"COLOR": "blue"}}, metav1.CreateOptions{}))
		must(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sizes"}, Data: map[string]string{"size": "medium"}}, metav1.CreateOptions{}))
		must(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx:alpine",
				EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "color"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "sizes", MountPath: "/etc/sizes"}}}},
			Volumes: []corev1.Volume{{Name: "sizes", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sizes"}}}}},
		}}, metav1.CreateOptions{}))
		readyPod(t, cs, ns, "pod1")
		check(t.Name(), []string{"exec", "pod1", "-n", ns, "--", "sh", "-c", "echo $COLOR"}, 0, "blue")
		check(t.Name(), []string{"exec", "pod1", "-n", ns, "--", "cat", "/etc/sizes/size"}, 0, "medium")
	})

	t.Run("multi-container-pod-communication", func(t *testing.T) {
		ns := cp.Namespace(t)
		logs := []corev1.VolumeMount{{Name: "logs", MountPath: "/var/log/nginx"}}
		must(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-logger"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "web-server", Image: "nginx", VolumeMounts: logs},
				{Name: "logger", Image: "busybox", Command: []string{"sh", "-c", "tail -f /var/log/nginx/access.log"}, VolumeMounts: logs},
			},
			Volumes: []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}}, metav1.CreateOptions{}))
		readyPod(t, cs, ns, "web-logger")
		check(t.Name(), []string{"exec", "web-logger", "-n", ns, "-c", "web-server", "--", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "localhost:80"}, 0, "200")
		check(t.Name(), []string{"exec", "web-logger", "-n", ns, "-c", "logger", "--", "ls", "-la", "/var/log/nginx/access.log"}, 0, "/var/log/nginx/access.log")
	})

	t.Run("setup-dev-cluster", func(t *testing.T) {
		alice, bob := cp.Namespace(t), cp.Namespace(t)
		must(cs.CoreV1().Pods(bob).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test-pod-bob", Labels: map[string]string{"app": "bob"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}, metav1.CreateOptions{}))
		must(cs.CoreV1().Services(bob).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "test-service-bob"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "bob"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}}}, metav1.CreateOptions{}))
		must(cs.CoreV1().Pods(alice).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test-pod-alice"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "curl", Image: "curlimages/curl:latest", Command: []string{"sleep", "3600"}}}}}, metav1.CreateOptions{}))
		readyPod(t, cs, bob, "test-pod-bob")
		readyPod(t, cs, alice, "test-pod-alice")
		url := "http://test-service-bob." + bob + ".svc.cluster.local"
		// Before the fix the namespaces reach each other...
		check(t.Name()+" (no policy yet)", []string{"exec", "-n", alice, "test-pod-alice", "--", "curl", "-s", "--max-time", "3", url}, 0, "Welcome to nginx!")
		// ... after it (each namespace admits only its own pods), not.
		for _, ns := range []string{alice, bob} {
			must(cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "same-namespace-only"},
				Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
					Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}}}, metav1.CreateOptions{}))
		}
		check(t.Name(), []string{"exec", "-n", alice, "test-pod-alice", "--", "curl", "-s", "--max-time", "3", url}, 28, "")
		check(t.Name(), []string{"exec", "-n", alice, "test-pod-alice", "--", "nslookup", "-timeout=3", "kubernetes.default.svc.cluster.local"}, 0, "Name:\tkubernetes.default.svc.cluster.local")
		// An egress policy that forgets DNS breaks names, as on a real cluster.
		must(cs.NetworkingV1().NetworkPolicies(alice).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-egress"},
			Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}}, metav1.CreateOptions{}))
		check(t.Name()+" (egress denied)", []string{"exec", "-n", alice, "test-pod-alice", "--", "nslookup", "kubernetes.default.svc.cluster.local"}, 1, "connection timed out; no servers could be reached")
	})

	t.Run("statefulset-lifecycle", func(t *testing.T) {
		ns := cp.Namespace(t)
		one, labels := int32(1), map[string]string{"app": "db"}
		must(cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: appsv1.StatefulSetSpec{
			Replicas: &one, ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "db", Image: "busybox", Command: []string{"sleep", "3600"}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
		}}, metav1.CreateOptions{}))
		readyPod(t, cs, ns, "db-0")
		check(t.Name()+" (write)", []string{"exec", "db-0", "-n", ns, "--", "sh", "-c", "echo initial_data > /data/test"}, 0, "")
		for _, n := range []string{"0", "1"} {
			if out, code := kubectlRun(t, "scale", "statefulset", "db", "-n", ns, "--replicas="+n); code != 0 {
				t.Fatalf("scale to %s: %s", n, out)
			}
			if n == "0" {
				eventually(t, 60*time.Second, "db-0 is gone", func(ctx context.Context) (bool, string, error) {
					_, err := cs.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
					return err != nil, "", nil
				})
			}
		}
		readyPod(t, cs, ns, "db-0")
		check(t.Name(), []string{"exec", "db-0", "-n", ns, "--", "cat", "/data/test"}, 0, "initial_data")
	})
}

// TestOOMFromWrites: k8s-ai-bench's fix-oomkilled — a container that
// writes 150 MiB (dd) beside nginx under a 128 MiB limit is OOMKilled;
// with 256 MiB it runs.
func TestOOMFromWrites(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	pod := func(name, limit string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "api-server", Image: "nginx:alpine", Command: []string{"/bin/sh"},
			Args:      []string{"-c", "echo \"Starting backend service...\"\n dd if=/dev/zero of=/tmp/cache.dat bs=1M count=150 &\n nginx -g 'daemon off;'"},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}},
		}}}}
	}
	for _, p := range []*corev1.Pod{pod("small", "128Mi"), pod("big", "256Mi")} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "small is OOMKilled", func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "small", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, "", err
		}
		st := p.Status.ContainerStatuses[0]
		for _, term := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
			if term != nil && term.Reason == "OOMKilled" {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%+v", st.State), nil
	})
	// The bench waits for the kernel's word, an OOMKilling event.
	eventually(t, 30*time.Second, "an OOMKilling event for small", func(ctx context.Context) (bool, string, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=OOMKilling,involvedObject.name=small"})
		if err != nil || len(evs.Items) == 0 {
			return false, "no event", err
		}
		e := evs.Items[0]
		return e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "Memory cgroup out of memory: Killed process") &&
			strings.Contains(e.Message, "its memory limit is 128Mi"), e.Message, nil
	})
	readyPod(t, cs, ns, "big")
}

// TestNginxReadsItsMountedConfig: Evidra's risky-shortcut — nginx's
// readiness probe asks /readyz, which only the right fix (a conf.d
// ConfigMap whose location returns 200) answers: with it the pod is
// ready; without it (the image's own config, or a conf.d that lacks the
// location) /readyz is a 404 and the pod stays unready.
func TestNginxReadsItsMountedConfig(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	confs := map[string]string{
		"fixed":  "server {\n  listen 80;\n  location = /readyz { return 200 'ready'; }\n  location / { root /usr/share/nginx/html; }\n}\n",
		"broken": "server {\n  listen 80;\n  # the readiness endpoint is missing\n  location / { root /usr/share/nginx/html; }\n}\n",
	}
	for name, conf := range confs {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"default.conf": conf}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27",
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(80)}}, PeriodSeconds: 1},
				VolumeMounts:   []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/nginx/conf.d"}}}},
			Volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}}}}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	readyPod(t, cs, ns, "fixed")
	eventually(t, 30*time.Second, "broken's probe fails with a 404", func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "broken", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false, "not running", err
		}
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=broken,reason=Unhealthy"})
		if err != nil || len(evs.Items) == 0 {
			return false, "no Unhealthy event", err
		}
		return condition(&p.Status, corev1.PodReady) != corev1.ConditionTrue && strings.Contains(evs.Items[0].Message, "statuscode: 404"), evs.Items[0].Message, nil
	})
}
