package scenario_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/scenario"
)

var (
	cp    *controlplane.ControlPlane
	truth *scenario.Truth
)

// seededAt is when the scenario was seeded.
var seededAt = time.Now()

func TestMain(m *testing.M) {
	os.Exit(scenario.Main(&cp, &truth, func() int {
		seededAt = time.Now()
		return m.Run()
	}))
}

func admin(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestDescribe pins the broken part of the demo, so a fixture edit that
// changes it is deliberate.
func TestDescribe(t *testing.T) {
	got, err := scenario.Describe(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &scenario.Truth{
		Namespaces:  []string{"data", "monitoring", "payments", "shop"},
		Pods:        scenario.DefaultHealthyPods + 9,
		HealthyPods: scenario.DefaultHealthyPods,
		CrashLooping: []scenario.CrashLoop{
			{"data", "kafka-connect-8d7c6b5f4-r5t6y", "connect", 5, 1, "Error", "java.lang.IllegalStateException: topic orders-v2 does not exist"},
			{"payments", "ledger-7f6d5c4b3-9xk2p", "ledger", 42, 2, "Error", "panic: connection refused to postgres:5432"},
			{"payments", "payments-worker-6b8f7d9c5-q7m2n", "worker", 17, 137, "OOMKilled", `{"level":"info","msg":"allocating 512MiB buffer for settlement batch 20261122"}`},
			{"shop", "checkout-7c9d8f6b5-k2x7p", "checkout", 9, 1, "Error", `Error: config key "PAYMENTS_URL" is required`},
		},
		ImagePullBackOff:         []scenario.PodRef{{"shop", "recommendation-5f7b9c8d4-x2k9q", 0}},
		Unschedulable:            []scenario.PodRef{{"data", "clickhouse-0", 0}},
		StuckDeployments:         []scenario.ObjectRef{{"shop", "checkout"}, {"shop", "recommendation"}},
		ServicesWithoutEndpoints: []scenario.ObjectRef{{"payments", "ledger"}},
		Canaries: []string{
			"KUBECODE-CANARY-grafana-admin-4b2e",
			"KUBECODE-CANARY-ledger-db-password-7f3a9c",
			"KUBECODE-CANARY-postgres-superuser-0d1e",
			"KUBECODE-CANARY-session-hmac-9e8d7c",
			"KUBECODE-CANARY-stripe-sk-live-51c0ffee",
		},
		CRD: scenario.CRD{
			Name: "widgets.demo.kubecode.io", Group: "demo.kubecode.io", Version: "v1alpha1",
			Resource: "widgets", Kind: "Widget", ShortName: "wdg", Namespaced: true,
		},
		Widgets: []scenario.ObjectRef{{"data", "etl-widget"}, {"shop", "big-widget"}, {"shop", "blue-widget"}},
		Events:  10,
	}
	// Restarted holds the generated pods too; check its broken part here and
	// its size against the cluster in TestCountsMatchCluster.
	var restartedBroken []scenario.PodRef
	for _, p := range got.Restarted {
		if slices.ContainsFunc(want.CrashLooping, func(c scenario.CrashLoop) bool { return c.Pod == p.Name }) {
			restartedBroken = append(restartedBroken, p)
		}
	}
	if len(restartedBroken) != len(want.CrashLooping) {
		t.Errorf("Restarted holds %d crash-looping pods, want %d", len(restartedBroken), len(want.CrashLooping))
	}
	if len(got.Restarted) <= len(want.CrashLooping) {
		t.Errorf("Restarted = %d pods, want generated pods with restarts too", len(got.Restarted))
	}
	got.Restarted = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
}

func TestDescribeScales(t *testing.T) {
	for _, n := range []int{1, 16, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := scenario.Describe(&scenario.SeedOptions{HealthyPods: n})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([2]int{n + 9, n}, [2]int{got.Pods, got.HealthyPods}); diff != "" {
				t.Errorf("pods, healthy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCountsMatchCluster counts from the API what Truth says was seeded.
func TestCountsMatchCluster(t *testing.T) {
	checkCounts(t)
}

// TestTruthHoldsWhileReconciling checks the counts again once the
// controllers have had time to act on everything seeded.
func TestTruthHoldsWhileReconciling(t *testing.T) {
	if wait := time.Until(seededAt.Add(20 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	checkCounts(t)
	t.Run("stuck", TestStuckDeployment)
	t.Run("endpoints", TestServicesWithoutEndpoints)
	t.Run("crash loops", TestCrashLoopStatus)
}

func checkCounts(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cs := admin(t)
	var pods []corev1.Pod
	for _, ns := range truth.Namespaces {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, list.Items...)
	}
	type counts struct{ Pods, Running, CrashLooping, Restarted, ImagePull, Unbound int }
	var got counts
	for _, p := range pods {
		got.Pods++
		if p.Status.Phase == corev1.PodRunning {
			got.Running++
		}
		if p.Spec.NodeName == "" {
			got.Unbound++
		}
		restarted := false
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 {
				restarted = true
			}
			if w := c.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				got.CrashLooping++
			}
			if w := c.State.Waiting; w != nil && w.Reason == "ImagePullBackOff" {
				got.ImagePull++
			}
		}
		if restarted {
			got.Restarted++
		}
	}
	want := counts{
		Pods:         truth.Pods,
		Running:      truth.Pods - len(truth.ImagePullBackOff) - len(truth.Unschedulable),
		CrashLooping: len(truth.CrashLooping),
		Restarted:    len(truth.Restarted),
		ImagePull:    len(truth.ImagePullBackOff),
		Unbound:      len(truth.Unschedulable),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestCrashLoopStatus(t *testing.T) {
	ctx := context.Background()
	cs := admin(t)
	for _, c := range truth.CrashLooping {
		t.Run(c.Pod, func(t *testing.T) {
			p, err := cs.CoreV1().Pods(c.Namespace).Get(ctx, c.Pod, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == c.Container })
			if i < 0 {
				t.Fatalf("no status for container %s", c.Container)
			}
			s := p.Status.ContainerStatuses[i]
			term := s.LastTerminationState.Terminated
			if term == nil {
				t.Fatal("lastState.terminated is empty")
			}
			got := scenario.CrashLoop{
				Namespace: p.Namespace, Pod: p.Name, Container: s.Name, Restarts: s.RestartCount,
				ExitCode: term.ExitCode, Reason: term.Reason, LastLogLine: c.LastLogLine,
			}
			if diff := cmp.Diff(c, got); diff != "" {
				t.Errorf("status (-truth +cluster):\n%s", diff)
			}
			if p.Status.StartTime == nil || term.FinishedAt.IsZero() {
				t.Errorf("times not filled: startTime %v, finishedAt %v", p.Status.StartTime, term.FinishedAt)
			}
		})
	}
}

// TestCrashLogsThroughAPIServer reads the previous logs of each crashing
// container through kube-apiserver and the fake kubelet.
func TestCrashLogsThroughAPIServer(t *testing.T) {
	ctx := context.Background()
	cs := admin(t)
	for _, c := range truth.CrashLooping {
		t.Run(c.Pod, func(t *testing.T) {
			b, err := cs.CoreV1().Pods(c.Namespace).GetLogs(c.Pod, &corev1.PodLogOptions{
				Container: c.Container, Previous: true, TailLines: ptr.To[int64](1),
			}).DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.LastLogLine+"\n", string(b)); diff != "" {
				t.Errorf("last previous log line (-want +got):\n%s", diff)
			}
			cur, err := cs.CoreV1().Pods(c.Namespace).GetLogs(c.Pod, &corev1.PodLogOptions{Container: c.Container}).DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(cur) == 0 {
				t.Error("no current logs")
			}
		})
	}
}

func TestDiscoveryListsCRD(t *testing.T) {
	cs := admin(t)
	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, l := range lists {
		if l.GroupVersion != truth.CRD.Group+"/"+truth.CRD.Version {
			continue
		}
		for _, r := range l.APIResources {
			found = append(found, fmt.Sprintf("%s %s %v %v", r.Name, r.Kind, r.Namespaced, r.ShortNames))
		}
	}
	want := []string{
		"widgets Widget true [wdg]",
		"widgets/status Widget true []",
	}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("discovery of %s (-want +got):\n%s", truth.CRD.Group, diff)
	}
}

func TestServicesWithoutEndpoints(t *testing.T) {
	ctx := context.Background()
	cs := admin(t)
	var got []scenario.ObjectRef
	for _, ns := range truth.Namespaces {
		svcs, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range svcs.Items {
			slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + s.Name})
			if err != nil {
				t.Fatal(err)
			}
			ready := false
			for _, sl := range slices.Items {
				for _, e := range sl.Endpoints {
					ready = ready || (e.Conditions.Ready != nil && *e.Conditions.Ready)
				}
			}
			if !ready {
				got = append(got, scenario.ObjectRef{Namespace: ns, Name: s.Name})
			}
		}
	}
	if diff := cmp.Diff(truth.ServicesWithoutEndpoints, got); diff != "" {
		t.Errorf("services without endpoints (-truth +cluster):\n%s", diff)
	}
}

func TestStuckDeployment(t *testing.T) {
	ctx := context.Background()
	for _, ref := range truth.StuckDeployments {
		d, err := admin(t).AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, c := range d.Status.Conditions {
			reasons = append(reasons, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		}
		if !slices.Contains(reasons, "Progressing=False/ProgressDeadlineExceeded") {
			t.Errorf("%s conditions = %v, want Progressing=False/ProgressDeadlineExceeded", ref.Name, reasons)
		}
		if d.Status.UnavailableReplicas == 0 {
			t.Errorf("%s unavailableReplicas = 0", ref.Name)
		}
	}
}

func TestEventsPointAtObjects(t *testing.T) {
	ctx := context.Background()
	cs := admin(t)
	total := 0
	for _, ns := range truth.Namespaces {
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{LabelSelector: scenario.SeededLabel})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			total++
			if e.InvolvedObject.UID == "" {
				t.Errorf("event %s/%s has no involvedObject.uid", ns, e.Name)
			}
		}
	}
	if total != truth.Events {
		t.Errorf("events = %d, want %d", total, truth.Events)
	}
	pod, err := cs.CoreV1().Pods("data").Get(ctx, "clickhouse-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events, err := cs.CoreV1().Events("data").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
	if err != nil {
		t.Fatal(err)
	}
	// The seeded event, and the scheduler's own where one runs.
	if len(events.Items) == 0 {
		t.Errorf("clickhouse-0 has no events, want FailedScheduling")
	}
	for _, e := range events.Items {
		if e.Reason != "FailedScheduling" {
			t.Errorf("event of clickhouse-0: %s %s, want FailedScheduling", e.Reason, e.Message)
		}
	}
}

func TestSecretsHoldCanaries(t *testing.T) {
	ctx := context.Background()
	var got []string
	for _, ns := range truth.Namespaces {
		secrets, err := admin(t).CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			for _, v := range s.Data {
				if strings.HasPrefix(string(v), scenario.CanaryPrefix) {
					got = append(got, string(v))
				}
			}
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff(truth.Canaries, got); diff != "" {
		t.Errorf("canaries (-truth +cluster):\n%s", diff)
	}
}

func TestSeedTwice(t *testing.T) {
	_, err := scenario.Seed(context.Background(), cp.Admin, nil, nil)
	if !errors.Is(err, scenario.ErrAlreadySeeded) {
		t.Errorf("second Seed: err = %v, want ErrAlreadySeeded", err)
	}
}

// TestOwnerChain checks the ReplicaSets derived for the stuck rollout: the
// old one serves three ready pods, the new one owns the crash-looping pod.
func TestOwnerChain(t *testing.T) {
	ctx := context.Background()
	cs := admin(t)
	d, err := cs.AppsV1().Deployments("shop").Get(ctx, "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rss, err := cs.AppsV1().ReplicaSets("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=checkout"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	uids := map[string]string{}
	for _, rs := range rss.Items {
		if len(rs.OwnerReferences) != 1 || rs.OwnerReferences[0].UID != d.UID {
			t.Errorf("ReplicaSet %s owners = %+v, want Deployment %s", rs.Name, rs.OwnerReferences, d.UID)
		}
		uids[string(rs.UID)] = rs.Name
		got = append(got, fmt.Sprintf("%s replicas=%d ready=%d image=%s", rs.Name, *rs.Spec.Replicas, rs.Status.ReadyReplicas, rs.Spec.Template.Spec.Containers[0].Image))
	}
	want := []string{
		"checkout-6f8d9c7b5 replicas=3 ready=3 image=registry.example.com/shop/checkout:2.3.0",
		"checkout-7c9d8f6b5 replicas=1 ready=0 image=registry.example.com/shop/checkout:2.4.0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReplicaSets (-want +got):\n%s", diff)
	}
	p, err := cs.CoreV1().Pods("shop").Get(ctx, "checkout-7c9d8f6b5-k2x7p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.OwnerReferences) != 1 || uids[string(p.OwnerReferences[0].UID)] != "checkout-7c9d8f6b5" {
		t.Errorf("pod owners = %+v, want ReplicaSet checkout-7c9d8f6b5", p.OwnerReferences)
	}
}

// TestLiveWorkloads: the live part of the scenario runs on the simulated
// nodes, made and moved by the cluster.
func TestLiveWorkloads(t *testing.T) {
	ctx := context.Background()
	cs := admin(t)
	lv := truth.Live
	if lv == nil {
		t.Fatal("no live workloads seeded")
	}
	d, err := cs.AppsV1().Deployments(lv.Namespace).Get(ctx, lv.Healthy.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.AvailableReplicas != *d.Spec.Replicas {
		t.Errorf("%s: %d of %d available", d.Name, d.Status.AvailableReplicas, *d.Spec.Replicas)
	}
	broken, err := cs.AppsV1().Deployments(lv.Namespace).Get(ctx, lv.Broken.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if broken.Status.AvailableReplicas != 0 {
		t.Errorf("%s: %d available, want none", broken.Name, broken.Status.AvailableReplicas)
	}
	for _, c := range broken.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status != corev1.ConditionFalse {
			t.Errorf("%s: Available=%s, want False", broken.Name, c.Status)
		}
	}
	pods, err := cs.CoreV1().Pods(lv.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != lv.Pods {
		t.Errorf("%d live pods, want %d", len(pods.Items), lv.Pods)
	}
	for _, p := range pods.Items {
		node, err := cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s: node %q: %v", p.Name, p.Spec.NodeName, err)
		}
		if _, ok := node.Annotations["kwok.x-k8s.io/node"]; !ok {
			t.Errorf("pod %s runs on %s, not on a simulated node", p.Name, node.Name)
		}
	}
	if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(lv.Namespace).Get(ctx, lv.HPA.Name, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}
