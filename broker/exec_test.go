package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8s "k8s.io/client-go/kubernetes"
)

// execPods makes a namespace with an nginx pod behind Service web and a
// busybox pod "client" that mounts ConfigMap site and Secret creds.
func execPods(t *testing.T) string {
	t.Helper()
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	for _, err := range []error{
		create(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site"}, Data: map[string]string{"app.conf": "listen 8080\n"}}, metav1.CreateOptions{})),
		create(cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"password": "hunter2-but-longer"}}, metav1.CreateOptions{})),
		create(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nginx", Labels: map[string]string{"app": "nginx"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}, metav1.CreateOptions{})),
		create(cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "nginx"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}}}, metav1.CreateOptions{})),
		create(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "shell", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "site", MountPath: "/etc/site"}, {Name: "creds", MountPath: "/etc/creds"}}}},
			Volumes: []corev1.Volume{
				{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "site"}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
			}}}, metav1.CreateOptions{})),
		// reader holds no Secret: the only pod where a command may be a read.
		create(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "shell", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "site", MountPath: "/etc/site"}}}},
			Volumes: []corev1.Volume{
				{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "site"}}}},
			}}}, metav1.CreateOptions{})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, name := range []string{"nginx", "client", "reader"} {
		for {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.Phase == corev1.PodRunning && len(p.Status.Conditions) > 0 && readyPod(p) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod %s is not ready: %s", name, p.Status.Phase)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return ns
}

func create[T any](_ T, err error) error { return err }

func readyPod(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestPodsExecThroughTheGate: in plan mode pods.exec is planned with the
// pod, container and exact argv; once a person approves, the re-run reads
// a mounted ConfigMap and reaches a Service by name, and a Secret the pod
// mounts never reaches the answer. The ledger keeps argv and exit code,
// not output. A command the policy lists as a read runs without a plan.
func TestPodsExecThroughTheGate(t *testing.T) {
	ns := execPods(t)
	b, ledger := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	cs := connect(t, b)
	for _, q := range []string{"exec into a pod and cat a file", "kubectl exec wget a service from a pod"} {
		if text, _ := callText(t, connect(t, b), "search_tools", map[string]any{"query": q}); !strings.Contains(firstDeclaration(text), "exec(") {
			t.Errorf("search %q does not rank pods.exec first:\n%s", q, text)
		}
	}
	// "run" is pods.run's verb: both come back.
	if text, _ := callText(t, connect(t, b), "search_tools", map[string]any{"query": "run a command in a container"}); !strings.Contains(text, "tools.kubernetes.pods.exec(input") {
		t.Errorf("search does not declare pods.exec:\n%s", text)
	}
	code := `const run = (command: string[]) => tools.kubernetes.pods.exec({ namespace: '` + ns + `', name: 'client', command })
const conf = await run(['cat', '/etc/site/app.conf'])
const web = await run(['wget', '-qO-', 'http://web'])
const secret = await run(['cat', '/etc/creds/password'])
return { conf: conf.stdout, web: web.stdout.includes('Welcome to nginx!'), secret: secret.stdout, codes: [conf.exitCode, web.exitCode, secret.exitCode] }`
	text, isErr, sc := execute(t, cs, map[string]any{"code": code})
	for _, want := range []string{
		`1. kubernetes.pods.exec Pod ` + ns + `/client: checked: a command has no dry run, only its container was found running; runs in container shell: ["cat","/etc/site/app.conf"]`,
		`runs in container shell: ["wget","-qO-","http://web"]`,
		`⚠ the command names /etc/creds, where volume creds (Secret values) is mounted`,
	} {
		if isErr || !strings.Contains(text, want) {
			t.Errorf("the plan does not say %q:\n%s", want, text)
		}
	}
	id := approved(t, b, sc)
	text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": id})
	if isErr {
		t.Fatalf("the approved re-run:\n%s", text)
	}
	type answer struct {
		Conf   string `json:"conf"`
		Web    bool   `json:"web"`
		Secret string `json:"secret"`
		Codes  []int  `json:"codes"`
	}
	var got answer
	body, _, _ := strings.Cut(text, "\n---")
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	if d := cmp.Diff(answer{Conf: "listen 8080\n", Web: true, Secret: "[hidden: Secret " + ns + "/creds key password]", Codes: []int{0, 0, 0}}, got); d != "" {
		t.Errorf("the approved re-run's answer (-want +got):\n%s\n%s", d, text)
	}
	// A command is not undone, and the answer offers no undo.
	if !strings.Contains(text, "\nno undo: the command run in Pod "+ns+"/client is not undone: kubecode cannot know what it changed") || strings.Contains(text, "to undo it") {
		t.Errorf("the approved re-run's answer offers an undo of commands:\n%s", text)
	}
	if strings.Contains(text, "hunter2") || strings.Contains(ledger.String(), "hunter2") {
		t.Errorf("a Secret's value reached the answer or the ledger:\n%s", text)
	}
	var applied []bridge.Entry
	for _, line := range strings.Split(strings.TrimSpace(ledger.String()), "\n") {
		var e bridge.Entry
		if json.Unmarshal([]byte(line), &e) == nil && e.Operation == "kubernetes.pods.exec" && e.Decision == "applied" {
			applied = append(applied, e)
		}
	}
	if len(applied) != 3 || applied[0].ExitCode == nil || *applied[0].ExitCode != 0 || !strings.Contains(string(applied[0].Arguments), `"command":["cat","/etc/site/app.conf"]`) {
		t.Errorf("the ledger's applied execs: %+v", applied)
	}
	if strings.Contains(ledger.String(), "listen 8080") {
		t.Errorf("the ledger keeps a command's output")
	}

	// A read under the policy: no plan, the answer at once.
	b, ledger = newBrokerPolicy(t, cp.Admin, policy.Policy{ExecReads: [][]string{{"cat", "/etc/site/app.conf"}}})
	var conf string
	execJSON(t, connect(t, b), `return (await tools.kubernetes.pods.exec({ namespace: '`+ns+`', name: 'reader', command: ['cat', '/etc/site/app.conf'] })).stdout`, &conf)
	if conf != "listen 8080\n" || !strings.Contains(ledger.String(), `"decision":"read","rule":"execReads"`) {
		t.Errorf("an exec the policy reads: %q\n%s", conf, ledger)
	}
	// The same command in a container that mounts a Secret is planned.
	text, _, sc = execute(t, connect(t, b), map[string]any{"code": `return (await tools.kubernetes.pods.exec({ namespace: '` + ns + `', name: 'client', command: ['cat', '/etc/site/app.conf'] })).stdout`})
	if planID(t, sc) == "" || !strings.Contains(text, "⚠ container shell mounts Secret creds at /etc/creds") {
		t.Errorf("an exec read in a container holding a Secret:\n%s", text)
	}
	// One more argument is another command: planned.
	text, _, sc = execute(t, connect(t, b), map[string]any{"code": `return (await tools.kubernetes.pods.exec({ namespace: '` + ns + `', name: 'reader', command: ['cat', '/etc/site/app.conf', '/etc/creds/password'] })).stdout`})
	if planID(t, sc) == "" || strings.Contains(text, "hunter2") {
		t.Errorf("an argv longer than the read's:\n%s", text)
	}
	// A read is still judged by every other rule, and stdin makes any
	// command a change.
	b, _ = newBrokerPolicy(t, cp.Admin, policy.Policy{Namespaces: []string{"elsewhere"}, ExecReads: [][]string{{"cat", "/etc/site/app.conf"}}})
	if text, _, _ := execute(t, connect(t, b), map[string]any{"code": `return await tools.kubernetes.pods.exec({ namespace: '` + ns + `', name: 'client', command: ['cat', '/etc/site/app.conf'] })`}); !strings.Contains(text, "refused") || !strings.Contains(text, "elsewhere") {
		t.Errorf("an exec read outside the policy's namespaces:\n%s", text)
	}
	b, _ = newBrokerPolicy(t, cp.Admin, policy.Policy{ExecReads: [][]string{{"cat", "*"}}})
	text, _, sc = execute(t, connect(t, b), map[string]any{"code": `return await tools.kubernetes.pods.exec({ namespace: '` + ns + `', name: 'client', command: ['cat'], stdin: 'DROP TABLE users;' })`})
	if planID(t, sc) == "" || !strings.Contains(text, "with 17 bytes on stdin") {
		t.Errorf("an exec read given stdin:\n%s", text)
	}
	// Read-only mode refuses it.
	b, _ = newBrokerPolicy(t, cp.Admin, policy.Policy{Mode: policy.ModeReadOnly})
	if text, _, _ := execute(t, connect(t, b), map[string]any{"code": `return await tools.kubernetes.pods.exec({ namespace: '` + ns + `', name: 'client', command: ['id'] })`}); !strings.Contains(text, "read-only") {
		t.Errorf("exec in read-only mode:\n%s", text)
	}
}

// firstDeclaration is the first function a search answer declares.
func firstDeclaration(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "(args") || strings.Contains(line, "): Promise<") {
			return line
		}
	}
	return ""
}
