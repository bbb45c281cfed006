package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubecode/kubecode/catalog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// deploymentManifest is a Deployment of one container "app".
func deploymentManifest(name, image string, replicas int) string {
	return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `"},"spec":{"replicas":` + string(rune('0'+replicas)) +
		`,"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},"spec":{"containers":[{"name":"app","image":"` + image + `"}]}}}}`
}

// waitRollout polls rollout.status until done, as an agent's script would.
func waitRollout(t *testing.T, a *Adapter, ns, name string) rolloutStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var st rolloutStatus
		call(t, a, "kubernetes.deployments.rollout.status", `{"namespace":"`+ns+`","name":"`+name+`"}`, &st)
		if st.Done || st.Failed || time.Now().After(deadline) {
			return st
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestChangesOnTheLivingCluster drives every mutating operation against
// the local cluster, whose controllers roll the changes out: previews are
// dry runs (nothing persists) and describe the change; real calls land.
func TestChangesOnTheLivingCluster(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	replicas := func() int32 {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	preview := func(t *testing.T, name, args string) *catalog.Change {
		t.Helper()
		c, out, err := a.Preview(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("Preview %s: %v", name, err)
		}
		if !json.Valid(out) {
			t.Fatalf("Preview %s: result %s", name, out)
		}
		return c
	}
	target := `"namespace":"` + ns + `","name":"web"`

	t.Run("create", func(t *testing.T) {
		args := `{"namespace":"` + ns + `","object":` + deploymentManifest("web", "registry.example/web:1.0", 1) + `}`
		c := preview(t, "kubernetes.deployments.create", args)
		if d := cmp.Diff(&catalog.Change{Action: "create", Kind: "Deployment", Namespace: ns, Name: "web", Diff: []string{"created", "replicas 1", "containers: app (registry.example/web:1.0) no resource requests or limits",
			`pod security: baseline; not restricted: allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`}}, c, cmpopts.IgnoreFields(catalog.Change{}, "Fields")); d != "" {
			t.Errorf("change (-want +got):\n%s", d)
		}
		// Every field it is made with, whole, defaults included.
		want := map[string]string{"spec.replicas": "1", "spec.template.spec.containers[app].image": `"registry.example/web:1.0"`, "spec.strategy.type": `"RollingUpdate"`}
		for _, f := range c.Fields {
			if v, ok := want[f.Path]; ok && f.After == v && f.Before == "(none)" {
				delete(want, f.Path)
			}
		}
		if len(want) > 0 {
			t.Errorf("the create's fields lack %v: %+v", want, c.Fields)
		}
		if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err == nil {
			t.Fatal("the dry run created the deployment")
		}
		var out map[string]any
		call(t, a, "kubernetes.deployments.create", args, &out)
		if st := waitRollout(t, a, ns, "web"); !st.Done {
			t.Fatalf("rollout: %+v", st)
		}
	})
	t.Run("create again", func(t *testing.T) {
		_, _, err := a.Preview(ctx, "kubernetes.deployments.create", json.RawMessage(`{"namespace":"`+ns+`","object":`+deploymentManifest("web", "x", 1)+`}`))
		var ae *catalog.CallError
		if !errors.As(err, &ae) || ae.Status != 409 {
			t.Errorf("got %v, want 409 AlreadyExists", err)
		}
	})
	t.Run("scale", func(t *testing.T) {
		c := preview(t, "kubernetes.deployments.scale", `{`+target+`,"replicas":3}`)
		if d := cmp.Diff(&catalog.Change{Action: "scale", Kind: "Deployment", Namespace: ns, Name: "web", Existed: true,
			Paths: []string{"spec.replicas"}, Edits: []string{"spec.replicas"}, Impact: "starts 2 more pods of " + ns + "/web", Pods: catalog.Pods{Started: 2}, Diff: []string{"spec.replicas: 1 → 3"},
			Fields: []catalog.Field{{Path: "spec.replicas", Before: "1", After: "3"}}}, c); d != "" {
			t.Errorf("change (-want +got):\n%s", d)
		}
		if n := replicas(); n != 1 {
			t.Fatalf("the dry run scaled to %d", n)
		}
		var out map[string]any
		call(t, a, "kubernetes.deployments.scale", `{`+target+`,"replicas":3}`, &out)
		if n := replicas(); n != 3 {
			t.Fatalf("replicas %d after scale", n)
		}
		if st := waitRollout(t, a, ns, "web"); !st.Done || st.Available != 3 {
			t.Fatalf("rollout after scale: %+v", st)
		}
	})
	t.Run("patch image", func(t *testing.T) {
		args := `{` + target + `,"patch":{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/web:2.0"}]}}}}}`
		c := preview(t, "kubernetes.deployments.patch", args)
		if d := cmp.Diff([]string{"spec.template.spec.containers[app].image"}, c.Paths); d != "" {
			t.Errorf("paths (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{`spec.template.spec.containers[app].image: "registry.example/web:1.0" → "registry.example/web:2.0"`}, c.Diff); d != "" {
			t.Errorf("diff (-want +got):\n%s", d)
		}
		var out map[string]any
		call(t, a, "kubernetes.deployments.patch", args, &out)
		if st := waitRollout(t, a, ns, "web"); !st.Done {
			t.Fatalf("rollout after the image patch: %+v", st)
		}
	})
	t.Run("history and undo", func(t *testing.T) {
		var revs []revision
		call(t, a, "kubernetes.deployments.rollout.history", `{`+target+`}`, &revs)
		if len(revs) != 2 || revs[1].Images[0] != "registry.example/web:2.0" || !revs[1].Current || revs[0].Current {
			t.Fatalf("history %+v", revs)
		}
		c := preview(t, "kubernetes.deployments.rollout.undo", `{`+target+`}`)
		if d := cmp.Diff([]string{`spec.template.spec.containers[app].image: "registry.example/web:2.0" → "registry.example/web:1.0"`}, c.Diff); d != "" {
			t.Errorf("undo diff (-want +got):\n%s", d)
		}
		var out map[string]any
		call(t, a, "kubernetes.deployments.rollout.undo", `{`+target+`}`, &out)
		if st := waitRollout(t, a, ns, "web"); !st.Done {
			t.Fatalf("rollout after undo: %+v", st)
		}
		call(t, a, "kubernetes.deployments.rollout.history", `{`+target+`}`, &revs)
		if last := revs[len(revs)-1]; last.Revision != 3 || last.Images[0] != "registry.example/web:1.0" || !last.Current {
			t.Errorf("history after undo %+v", revs)
		}
	})
	t.Run("restart", func(t *testing.T) {
		c := preview(t, "kubernetes.deployments.rollout.restart", `{`+target+`}`)
		if len(c.Diff) != 1 || !strings.HasPrefix(c.Diff[0], "spec.template.metadata.annotations[kubectl.kubernetes.io/restartedAt]: (none) → ") {
			t.Errorf("restart diff %q", c.Diff)
		}
		var out map[string]any
		call(t, a, "kubernetes.deployments.rollout.restart", `{`+target+`}`, &out)
		if st := waitRollout(t, a, ns, "web"); !st.Done {
			t.Fatalf("rollout after restart: %+v", st)
		}
	})
	t.Run("apply", func(t *testing.T) {
		narrow := `{"namespace":"` + ns + `","manifest":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"tier":"web"}}}}`
		c := preview(t, "kubernetes.deployments.apply", narrow)
		if d := cmp.Diff([]string{"metadata.labels.tier"}, c.Paths); d != "" || !c.Existed {
			t.Errorf("narrow apply paths (-want +got):\n%s (existed %v)", d, c.Existed)
		}
		// A field another manager set conflicts (spec.replicas belongs to
		// the scale subresource's manager), and the error names it.
		if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"payments"}}}`), metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
			t.Fatal(err)
		}
		_, _, err := a.Preview(ctx, "kubernetes.deployments.apply", json.RawMessage(`{"namespace":"`+ns+`","manifest":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"team":"shop"}},"spec":{"replicas":2}}}`))
		var ae *catalog.CallError
		if !errors.As(err, &ae) || ae.Status != 409 || !strings.Contains(ae.Message, `"someone-else"`) || !strings.Contains(ae.Message, `"kubecode" with subresource "scale"`) || !strings.Contains(ae.Message, "force: true") {
			t.Errorf("apply over another manager's field: %v", err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct{ op, args, want string }{
			{"kubernetes.deployments.create", `{"object":{"kind":"Service","metadata":{"name":"x"}}}`, "this operation creates Deployment objects"},
			{"kubernetes.deployments.patch", `{` + target + `,"patch":[1]}`, "a strategic patch is an object"},
			{"kubernetes.deployments.patch", `{` + target + `,"patch":{"a":1},"type":"yaml"}`, "use strategic"},
			{"kubernetes.deployments.delete", `{` + target + `,"propagationPolicy":"Now"}`, "use Foreground, Background or Orphan"},
			{"kubernetes.deployments.rollout.undo", `{` + target + `,"toRevision":99}`, "has no revision 99"},
		} {
			_, _, err := a.Preview(ctx, tc.op, json.RawMessage(tc.args))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %s: %v, want %q", tc.op, tc.args, err, tc.want)
			}
		}
	})
	t.Run("secret", func(t *testing.T) {
		args := `{"namespace":"` + ns + `","object":{"metadata":{"name":"db"},"stringData":{"password":"canary-value-1"}}}`
		var out map[string]any
		call(t, a, "kubernetes.secrets.create", args, &out)
		c := preview(t, "kubernetes.secrets.patch", `{"namespace":"`+ns+`","name":"db","patch":{"stringData":{"password":"canary-value-2"}}}`)
		if !c.Sensitive || strings.Contains(strings.Join(c.Diff, " "), "canary") || strings.Contains(strings.Join(c.Diff, " "), "Y2FuYXJ5") {
			t.Errorf("secret change %+v", c)
		}
	})
	t.Run("delete", func(t *testing.T) {
		c := preview(t, "kubernetes.deployments.delete", `{`+target+`}`)
		// The dependents are counted as the cluster holds them then (a
		// rollout may still be replacing pods): TestPlansAReviewerReads
		// checks the counts where the cluster is settled.
		if len(c.Diff) == 2 && strings.HasPrefix(c.Diff[1], "takes with it (owner references): ") {
			c.Diff = c.Diff[:1]
		}
		if d := cmp.Diff(&catalog.Change{Action: "delete", Kind: "Deployment", Namespace: ns, Name: "web", Existed: true, Diff: []string{"deleted"}, Impact: "stops all 3 pods of " + ns + "/web", Pods: catalog.Pods{Stopped: 3}}, c); d != "" {
			t.Errorf("change (-want +got):\n%s", d)
		}
		if replicas() == 0 {
			t.Fatal("unreachable")
		}
		var out map[string]any
		call(t, a, "kubernetes.deployments.delete", `{`+target+`}`, &out)
		if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err == nil {
			d, _ := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if d.DeletionTimestamp == nil {
				t.Error("the deployment is still there")
			}
		}
		c = preview(t, "kubernetes.namespaces.delete", `{"name":"`+ns+`"}`)
		if !c.Protected {
			t.Errorf("a namespace delete is not protected: %+v", c)
		}
	})
}

// TestRolloutEdges: paused deployments are neither restarted nor rolled
// back, and OnDelete statefulsets have no rollout status, as in kubectl;
// a partitioned statefulset is done once the pods above the partition
// are updated.
func TestRolloutEdges(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	ctx := context.Background()
	var out map[string]any
	paused := strings.Replace(deploymentManifest("held", "registry.example/held:1", 1), `"spec":{`, `"spec":{"paused":true,`, 1)
	call(t, a, "kubernetes.deployments.create", `{"namespace":"`+ns+`","object":`+paused+`}`, &out)
	for _, op := range []string{"kubernetes.deployments.rollout.restart", "kubernetes.deployments.rollout.undo"} {
		if _, _, err := a.Preview(ctx, op, json.RawMessage(`{"namespace":"`+ns+`","name":"held"}`)); err == nil || !strings.Contains(err.Error(), "is paused: resume it") {
			t.Errorf("%s of a paused deployment: %v", op, err)
		}
		if _, err := a.Call(ctx, op, json.RawMessage(`{"namespace":"`+ns+`","name":"held"}`)); err == nil || !strings.Contains(err.Error(), "is paused") {
			t.Errorf("%s (real) of a paused deployment: %v", op, err)
		}
	}
	sts := func(name, strategy string) string {
		return `{"namespace":"` + ns + `","object":{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"` + name + `"},"spec":{"replicas":1,"serviceName":"` + name + `",` + strategy +
			`"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},"spec":{"containers":[{"name":"db","image":"registry.example/db:1"}]}}}}}`
	}
	call(t, a, "kubernetes.statefulsets.create", sts("ondelete", `"updateStrategy":{"type":"OnDelete"},`), &out)
	var st rolloutStatus
	call(t, a, "kubernetes.statefulsets.rollout.status", `{"namespace":"`+ns+`","name":"ondelete"}`, &st)
	if !st.Failed || !strings.Contains(st.Message, "only available for the RollingUpdate strategy") {
		t.Errorf("OnDelete statefulset: %+v", st)
	}
	call(t, a, "kubernetes.statefulsets.create", sts("parted", `"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}},`), &out)
	deadline := time.Now().Add(60 * time.Second)
	for {
		call(t, a, "kubernetes.statefulsets.rollout.status", `{"namespace":"`+ns+`","name":"parted"}`, &st)
		if st.Done || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !st.Done || !strings.Contains(st.Message, "partitioned roll out complete") {
		t.Errorf("partitioned statefulset: %+v", st)
	}
}

// TestRollbackImpactCountsRealPods: a rollout stuck on a pod that cannot
// be scheduled, its two old pods still running: rolling back replaces
// the stuck pod only, and the impact says the two stay (it said "rolls 2
// pods"). A Deployment that runs no pod rolls none.
func TestRollbackImpactCountsRealPods(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	ctx := context.Background()
	var out map[string]any
	call(t, a, "kubernetes.deployments.create", `{"namespace":"`+ns+`","object":`+deploymentManifest("web", "registry.example/web:1.0", 2)+`}`, &out)
	if st := waitRollout(t, a, ns, "web"); !st.Done {
		t.Fatalf("rollout: %+v", st)
	}
	// The new template asks for a node no one has: its pod stays pending,
	// and with no unavailability allowed the old pods keep running.
	call(t, a, "kubernetes.deployments.patch", `{"namespace":"`+ns+`","name":"web","patch":{"spec":{"strategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":1}},
		"template":{"spec":{"nodeSelector":{"no-such":"node"},"containers":[{"name":"app","image":"registry.example/web:1.1"}]}}}}}`, &out)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err == nil && d.Status.Replicas == 3 && d.Status.ReadyReplicas == 2 && d.Status.ObservedGeneration == d.Generation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stuck rollout: %+v %v", d.Status, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c, _, err := a.Preview(ctx, "kubernetes.deployments.rollout.undo", json.RawMessage(`{"namespace":"`+ns+`","name":"web"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "rolls 1 pod of " + ns + "/web (2 already run its new template and stay)"; c.Impact != want || c.Pods != (catalog.Pods{Rolled: 1}) {
		t.Errorf("rollback impact = %q %+v, want %q", c.Impact, c.Pods, want)
	}
	// A Deployment scaled to nothing has no pod to roll.
	call(t, a, "kubernetes.deployments.create", `{"namespace":"`+ns+`","object":`+deploymentManifest("idle", "registry.example/web:1.0", 0)+`}`, &out)
	deadline = time.Now().Add(30 * time.Second)
	for {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "idle", metav1.GetOptions{})
		if err == nil && d.Status.ObservedGeneration == d.Generation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, _, err = a.Preview(ctx, "kubernetes.deployments.patch", json.RawMessage(`{"namespace":"`+ns+`","name":"idle","patch":{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/web:1.1"}]}}}}}`))
	if err != nil || c.Impact != "" {
		t.Errorf("a new template of a Deployment with no pod: impact %q, %v", c.Impact, err)
	}
}

// TestPodsRun: pods.run makes the Pod kubectl run makes (one container
// named after it, labelled run=NAME), planned as a create whose plan says
// what it makes; bad input gets a clear error.
func TestPodsRun(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	ctx := context.Background()
	args := `{"namespace":"` + ns + `","name":"debug","image":"busybox:1.36","command":["sleep","3600"],"env":{"MODE":"debug"},"restartPolicy":"Never"}`
	c, _, err := a.Preview(ctx, "kubernetes.pods.run", json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	if c.Action != "create" || c.Kind != "Pod" || c.Name != "debug" || len(c.Diff) < 2 || c.Diff[1] != "containers: debug (busybox:1.36) no resource requests or limits" {
		t.Errorf("the plan of pods.run: %+v", c)
	}
	var out map[string]any
	call(t, a, "kubernetes.pods.run", args, &out)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, "debug", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{pod.Labels["run"], pod.Spec.Containers[0].Name, pod.Spec.Containers[0].Image, strings.Join(pod.Spec.Containers[0].Command, " "), pod.Spec.Containers[0].Env[0].Name + "=" + pod.Spec.Containers[0].Env[0].Value, string(pod.Spec.RestartPolicy)}
	if d := cmp.Diff([]string{"debug", "debug", "busybox:1.36", "sleep 3600", "MODE=debug", "Never"}, got); d != "" {
		t.Errorf("the pod (-want +got):\n%s", d)
	}
	for _, tc := range []struct{ args, want string }{
		{`{"namespace":"` + ns + `","name":"x"}`, "pods.run needs name and image"},
		{`{"namespace":"` + ns + `","name":"x","image":"busybox","restartPolicy":"Sometimes"}`, "use Always, OnFailure or Never"},
	} {
		if _, _, err := a.Preview(ctx, "kubernetes.pods.run", json.RawMessage(tc.args)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
	}
}
