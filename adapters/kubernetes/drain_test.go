package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubecode/kubecode/catalog"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8s "k8s.io/client-go/kubernetes"
)

// waitPods waits until n pods of app run and are ready in ns.
func waitPods(t *testing.T, cs k8s.Interface, ns, selector string, n int) []corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		var ready []corev1.Pod
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready = append(ready, p)
				}
			}
		}
		if len(ready) == n {
			return ready
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pods of %s ready, want %d", len(ready), selector, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestEvictHonoursBudgets: pods.evict goes through the Eviction API: a
// PodDisruptionBudget that allows no disruption refuses it with what to
// do; one that allows it lets the Deployment make a new pod.
func TestEvictHonoursBudgets(t *testing.T) {
	a := newAdapter(t, nil)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	two := int32(2)
	labels := map[string]string{"app": "web"}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &two,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	minAvailable := intstr.FromInt32(2)
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, cs, ns, "app=web", 2)
	args := json.RawMessage(fmt.Sprintf(`{"namespace":%q,"name":%q}`, ns, pods[0].Name))
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The disruption controller computes the budget's status first.
		_, _, err := a.Preview(ctx, "kubernetes.pods.evict", args)
		if err != nil && strings.Contains(err.Error(), "cannot be evicted now") && strings.Contains(err.Error(), "scale the workload up first") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a budget of minAvailable 2 over 2 pods: preview %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if _, err := a.Call(ctx, "kubernetes.pods.evict", args); err == nil || !strings.Contains(err.Error(), "cannot be evicted now") {
		t.Errorf("an eviction the budget refuses: %v", err)
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb.Spec.MinAvailable = &one
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var c interface{ Object() string }
	for {
		ch, _, err := a.Preview(ctx, "kubernetes.pods.evict", args)
		if err == nil {
			if ch.Action != "evict" || !strings.Contains(ch.Impact, "ReplicaSet "+ns+"/web-") || ch.Pods.Stopped != 1 {
				t.Errorf("the plan of an eviction: %+v", ch)
			}
			c = ch
			break
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("a budget of minAvailable 1 over 2 pods: preview %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if c.Object() != "Pod "+ns+"/"+pods[0].Name {
		t.Errorf("evicts %s", c.Object())
	}
	var out map[string]string
	call(t, a, "kubernetes.pods.evict", string(args), &out)
	if !strings.HasPrefix(out["replacedBy"], "ReplicaSet "+ns+"/web-") {
		t.Errorf("evict: %v", out)
	}
	after := waitPods(t, cs, ns, "app=web", 2)
	for _, p := range after {
		if p.Name == pods[0].Name {
			t.Errorf("the evicted pod %s is still there", p.Name)
		}
	}
}

// TestDrain: nodes.drain cordons the node and evicts its pods as kubectl
// drain does; a pod no controller owns is refused unless forced; the plan
// is critical, with what to do instead.
func TestDrain(t *testing.T) {
	a := newAdapter(t, nil)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node := simulatedNode(t, cs, "kwok-drain-")
	ns := cp.Namespace(t)
	one := int32(1)
	labels := map[string]string{"app": "web"}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Labels: map[string]string{"app": "bare"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "shell", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Job's pod that has run to its end: evicted, it is only removed.
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once"}, Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "once"}}, Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "run", Image: "busybox:1.36", Command: []string{"sh", "-c", "true"}}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := waitPods(t, cs, ns, "app=web", 1)
	waitPods(t, cs, ns, "app=bare", 1)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=once"})
		if err == nil && len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Job's pod did not finish: %v", pods)
		}
	}

	args := json.RawMessage(`{"name":"` + node + `","timeout":60}`)
	if _, _, err := a.Preview(ctx, "kubernetes.nodes.drain", args); err == nil || !strings.Contains(err.Error(), ns+"/bare has no controller: evicted, it is gone for good (force: true evicts it anyway)") {
		t.Errorf("a drain of a node with a bare pod: %v", err)
	}
	forced := json.RawMessage(`{"name":"` + node + `","timeout":60,"force":true}`)
	c, _, err := a.Preview(ctx, "kubernetes.nodes.drain", forced)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Critical, "hand it to a person (kubectl drain "+node+" --ignore-daemonsets)") || c.Pods.Stopped != 2 ||
		c.Diff[0] != "cordons the node: spec.unschedulable: false → true" || !strings.Contains(c.Diff[1], "evicts 3 pods: ") ||
		!strings.Contains(c.Diff[1], ns+"/bare (no controller owns it: gone for good)") || !strings.Contains(c.Diff[1], " makes a new one)") ||
		!strings.Contains(c.Diff[1], "/once-") || !strings.Contains(c.Diff[1], " (finished: it is only removed, nothing runs again)") ||
		c.Impact != "stops 2 pods on node "+node+" and removes 1 finished pod" {
		t.Errorf("the drain's plan (a Job's finished pod makes no new one): %+v", c)
	}
	var res struct {
		Cordoned  bool     `json:"cordoned"`
		Evicted   []string `json:"evicted"`
		Remaining []string `json:"remaining"`
		Complete  bool     `json:"complete"`
	}
	call(t, a, "kubernetes.nodes.drain", string(forced), &res)
	if !res.Cordoned || !res.Complete || len(res.Evicted) != 3 || len(res.Remaining) != 0 {
		t.Errorf("drain: %+v", res)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Errorf("the node is not cordoned: %v", err)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, web[0].Name, metav1.GetOptions{}); err == nil {
		t.Errorf("pod %s is still there", web[0].Name)
	}
}

// TestCommandsAndEvictionsAreNotReverted: a revert says an exec's effects
// and an eviction are not undone, rather than recreating a pod as a bare
// copy of what was evicted.
func TestCommandsAndEvictionsAreNotReverted(t *testing.T) {
	a := newAdapter(t, nil)
	for op, want := range map[string]string{
		"kubernetes.pods.exec":  "a command run in a container is not undone",
		"kubernetes.pods.evict": "an eviction is not undone",
	} {
		snap := &catalog.Snapshot{Op: op, Kind: "Pod", Namespace: "default", Name: "x", Exists: true}
		if _, _, err := a.Restore(context.Background(), snap, &catalog.Snapshot{Op: op, Kind: "Pod", Namespace: "default", Name: "x"}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", op, err, want)
		}
	}
}

// TestCordon: nodes.cordon and nodes.uncordon set spec.unschedulable as
// kubectl cordon and uncordon do, each a change planned with its dry run;
// a cordon of a cordoned node changes nothing.
func TestCordon(t *testing.T) {
	a := newAdapter(t, nil)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node := simulatedNode(t, cs, "kwok-cordon-")
	args := json.RawMessage(`{"name":"` + node + `"}`)
	unschedulable := func() bool {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Spec.Unschedulable
	}
	c, _, err := a.Preview(ctx, "kubernetes.nodes.cordon", args)
	if err != nil || c.Action != "cordon" || c.Kind != "Node" || c.Unchanged || !strings.Contains(strings.Join(c.Diff, "; "), "spec.unschedulable: (none) → true") {
		t.Fatalf("the cordon's plan: %+v, %v", c, err)
	}
	if unschedulable() {
		t.Fatal("the dry run cordoned the node")
	}
	call(t, a, "kubernetes.nodes.cordon", string(args), new(map[string]any))
	if !unschedulable() {
		t.Fatal("the node is not cordoned")
	}
	// The simulated cluster taints a cordoned node a moment later (as a
	// real one's node lifecycle controller does): a dry run in between
	// sees the taint come. Once it has, a cordon changes nothing.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, _, err := a.Preview(ctx, "kubernetes.nodes.cordon", args)
		if err == nil && c.Unchanged {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a cordon of a cordoned node: %+v, %v", c, err)
		}
	}
	call(t, a, "kubernetes.nodes.uncordon", string(args), new(map[string]any))
	if unschedulable() {
		t.Error("the node is still cordoned")
	}
}

// simulatedNode adds a node KWOK runs, named prefix and the test's name,
// removed when the test ends.
func simulatedNode(t *testing.T, cs k8s.Interface, prefix string) string {
	t.Helper()
	node := prefix + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}, Labels: map[string]string{"kubernetes.io/hostname": node}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	return node
}
