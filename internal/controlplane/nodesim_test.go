package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The simulated nodes fail the way real ones do: each break below shows
// from the Deployment's spec alone, and goes away after the fix an agent
// would make.

// podStates describes the containers of app's pods, one word each:
// Ready, Running (not ready) or the waiting reason, with the last
// termination's reason after a slash.
func podStates(ctx context.Context, cs kubernetes.Interface, ns, app string) ([]string, []corev1.Pod, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, nil, err
	}
	var out []string
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		live = append(live, p)
		for _, c := range p.Status.ContainerStatuses {
			s := "Unknown"
			switch {
			case c.State.Running != nil && c.Ready:
				s = "Ready"
			case c.State.Running != nil:
				s = "Running"
			case c.State.Waiting != nil:
				s = c.State.Waiting.Reason
			case c.State.Terminated != nil:
				s = c.State.Terminated.Reason
			}
			if t := c.LastTerminationState.Terminated; t != nil {
				s += "/" + t.Reason
			}
			out = append(out, s)
		}
	}
	return out, live, nil
}

func all(states []string, n int, ok func(string) bool) bool {
	if len(states) != n {
		return false
	}
	for _, s := range states {
		if !ok(s) {
			return false
		}
	}
	return true
}

func patchDeployment(t *testing.T, cs kubernetes.Interface, ns, name, patch string) {
	t.Helper()
	if _, err := cs.AppsV1().Deployments(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rolledOut waits until the Deployment is Available with every replica
// updated and every pod's containers Ready.
func rolledOut(t *testing.T, cs kubernetes.Interface, ns, name string, replicas int) {
	t.Helper()
	eventually(t, 60*time.Second, name+" rolled out and ready", func(ctx context.Context) (bool, string, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		states, _, err := podStates(ctx, cs, ns, name)
		if err != nil {
			return false, "", err
		}
		done := available(d) && d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == int32(replicas) &&
			d.Status.ReadyReplicas == int32(replicas) && d.Status.Replicas == int32(replicas)
		return done && all(states, replicas, func(s string) bool { return strings.HasPrefix(s, "Ready") }), fmt.Sprintf("%v %+v", states, d.Status), nil
	})
}

func hasEvent(ctx context.Context, cs kubernetes.Interface, ns, reason, contains string) (bool, string, error) {
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", err
	}
	var seen []string
	for _, e := range evs.Items {
		if e.Reason == reason && strings.Contains(e.Message, contains) && e.Source.Component != "" {
			return true, "", nil
		}
		seen = append(seen, e.Reason+": "+e.Message)
	}
	return false, strings.Join(seen, "\n"), nil
}

func TestFailuresFromTheSpec(t *testing.T) {
	ctx := context.Background()
	cs := clientset(t, cp.Admin)
	probe := func(port int) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(port)}},
			PeriodSeconds: 1, FailureThreshold: 1}
	}
	tests := []struct {
		name      string
		container corev1.Container
		volumes   []corev1.Volume
		broken    func(string) bool // every container's state while broken
		event     [2]string         // reason and part of the message of a kubelet Event
		fix       func(t *testing.T, cs kubernetes.Interface, ns string)
	}{{
		name:      "image tag that does not exist",
		container: corev1.Container{Name: "web", Image: "nginx:1.99.0"},
		broken:    func(s string) bool { return s == "ImagePullBackOff" || s == "ErrImagePull" },
		event:     [2]string{"Failed", `Failed to pull image "nginx:1.99.0"`},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			patchDeployment(t, cs, ns, "image-tag-that-does-not-exist", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`)
		},
	}, {
		name: "env from a missing ConfigMap",
		container: corev1.Container{Name: "web", Image: "nginx:1.27", EnvFrom: []corev1.EnvFromSource{{
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-settings"}}}}},
		broken: func(s string) bool { return s == "CreateContainerConfigError" },
		event:  [2]string{"Failed", `Error: configmap "web-settings" not found`},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			createConfigMap(t, cs, ns, "web-settings", map[string]string{"MODE": "prod"})
		},
	}, {
		name: "env from a missing Secret key",
		container: corev1.Container{Name: "web", Image: "nginx:1.27", Env: []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token"}}}}},
		broken: func(s string) bool { return s == "CreateContainerConfigError" },
		event:  [2]string{"Failed", `Error: secret "api" not found`},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api"}, Data: map[string][]byte{"token": []byte("s3cret")}}
			if _, err := cs.CoreV1().Secrets(ns).Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name:      "volume from a missing ConfigMap",
		container: corev1.Container{Name: "web", Image: "nginx:1.27", VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/nginx/conf.d"}}},
		volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "nginx-conf"}}}}},
		broken: func(s string) bool { return s == "ContainerCreating" },
		event:  [2]string{"FailedMount", `MountVolume.SetUp failed for volume "conf" : configmap "nginx-conf" not found`},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			createConfigMap(t, cs, ns, "nginx-conf", map[string]string{"default.conf": "server { listen 80; }"})
		},
	}, {
		name:      "command that exits",
		container: corev1.Container{Name: "web", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo starting; exit 3"}},
		broken:    func(s string) bool { return s == "CrashLoopBackOff/Error" || s == "Running/Error" },
		event:     [2]string{"BackOff", "Back-off restarting failed container web"},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			patchDeployment(t, cs, ns, "command-that-exits", `{"spec":{"template":{"spec":{"containers":[{"name":"web","command":["sh","-c","echo serving; sleep infinity"]}]}}}}`)
		},
	}, {
		name:      "command the image does not have",
		container: corev1.Container{Name: "web", Image: "nginx:1.27", Command: []string{"gunicorn", "app:app"}},
		broken:    func(s string) bool { return s == "CrashLoopBackOff/StartError" || s == "Running/StartError" },
		event:     [2]string{"BackOff", "Back-off restarting failed container web"},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			patchDeployment(t, cs, ns, "command-the-image-does-not-have", `{"spec":{"template":{"spec":{"containers":[{"name":"web","command":null}]}}}}`)
		},
	}, {
		name:      "readiness probe on a port nothing listens on",
		container: corev1.Container{Name: "web", Image: "nginx:1.27", ReadinessProbe: probe(8080)},
		broken:    func(s string) bool { return s == "Running" },
		event:     [2]string{"Unhealthy", "Readiness probe failed: Get \"http://10.96."},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			patchDeployment(t, cs, ns, "readiness-probe-on-a-port-nothing-listens-on", `{"spec":{"template":{"spec":{"containers":[{"name":"web","readinessProbe":{"httpGet":{"port":80}}}]}}}}`)
		},
	}, {
		name:      "liveness probe on a port nothing listens on",
		container: corev1.Container{Name: "web", Image: "nginx:1.27", LivenessProbe: probe(8080)},
		broken:    func(s string) bool { return strings.HasSuffix(s, "/Error") },
		event:     [2]string{"Killing", "Container web failed liveness probe, will be restarted"},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			patchDeployment(t, cs, ns, "liveness-probe-on-a-port-nothing-listens-on", `{"spec":{"template":{"spec":{"containers":[{"name":"web","livenessProbe":{"httpGet":{"port":80}}}]}}}}`)
		},
	}, {
		name: "memory limit below what the image needs",
		container: corev1.Container{Name: "web", Image: "postgres:16", Env: []corev1.EnvVar{{Name: "POSTGRES_PASSWORD", Value: "pw"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}}},
		broken: func(s string) bool { return s == "CrashLoopBackOff/OOMKilled" },
		event:  [2]string{"BackOff", "Back-off restarting failed container web"},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			patchDeployment(t, cs, ns, "memory-limit-below-what-the-image-needs", `{"spec":{"template":{"spec":{"containers":[{"name":"web","resources":{"limits":{"memory":"256Mi"}}}]}}}}`)
		},
	}, {
		name:      "postgres without its password",
		container: corev1.Container{Name: "web", Image: "postgres:16"},
		broken:    func(s string) bool { return s == "CrashLoopBackOff/Error" || s == "Running/Error" },
		event:     [2]string{"BackOff", "Back-off restarting failed container web"},
		fix: func(t *testing.T, cs kubernetes.Interface, ns string) {
			patchDeployment(t, cs, ns, "postgres-without-its-password", `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"POSTGRES_PASSWORD","value":"pw"}]}]}}}}`)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := cp.Namespace(t)
			name := strings.ToLower(strings.ReplaceAll(tt.name, " ", "-"))
			d := deployment(name, 2, "", nil)
			d.Spec.Template.Spec.Containers = []corev1.Container{tt.container}
			d.Spec.Template.Spec.Volumes = tt.volumes
			if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 45*time.Second, "broken", func(ctx context.Context) (bool, string, error) {
				states, _, err := podStates(ctx, cs, ns, name)
				return all(states, 2, tt.broken), fmt.Sprint(states), err
			})
			eventually(t, 30*time.Second, "the kubelet's event", func(ctx context.Context) (bool, string, error) {
				return hasEvent(ctx, cs, ns, tt.event[0], tt.event[1])
			})
			// A container that starts and dies (OOMKilled a second after it
			// starts) is Ready for that second, as on a real node: the
			// deployment's status settles at 0 ready in its back-off.
			eventually(t, 15*time.Second, "no ready replica", func(ctx context.Context) (bool, string, error) {
				got, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				return got.Status.ReadyReplicas == 0, fmt.Sprintf("%d ready replicas", got.Status.ReadyReplicas), nil
			})
			tt.fix(t, cs, ns)
			rolledOut(t, cs, ns, name, 2)
		})
	}
}

// TestCrashLoopBacksOff: a container that exits is restarted at once, then
// after 10 s: restartCount grows and its previous logs are its output.
func TestCrashLoopBacksOff(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crasher"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "busybox:1.37", Command: []string{"sh", "-c", "echo connecting to db; echo 'fatal: db unreachable' >&2; exit 2"}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "two restarts", func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "crasher", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, "", err
		}
		c := p.Status.ContainerStatuses[0]
		last := c.LastTerminationState.Terminated
		return c.RestartCount >= 2 && last != nil && last.ExitCode == 2 && p.Status.Phase == corev1.PodRunning, fmt.Sprintf("%+v", c), nil
	})
	b, err := cs.CoreV1().Pods(ns).GetLogs("crasher", &corev1.PodLogOptions{Previous: true}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "connecting to db\nfatal: db unreachable\n"; string(b) != want {
		t.Errorf("previous logs = %q, want %q", b, want)
	}
}

// TestLogsOfSimulatedContainers: a known image prints its lines, a shell
// command or a Python program its output (a crash its traceback); unknown
// output says so.
func TestLogsOfSimulatedContainers(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	for _, p := range []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "echo"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "alpine:3.20",
			Env:     []corev1.EnvVar{{Name: "WHO", Value: "world"}},
			Command: []string{"sh", "-c", "for i in 1 2 3; do echo \"hello $WHO $i\"; done; hostname; sleep 3600"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "python"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "python:3.12-slim",
			Command: []string{"sh", "-c", "pip install flask && sleep infinity"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "python:3.12-slim",
			Command: []string{"python", "-u", "-c", "import time\nprint('worker started', flush=True)\nwhile True:\n    time.sleep(60)"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pycrash"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "python:3.12-alpine",
			Command: []string{"python3", "-c", "import os\nprint('starting')\nraise RuntimeError(f\"no {os.getenv('DB', 'DB')} configured\")"}}}}},
	} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, &p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ pod, want string }{
		{"nginx", "/docker-entrypoint.sh: Configuration complete; ready for start up\n"},
		{"echo", "hello world 1\nhello world 2\nhello world 3\necho\n"},
		{"python", "[kubecode simulated node] no log lines are known for this container: the output of pip is not simulated\n"},
		{"worker", "worker started\n"},
		{"pycrash", "starting\nTraceback (most recent call last):\n  File \"<string>\", line 3, in <module>\nRuntimeError: no DB configured\n"},
	} {
		eventually(t, 30*time.Second, tt.pod+" logs", func(ctx context.Context) (bool, string, error) {
			b, err := cs.CoreV1().Pods(ns).GetLogs(tt.pod, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				return false, err.Error(), nil
			}
			return strings.HasPrefix(string(b), tt.want), string(b), nil
		})
	}
}

// TestDefaultStorageClass: a claim without a class is bound by the default
// class's simulated provisioner, grows when its request grows, and a
// StatefulSet's claims let its pods run.
func TestDefaultStorageClass(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	capacity := func(want string) func(ctx context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			got, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			c := got.Status.Capacity[corev1.ResourceStorage]
			b, _ := json.Marshal(got.Status)
			return got.Status.Phase == corev1.ClaimBound && ptr.Deref(got.Spec.StorageClassName, "") == DefaultStorageClass && c.String() == want, string(b), nil
		}
	}
	eventually(t, 30*time.Second, "claim bound", capacity("1Gi"))
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data", types.MergePatchType,
		[]byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "claim resized", capacity("2Gi"))

	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](2), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "redis", Image: "redis:7.4", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: pvc.Spec}},
	}}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "stateful set ready", func(ctx context.Context) (bool, string, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return s.Status.ReadyReplicas == 2, fmt.Sprintf("%+v", s.Status), nil
	})
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "released volume deleted", func(ctx context.Context) (bool, string, error) {
		pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns && pv.Spec.ClaimRef.Name == "data" {
				return false, fmt.Sprintf("%s %s", pv.Name, pv.Status.Phase), nil
			}
		}
		return true, "", nil
	})
}

func createConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCordonTaints: a cordoned node is tainted unschedulable:NoSchedule,
// as the node lifecycle controller taints one on a real cluster; once
// uncordoned the taint goes.
func TestCordonTaints(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := "kwok-cordon-taints"
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{kwokAnnotation: kwokManaged}, Labels: map[string]string{"kubernetes.io/hostname": name}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	tainted := func(want bool) func(ctx context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			has := false
			for _, tn := range n.Spec.Taints {
				has = has || tn.Key == corev1.TaintNodeUnschedulable && tn.Effect == corev1.TaintEffectNoSchedule
			}
			return has == want, fmt.Sprintf("%+v", n.Spec.Taints), nil
		}
	}
	cordon := func(on bool) {
		t.Helper()
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	eventually(t, 30*time.Second, "the cordoned node is tainted", tainted(true))
	cordon(false)
	eventually(t, 30*time.Second, "the uncordoned node is not", tainted(false))
}
