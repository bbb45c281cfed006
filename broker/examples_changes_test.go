package broker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/bridge/policy"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// exampleFor returns an example aimed at Deployment web of namespace ns
// instead of live/storefront.
func exampleFor(t *testing.T, name, ns string) string {
	code := readExample(t, name)
	code = strings.Replace(code, "const NAMESPACE = 'live'", "const NAMESPACE = '"+ns+"'", 1)
	return strings.Replace(code, "const DEPLOYMENT = 'storefront'", "const DEPLOYMENT = 'web'", 1)
}

// TestExampleRolloutAndVerify: planned, the example says nothing changed;
// approved, it patches the image, waits for the living cluster to roll
// it out and says so in one line.
func TestExampleRolloutAndVerify(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	code := exampleFor(t, "rollout-and-verify.ts", ns)
	text, isErr, sc := execute(t, cs, map[string]any{"code": code})
	if isErr || !strings.HasPrefix(text, "planned: web app → registry.example.com/live/storefront:1.5.0 (not applied yet)") {
		t.Fatalf("planned run:\n%s", text)
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc), "timeout": 90})
	if isErr || !strings.HasPrefix(text, "rolled out: web runs registry.example.com/live/storefront:1.5.0 on 1/1 replicas after ") {
		t.Fatalf("approved run:\n%s", text)
	}
	if img := kubectl(t, "-n", ns, "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); img != "registry.example.com/live/storefront:1.5.0" {
		t.Errorf("kubectl: image %s", img)
	}
}

// TestExampleScaleWithPlan: the plan shows 1 → 5, the approval scales.
func TestExampleScaleWithPlan(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	code := exampleFor(t, "scale-with-plan.ts", ns)
	text, _, sc := execute(t, cs, map[string]any{"code": code})
	if !strings.Contains(text, "web: 5 replicas requested") || !strings.Contains(text, "spec.replicas: 1 → 5") || replicas(t, ns) != "1" {
		t.Fatalf("planned run:\n%s", text)
	}
	text, _, _ = execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc)})
	if !strings.Contains(text, "1 of 1 changes applied") || replicas(t, ns) != "5" {
		t.Errorf("approved run:\n%s\nkubectl: %s replicas", text, replicas(t, ns))
	}
}

// TestExampleSecretAudit: the example names the workload whose Secret is
// missing, not the one whose Secret exists, and reveals no value.
func TestExampleSecretAudit(t *testing.T) {
	ns := cp.Namespace(t)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const canary = "KUBECODE-CANARY-secret-audit"
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "present"}, StringData: map[string]string{"password": canary}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deploy := func(name string, c corev1.Container) {
		labels := map[string]string{"app": name}
		one := int32(1)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}}}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deploy("api", corev1.Container{Name: "app", Image: "registry.example/api:1", Env: []corev1.EnvVar{{Name: "DB_PASSWORD",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "password"}}}}})
	deploy("ok", corev1.Container{Name: "app", Image: "registry.example/ok:1", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "present"}}}}})

	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	mcs := connect(t, b)
	text, isErr, _ := execute(t, mcs, map[string]any{"code": readExample(t, "secret-audit.ts")})
	if isErr {
		t.Fatal(text)
	}
	var got []map[string]string
	execJSON(t, mcs, readExample(t, "secret-audit.ts"), &got)
	var mine []map[string]string
	for _, r := range got {
		if r["namespace"] == ns {
			mine = append(mine, r)
		}
	}
	want := []map[string]string{{"namespace": ns, "kind": "Deployment", "name": "api", "secret": "db-creds", "via": "env app.DB_PASSWORD"}}
	if d := cmp.Diff(want, mine); d != "" {
		t.Errorf("missing secrets in %s (-want +got):\n%s", ns, d)
	}
	for _, c := range append([]string{canary}, truth.Canaries...) {
		if strings.Contains(text, c) {
			t.Errorf("the answer reveals a secret value")
		}
	}
}
