package controlplane

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The living cluster: controllers, scheduler and KWOK's simulated nodes
// reconcile what the tests change, as on a real cluster.

// eventually polls cond every 100ms until it returns true, failing t after
// timeout with the last state it described.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	last := ""
	for {
		ok, state, err := cond(ctx)
		if err != nil && ctx.Err() == nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			for _, p := range []*process{cp.scheduler, cp.kwok, cp.controllerManager} {
				b, _ := os.ReadFile(p.logPath)
				var keep []string
				for _, l := range strings.Split(string(b), "\n") {
					if !strings.Contains(l, "extension-apiserver-authentication") && !strings.Contains(l, "Caches are synced") {
						keep = append(keep, l)
					}
				}
				t.Logf("%s log:\n%s", p.name, strings.Join(keep[max(0, len(keep)-30):], "\n"))
			}
			t.Fatalf("%s: not within %s; last seen: %s", what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func deployment(name string, replicas int32, image string, podAnnotations map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: podAnnotations},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

// runningPods lists the pods of app that are Running and Ready, and says
// what the others are doing.
func runningPods(ctx context.Context, cs kubernetes.Interface, ns, app string) (running []corev1.Pod, state string, err error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, "", err
	}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if p.Status.Phase == corev1.PodRunning && ready && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
		state += fmt.Sprintf(" %s:%s@%s", p.Name, p.Status.Phase, p.Spec.NodeName)
	}
	return running, state, nil
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestScaleCreatesRunningPods(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment("web", 1, "nginx:1.27", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int32{1, 3} {
		if n != 1 {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				scale, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				scale.Spec.Replicas = n
				_, err = cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, 30*time.Second, fmt.Sprintf("%d running pods", n), func(ctx context.Context) (bool, string, error) {
			running, state, err := runningPods(ctx, cs, ns, "web")
			if err != nil {
				return false, "", err
			}
			for _, p := range running {
				if !slices.Contains(cp.SimulatedNodes, p.Spec.NodeName) {
					return false, "", fmt.Errorf("pod %s runs on %q, not a simulated node", p.Name, p.Spec.NodeName)
				}
				if p.Status.PodIP == "" {
					return false, "", fmt.Errorf("pod %s has no IP", p.Name)
				}
			}
			return len(running) == int(n), state, nil
		})
	}
	eventually(t, 30*time.Second, "deployment available with 3 ready replicas", func(ctx context.Context) (bool, string, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return available(d) && d.Status.ReadyReplicas == 3, fmt.Sprintf("%+v", d.Status), nil
	})
}

func TestRolloutOfNewImage(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	deps := cs.AppsV1().Deployments(ns)
	if _, err := deps.Create(ctx, deployment("api", 2, "nginx:1.27", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "first rollout", func(ctx context.Context) (bool, string, error) {
		d, err := deps.Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return available(d) && d.Status.UpdatedReplicas == 2, fmt.Sprintf("%+v", d.Status), nil
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deps.Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "rollout of api:2.0 complete", func(ctx context.Context) (bool, string, error) {
		d, err := deps.Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
		if err != nil {
			return false, "", err
		}
		var newRS, oldRS int
		state := ""
		for _, rs := range rss.Items {
			state += fmt.Sprintf(" %s(%s)=%d", rs.Name, rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas)
			switch rs.Spec.Template.Spec.Containers[0].Image {
			case "nginx:1.28":
				newRS++
				if rs.Status.ReadyReplicas != 2 {
					return false, state, nil
				}
			default:
				oldRS++
				if *rs.Spec.Replicas != 0 {
					return false, state, nil
				}
			}
		}
		done := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == 2 && d.Status.AvailableReplicas == 2 && available(d)
		return done && newRS == 1 && oldRS == 1, state, nil
	})
}

func TestDeleteNamespaceCompletes(t *testing.T) {
	ctx := context.Background()
	cs := clientset(t, cp.Admin)
	name := fmt.Sprintf("t-delete-ns-%d", time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments(name).Create(ctx, deployment("doomed", 2, "redis:7.4", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pods running before the delete", func(ctx context.Context) (bool, string, error) {
		running, state, err := runningPods(ctx, cs, name, "doomed")
		return len(running) == 2, state, err
	})
	if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "namespace gone", func(ctx context.Context) (bool, string, error) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("%s %+v", ns.Status.Phase, ns.Status.Conditions), nil
	})
}

func TestDeleteDeploymentCollectsDependents(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment("owner", 2, "httpd:2.4", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pods running", func(ctx context.Context) (bool, string, error) {
		running, state, err := runningPods(ctx, cs, ns, "owner")
		return len(running) == 2, state, err
	})
	background := metav1.DeletePropagationBackground
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "replica sets and pods collected", func(ctx context.Context) (bool, string, error) {
		rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return len(rss.Items) == 0 && len(pods.Items) == 0, fmt.Sprintf("%d replica sets, %d pods", len(rss.Items), len(pods.Items)), nil
	})
}

func TestJobCompletes(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "migrate"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "migrate", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo migrating; sleep 1; echo done"}}},
		}}},
	}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "job complete", func(ctx context.Context) (bool, string, error) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "migrate", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return j.Status.Succeeded == 1, "", nil
			}
		}
		return false, fmt.Sprintf("%+v", j.Status), nil
	})
}

func TestFailuresProducedByTheCluster(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	for _, tc := range []struct {
		failure, reason string
		lastState       string // lastState.terminated.reason, if any
	}{
		{"image-pull", "ImagePullBackOff", ""},
		{"crash-loop", "CrashLoopBackOff", "Error"},
		{"oom-killed", "CrashLoopBackOff", "OOMKilled"},
	} {
		t.Run(tc.failure, func(t *testing.T) {
			d := deployment(tc.failure, 2, "nginx:1.27", map[string]string{"simulate.kubecode.io/failure": tc.failure})
			if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "pods failing with "+tc.reason, func(ctx context.Context) (bool, string, error) {
				pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + tc.failure})
				if err != nil {
					return false, "", err
				}
				failing, state := 0, ""
				for _, p := range pods.Items {
					for _, c := range p.Status.ContainerStatuses {
						state += fmt.Sprintf(" %s:%+v", p.Name, c.State)
						if c.State.Waiting == nil || c.State.Waiting.Reason != tc.reason || c.Ready {
							continue
						}
						if tc.lastState != "" && (c.LastTerminationState.Terminated == nil || c.LastTerminationState.Terminated.Reason != tc.lastState) {
							continue
						}
						failing++
					}
				}
				return failing == 2, state, nil
			})
			// The Deployment never becomes available.
			time.Sleep(time.Second)
			got, err := cs.AppsV1().Deployments(ns).Get(ctx, tc.failure, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if available(got) || got.Status.AvailableReplicas != 0 {
				t.Errorf("deployment %s is available: %+v", tc.failure, got.Status)
			}
		})
	}
}

// TestFailingJobPodStaysFailing: a Job's pod that asks for a crash loop
// keeps crash-looping; it does not complete.
func TestFailingJobPodStaysFailing(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cs := clientset(t, cp.Admin)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "flaky"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"simulate.kubecode.io/failure": "crash-loop"}},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers:    []corev1.Container{{Name: "flaky", Image: "busybox:1.36", Command: []string{"sleep", "infinity"}}},
			}}},
	}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crashing := func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods.Items)), err
		}
		p := pods.Items[0]
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" && p.Status.Phase == corev1.PodRunning {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses), nil
	}
	eventually(t, 30*time.Second, "job pod crash-looping", crashing)
	time.Sleep(2 * time.Second) // past pod-complete's delay
	eventually(t, time.Second, "job pod still crash-looping", crashing)
	j, err := cs.BatchV1().Jobs(ns).Get(ctx, "flaky", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Succeeded != 0 {
		t.Errorf("the crash-looping job succeeded: %+v", j.Status)
	}
}
