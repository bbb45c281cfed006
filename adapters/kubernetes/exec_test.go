package kubernetes

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8s "k8s.io/client-go/kubernetes"
)

// execFixture is a namespace with a web Service and a client pod that
// mounts a ConfigMap and a Secret and takes env from the Secret.
func execFixture(t *testing.T) string {
	t.Helper()
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site"}, Data: map[string]string{"app.conf": "listen 8080\n", "big": strings.Repeat("0123456789abcdef", 40<<10)}}, metav1.CreateOptions{}))
	must(cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{
		"password": "hunter2-but-longer",
		"pin":      "42",
		"envfile":  "DB_PASS=abc123xyz\nMODE=prod\n",
		"file":     "line-secret-value\n",
		"a":        "xxxxSECRETPART",
		"b":        "SECRETPARTyyyy",
		"key":      "-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf\n-----END KEY-----\n",
	}}, metav1.CreateOptions{}))
	one := int32(1)
	labels := map[string]string{"app": "web"}
	must(cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}, metav1.CreateOptions{}))
	must(cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}}}, metav1.CreateOptions{}))
	must(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "shell", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
			Env:          []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "site", MountPath: "/etc/site"}, {Name: "creds", MountPath: "/etc/creds"}}}},
		Volumes: []corev1.Volume{
			{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "site"}}}},
			{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		}}}, metav1.CreateOptions{}))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready := 0
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready == 2 {
			return ns
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client and web pods are not ready: %d of 2", ready)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPodsExec: pods.exec runs a command in a container and returns what
// it printed and its exit code, scrubbed of the values of the Secrets the
// pod uses, bounded, and ended at its timeout; hostile arguments get
// clear errors.
func TestPodsExec(t *testing.T) {
	a := newAdapter(t, nil)
	ns := execFixture(t)
	ctx := context.Background()
	hidden := func(text string) string {
		return strings.ReplaceAll(text, "Secret creds key", "Secret "+ns+"/creds key")
	}
	run := func(args string) (execResult, error) {
		out, err := a.Call(ctx, "kubernetes.pods.exec", json.RawMessage(`{"namespace":"`+ns+`","name":"client",`+args+`}`))
		var r execResult
		if err == nil {
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
		}
		return r, err
	}
	code := func(n int) *int { return &n }
	b64 := base64.StdEncoding.EncodeToString([]byte("hunter2-but-longer"))
	for _, tc := range []struct {
		name, args string
		want       execResult
	}{
		{"a mounted ConfigMap", `"command":["cat","/etc/site/app.conf"]`, execResult{Container: "shell", Stdout: "listen 8080\n", ExitCode: code(0)}},
		{"a Service by name", `"command":["sh","-c","wget -qO- http://web | grep -c 'Welcome to nginx'"]`, execResult{Container: "shell", Stdout: "2\n", ExitCode: code(0)}},
		{"an exit code", `"command":["sh","-c","echo out; echo err >&2; exit 4"]`, execResult{Container: "shell", Stdout: "out\n", Stderr: "err\n", ExitCode: code(4)}},
		{"stdin", `"command":["cat"],"stdin":"abc"`, execResult{Container: "shell", Stdout: "abc", ExitCode: code(0)}},
		{"a Secret printed by cat", `"command":["cat","/etc/creds/password"]`, execResult{Container: "shell", Stdout: "[hidden: Secret creds key password]", ExitCode: code(0), Hidden: 1}},
		// A value shorter than secrets.MinValue is not registered (it
		// would hide every such word); the container holds a Secret, so
		// the command is planned for a person (TestExecReadsNeverComputeOnSecrets).
		{"a Secret's value under six bytes", `"command":["sh","-c","cat /etc/creds/pin; echo; echo 1042"]`, execResult{Container: "shell", Stdout: "42\n1042\n", ExitCode: code(0)}},
		{"a Secret in base64", `"command":["sh","-c","echo ` + b64 + `"]`, execResult{Container: "shell", Stdout: "[hidden: Secret creds key password (base64)]\n", ExitCode: code(0), Hidden: 1}},
		{"a Secret in the environment", `"command":["printenv","PASSWORD"]`, execResult{Container: "shell", Stdout: "[hidden: Secret creds key password]\n", ExitCode: code(0), Hidden: 1}},
		{"a line of a key", `"command":["sh","-c","head -2 /etc/creds/key | tail -1"]`, execResult{Container: "shell", Stdout: "[hidden: Secret creds key key]\n", ExitCode: code(0), Hidden: 1}},
		{"a grep of an env file", `"command":["grep","PASS","/etc/creds/envfile"]`, execResult{Container: "shell", Stdout: "[hidden: Secret creds key envfile]\n", ExitCode: code(0), Hidden: 1}},
		{"base64 of the stored bytes", `"command":["sh","-c","echo bGluZS1zZWNyZXQtdmFsdWUK"]`, execResult{Container: "shell", Stdout: "[hidden: Secret creds key file (base64)]\n", ExitCode: code(0), Hidden: 1}},
		{"overlapping values", `"command":["sh","-c","echo xxxxSECRETPARTyyyy"]`, execResult{Container: "shell", Stdout: "[hidden: Secret creds key a]\n", ExitCode: code(0), Hidden: 1}},
		{"a token", `"command":["sh","-c","echo eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLWJ5dGVz"]`, execResult{Container: "shell", Stdout: "[hidden: a token]\n", ExitCode: code(0), Hidden: 1}},
		{"argv injection stays one argument", `"command":["cat","/etc/site/app.conf; cat /etc/creds/password"]`, execResult{Container: "shell", Stderr: "cat: can't open '/etc/site/app.conf; cat /etc/creds/password': No such file or directory\n", ExitCode: code(1)}},
		{"a command that never ends", `"command":["tail","-f","/etc/site/app.conf"],"timeout":1`, execResult{Container: "shell", TimedOut: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Stdout = hidden(tc.want.Stdout)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}

	t.Run("base64 at any offset", func(t *testing.T) {
		for _, prefix := range []string{"", "a", "ab", "abc"} {
			enc := base64.StdEncoding.EncodeToString([]byte(prefix + "hunter2-but-longer and more"))
			got, err := run(`"command":["echo","` + enc + `"]`)
			if err != nil {
				t.Fatal(err)
			}
			// What stays visible is at most a group on each side.
			rest := strings.ReplaceAll(got.Stdout, hidden("[hidden: Secret creds key password (base64)]"), "")
			if got.Hidden == 0 || len(strings.TrimSpace(rest)) > len(enc)-16 {
				t.Errorf("prefix %q: %q", prefix, got.Stdout)
			}
		}
	})

	t.Run("huge output is cut at 1 MiB", func(t *testing.T) {
		start := time.Now()
		// Two copies of a 640 KiB file: 1.25 MiB.
		got, err := run(`"command":["cat","/etc/site/big","/etc/site/big"]`)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Truncated || got.ExitCode != nil || len(got.Stdout) != maxExecOutput || time.Since(start) > 20*time.Second {
			t.Errorf("huge output: truncated %v, exit %v, %d bytes after %s", got.Truncated, got.ExitCode, len(got.Stdout), time.Since(start))
		}
	})

	for _, tc := range []struct{ args, want string }{
		{`"command":[]`, "pods.exec needs name and command"},
		{`"command":["cat","a\u0000b"]`, "command[1] holds a NUL byte"},
		{`"command":["cat"],"timeout":301`, "at most 300"},
		{`"command":["cat"],"container":"nope"`, `has no container "nope": it has shell`},
		{`"command":["bash"]`, `executable file not found`},
	} {
		if _, err := run(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
	}

	t.Run("the plan names pod, container, argv and the Secret it reads", func(t *testing.T) {
		c, _, err := a.Preview(ctx, "kubernetes.pods.exec", json.RawMessage(`{"namespace":"`+ns+`","name":"client","command":["cat","/etc/creds/password"]}`))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			`runs in container shell: ["cat","/etc/creds/password"]`,
			"for at most 30s; output bounded, known forms of Secret values hidden (as written, base64, hex, escaped): a command can transform them",
			"⚠ the command names /etc/creds, where volume creds (Secret values) is mounted",
		}
		if d := cmp.Diff(want, c.Diff); d != "" || c.Action != "exec" || c.Object() != "Pod "+ns+"/client" || c.SecretAccess != "container shell mounts Secret creds at /etc/creds" {
			t.Errorf("%s %s (-want +got):\n%s", c.Action, c.Object(), d)
		}
	})
}

// TestNodeDiagnostics: nodes.logs and nodes.stats answer through the node
// proxy; hostile paths are refused before any request; an identity without
// nodes/proxy is told what it lacks.
func TestNodeDiagnostics(t *testing.T) {
	a := newAdapter(t, nil)
	ctx := context.Background()
	node := cp.SimulatedNodes[0]
	var journal string
	call(t, a, "kubernetes.nodes.logs", `{"name":"`+node+`","tailLines":3}`, &journal)
	if lines := strings.Split(strings.TrimSpace(journal), "\n"); len(lines) != 3 || !strings.Contains(lines[0], node+" kubelet[") {
		t.Errorf("nodes.logs tailLines 3:\n%s", journal)
	}
	var listing string
	call(t, a, "kubernetes.nodes.logs", `{"name":"`+node+`","path":""}`, &listing)
	if !strings.Contains(listing, "kubelet.log") {
		t.Errorf("nodes.logs path \"\":\n%s", listing)
	}
	var stats struct {
		Node struct {
			NodeName string `json:"nodeName"`
		} `json:"node"`
		Pods []struct {
			PodRef struct{ Name string } `json:"podRef"`
		} `json:"pods"`
	}
	call(t, a, "kubernetes.nodes.stats", `{"name":"`+node+`"}`, &stats)
	if stats.Node.NodeName != node {
		t.Errorf("nodes.stats: %+v", stats)
	}
	for _, tc := range []struct{ args, want string }{
		{`{"name":"` + node + `","path":"../../exec/x/y/z"}`, "a relative path of plain names under /var/log"},
		{`{"name":"` + node + `","path":"a/./b"}`, "a relative path of plain names"},
		{`{"name":"` + node + `","query":"kubelet&x=1"}`, "a service's name"},
		{`{"name":"../nodes/x"}`, "is not a node's name"},
		{`{"name":"` + node + `","sinceTime":"yesterday"}`, "RFC 3339"},
	} {
		if _, err := a.Call(ctx, "kubernetes.nodes.logs", json.RawMessage(tc.args)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("nodes.logs %s: %v, want %q", tc.args, err, tc.want)
		}
	}
	viewer, err := New(cp.Viewer, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := viewer.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := viewer.Call(ctx, "kubernetes.nodes.stats", json.RawMessage(`{"name":"`+node+`"}`)); err == nil || !strings.Contains(err.Error(), "needs get on nodes/proxy, which this identity lacks") {
		t.Errorf("the viewer's nodes.stats: %v", err)
	}
}

// TestSecretAccess: what makes a command never an exec read, the
// review's ways around it included (a shared process namespace, the
// node's files, a path spelled another way, env by its path).
func TestSecretAccess(t *testing.T) {
	yes := true
	secretVol := corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}
	plain := corev1.Container{Name: "app"}
	holder := corev1.Container{Name: "vault", VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds"}}}
	for _, tc := range []struct {
		name string
		pod  corev1.PodSpec
		argv []string
		want string
	}{
		{"nothing", corev1.PodSpec{Containers: []corev1.Container{plain}}, []string{"cat", "/etc/app.conf"}, ""},
		{"another container's Secret", corev1.PodSpec{Containers: []corev1.Container{plain, holder}, Volumes: []corev1.Volume{secretVol}}, []string{"cat", "/etc/app.conf"}, ""},
		{"a shared process namespace", corev1.PodSpec{ShareProcessNamespace: &yes, Containers: []corev1.Container{plain, holder}, Volumes: []corev1.Volume{secretVol}}, []string{"cat", "/proc/7/root/etc/creds/pw"}, "container vault mounts Secret creds at /etc/creds"},
		{"the node's files", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "kubelet", MountPath: "/host"}}}}, Volumes: []corev1.Volume{{Name: "kubelet", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet"}}}}}, []string{"ls", "/host"}, "container app mounts the node's /var/lib/kubelet at /host"},
		{"a path spelled another way", corev1.PodSpec{Containers: []corev1.Container{plain}}, []string{"cat", "/var/run//secrets/kubernetes.io/serviceaccount/token"}, "the command names /var/run/secrets/kubernetes.io/serviceaccount/token, where Secrets and service account tokens are mounted"},
		{"env by its path", corev1.PodSpec{Containers: []corev1.Container{plain}}, []string{"/usr/bin/env"}, "the command prints the environment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := secretAccess(&corev1.Pod{Spec: tc.pod}, "app", tc.argv)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
