package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubecode/kubecode/internal/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// TestPlansAReviewerReads: what a person approving a change reads of it,
// on the living cluster: a privileged create says what the pod may do
// and which Secrets it reads (never their values), a delete what it takes
// with it or leaves behind, a scale to zero "2 → 0", a patch of kubectl's
// last-applied record its size. Golden: testdata/plans.txt.
func TestPlansAReviewerReads(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out strings.Builder
	preview := func(title, name, args string) {
		t.Helper()
		c, _, err := a.Preview(ctx, name, json.RawMessage(strings.ReplaceAll(args, "NS", ns)))
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		fmt.Fprintf(&out, "== %s: %s %s\n", title, c.Action, strings.ReplaceAll(c.Object(), ns, "NS"))
		for _, l := range c.Diff {
			fmt.Fprintf(&out, "   %s\n", strings.ReplaceAll(l, ns, "NS"))
		}
	}
	var v map[string]any
	call(t, a, "kubernetes.secrets.create", `{"namespace":"`+ns+`","object":{"metadata":{"name":"db"},"stringData":{"password":"canary-pw-1","user":"app"}}}`, &v)
	preview("a privileged pod with the node's root and a Secret in its environment", "kubernetes.pods.create", `{"namespace":"NS","object":{
		"metadata":{"name":"x"},
		"spec":{"hostNetwork":true,"hostPID":true,"containers":[{"name":"shell","image":"busybox:1.36","command":["sh"],
			"securityContext":{"privileged":true,"capabilities":{"add":["NET_ADMIN","SYS_ADMIN"]}},
			"ports":[{"containerPort":8080}],
			"env":[{"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"name":"db","key":"password"}}}],
			"volumeMounts":[{"name":"root","mountPath":"/host"},{"name":"creds","mountPath":"/creds"}]}],
		"volumes":[{"name":"root","hostPath":{"path":"/"}},{"name":"creds","secret":{"secretName":"db"}}]}}}`)
	preview("a Secret", "kubernetes.secrets.create", `{"namespace":"NS","object":{"metadata":{"name":"api"},"stringData":{"token":"canary-pw-2"}}}`)
	call(t, a, "kubernetes.deployments.create", `{"namespace":"`+ns+`","object":`+deploymentManifest("web", "registry.example/web:1.0", 2)+`}`, &v)
	call(t, a, "kubernetes.jobs.create", `{"namespace":"`+ns+`","object":{"metadata":{"name":"once"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"run","image":"busybox:1.36"}]}}}}}`, &v)
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods of web and once: %v %v", pods, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	preview("scale to zero", "kubernetes.deployments.scale", `{"namespace":"NS","name":"web","replicas":0}`)
	preview("a Deployment deleted", "kubernetes.deployments.delete", `{"namespace":"NS","name":"web"}`)
	preview("a Deployment deleted, its dependents orphaned", "kubernetes.deployments.delete", `{"namespace":"NS","name":"web","propagationPolicy":"Orphan"}`)
	preview("a Job deleted (batch/v1 orphans by default)", "kubernetes.jobs.delete", `{"namespace":"NS","name":"once"}`)
	preview("a Job deleted in the background", "kubernetes.jobs.delete", `{"namespace":"NS","name":"once","propagationPolicy":"Background"}`)
	preview("kubectl's last-applied record patched", "kubernetes.deployments.patch", `{"namespace":"NS","name":"web","patch":{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"spec\":{\"replicas\":9}}"}}}}`)
	preview("a rollout paused", "kubernetes.deployments.patch", `{"namespace":"NS","name":"web","patch":{"spec":{"paused":true}}}`)
	if strings.Contains(out.String(), "canary") {
		t.Errorf("a Secret value in a plan:\n%s", out.String())
	}
	golden.Check(t, "plans.txt", []byte(out.String()))
}
