package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// execResult is what one exec gave back.
type execResult struct {
	Stdout, Stderr string
	Code           int
	Err            string
}

// execIn runs argv in a container through the API server's pods/exec, over
// WebSocket or SPDY as client-go picks, as kubectl does.
func execIn(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, pod, container string, argv []string, stdin string) execResult {
	t.Helper()
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdin: stdin != "", Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cp.Admin, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	var in io.Reader
	if stdin != "" {
		in = strings.NewReader(stdin)
	}
	// The stream's copies may still write after a cancelled call returns.
	var stdout, stderr lockedBuffer
	err = ws.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: &stdout, Stderr: &stderr})
	r := execResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var ce utilexec.CodeExitError
	switch {
	case errors.As(err, &ce):
		r.Code = ce.Code
	case err != nil:
		r.Code, r.Err = -1, err.Error()
	}
	return r
}

// TestExec: kubectl exec on a simulated node runs the command in the
// container's simulated shell and files, and its network commands reach
// Services by name; nothing runs on the host.
func TestExec(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site"}, Data: map[string]string{"index.html": "hello from a configmap\n"}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"password": "s3cr3t-value-42"}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, deployment("web", 1, "nginx:1.27", nil), metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}}}, metav1.CreateOptions{})
	mustCreate(err)
	client := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "shell", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo started > /tmp/state; sleep 3600"},
			Env:          []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "site", MountPath: "/etc/site"}, {Name: "creds", MountPath: "/etc/creds"}}}},
		Volumes: []corev1.Volume{
			{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "site"}}}},
			{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		}}}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, client, metav1.CreateOptions{})
	mustCreate(err)
	eventually(t, 60*time.Second, "client and web run", func(ctx context.Context) (bool, string, error) {
		web, state, err := runningPods(ctx, cs, ns, "web")
		if err != nil || len(web) == 0 {
			return false, state, err
		}
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return condition(&p.Status, corev1.PodReady) == corev1.ConditionTrue, "client: " + string(p.Status.Phase), nil
	})
	svc, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		argv  []string
		stdin string
		want  execResult
	}{
		{"a mounted ConfigMap", []string{"cat", "/etc/site/index.html"}, "", execResult{Stdout: "hello from a configmap\n"}},
		{"a mounted Secret", []string{"cat", "/etc/creds/password"}, "", execResult{Stdout: "s3cr3t-value-42"}},
		{"what the program wrote", []string{"cat", "/tmp/state"}, "", execResult{Stdout: "started\n"}},
		{"a directory", []string{"ls", "/etc/site"}, "", execResult{Stdout: "index.html\n"}},
		{"a missing file", []string{"cat", "/nope"}, "", execResult{Stderr: "cat: can't open '/nope': No such file or directory\n", Code: 1}},
		{"a shell with the environment and an exit code", []string{"sh", "-c", "echo $PASSWORD; exit 3"}, "", execResult{Stdout: "s3cr3t-value-42\n", Code: 3}},
		{"stdin", []string{"cat"}, "piped in\n", execResult{Stdout: "piped in\n"}},
		{"a Service by name", []string{"wget", "-qO-", "http://web"}, "", execResult{Stdout: nginxWelcome(t)}},
		{"a Service by its full name and a path it does not serve", []string{"wget", "-qO-", "web." + ns + ".svc.cluster.local/healthz"}, "", execResult{Stderr: "wget: server returned error: HTTP/1.1 404 Not Found\n", Code: 1}},
		{"a Service that does not exist", []string{"wget", "-qO-", "http://nothing"}, "", execResult{Stderr: "wget: bad address 'nothing'\n", Code: 1}},
		{"a port nothing serves", []string{"nc", "-z", "web", "81"}, "", execResult{Stderr: "nc: web (" + svc.Spec.ClusterIP + ":81): Connection refused\n", Code: 1}},
		{"a port that is open", []string{"nc", "-zv", "web", "80"}, "", execResult{Stderr: "web (" + svc.Spec.ClusterIP + ":80) open\n"}},
		{"DNS", []string{"nslookup", "web"}, "", execResult{Stdout: "Server:\t\t10.0.0.10\nAddress:\t10.0.0.10:53\n\nName:\tweb." + ns + ".svc.cluster.local\nAddress: " + svc.Spec.ClusterIP + "\n\n"}},
		{"a binary the image lacks", []string{"curl", "http://web"}, "", execResult{Code: -1, Err: `Internal error occurred: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: exec: "curl": executable file not found in $PATH: unknown`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			got := execIn(ctx, t, cs, ns, "client", "shell", tc.argv, tc.stdin)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("exec %q (-want +got):\n%s", tc.argv, d)
			}
		})
	}

	t.Run("a command that never ends holds the stream until the client goes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		start := time.Now()
		got := execIn(ctx, t, cs, ns, "client", "shell", []string{"tail", "-f", "/tmp/state"}, "")
		if got.Code != -1 || time.Since(start) > 10*time.Second {
			t.Errorf("tail -f: %+v after %s", got, time.Since(start))
		}
	})

	t.Run("kubectl exec", func(t *testing.T) {
		if _, err := exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl is not installed")
		}
		out, err := exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "exec", "-n", ns, "client", "--", "wget", "-qO-", "http://web").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "<h1>Welcome to nginx!</h1>") {
			t.Errorf("kubectl exec … wget: %v\n%s", err, out)
		}
		// nginx logs each request to its output, as its image does: the
		// fetch shows in kubectl logs, from the client's address.
		client, err := cs.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		logs, err := exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "logs", "-n", ns, "deployment/web").CombinedOutput()
		if err != nil || !strings.Contains(string(logs), client.Status.PodIP+` - - [`) || !strings.Contains(string(logs), `"GET / HTTP/1.1" 200 `) || !strings.Contains(string(logs), `"-" "Wget" "-"`) {
			t.Errorf("kubectl logs of nginx after a wget: %v\n%s", err, logs)
		}
		out, err = exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "exec", "-n", ns, "client", "--", "sh", "-c", "exit 7").CombinedOutput()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || !strings.Contains(string(out), "command terminated with exit code 7") {
			t.Errorf("kubectl exec … exit 7: %v\n%s", err, out)
		}
	})
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// nginxWelcome is nginx's welcome page as the simulated registry has it.
func nginxWelcome(t *testing.T) string {
	img, _ := NewImages().Lookup("nginx:1.27")
	if img == nil {
		t.Fatal("nginx:1.27 is not in the registry")
	}
	return img.Programs["nginx"].Body
}

// TestHTTPProbeOfAPathNotServed: a probe asking nginx for a path it does
// not serve fails with the kubelet's message, as on a real cluster.
func TestHTTPProbeOfAPathNotServed(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "web", Image: "nginx:1.27",
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}}, PeriodSeconds: 1},
	}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the readiness probe fails", func(ctx context.Context) (bool, string, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == "Unhealthy" && e.Message == "Readiness probe failed: HTTP probe failed with statuscode: 404" {
				return true, "", nil
			}
		}
		return false, fmt.Sprint(seen), nil
	})
}

// TestNodeStatsAndLogs: through the API server's node proxy, each
// simulated node's kubelet answers /stats/summary and /metrics/resource
// with its running containers' simulated usage, and /logs/ with its
// journal, in which the Events of its pods are.
func TestNodeStatsAndLogs(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	node := cp.SimulatedNodes[1]
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "web runs", func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return condition(&p.Status, corev1.PodReady) == corev1.ConditionTrue, string(p.Status.Phase), nil
	})
	proxy := func(path string, params ...string) string {
		t.Helper()
		req := cs.CoreV1().RESTClient().Get().Resource("nodes").Name(node).SubResource("proxy").Suffix(path)
		for i := 0; i+1 < len(params); i += 2 {
			req = req.Param(params[i], params[i+1])
		}
		b, err := req.DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, b)
		}
		return string(b)
	}
	var sum struct {
		Node struct {
			NodeName string `json:"nodeName"`
			Memory   struct {
				WorkingSetBytes uint64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"node"`
		Pods []struct {
			PodRef struct{ Name, Namespace string } `json:"podRef"`
			CPU    struct {
				UsageNanoCores uint64 `json:"usageNanoCores"`
			} `json:"cpu"`
			Memory struct {
				WorkingSetBytes uint64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"pods"`
	}
	if err := json.Unmarshal([]byte(proxy("stats/summary")), &sum); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range sum.Pods {
		if p.PodRef.Namespace == ns && p.PodRef.Name == "web" {
			found = true
			if p.Memory.WorkingSetBytes < 8<<20 || p.Memory.WorkingSetBytes > 10<<20 || p.CPU.UsageNanoCores < serverCPU || p.CPU.UsageNanoCores > serverCPU+3_000_000 {
				t.Errorf("nginx's usage: %+v", p)
			}
		}
	}
	if !found || sum.Node.NodeName != node || sum.Node.Memory.WorkingSetBytes < nodeBaseMemory {
		t.Errorf("stats/summary of %s: %+v", node, sum)
	}
	metrics := proxy("metrics/resource")
	if !strings.Contains(metrics, `container_memory_working_set_bytes{container="web",namespace="`+ns+`",pod="web"} `) || !strings.Contains(metrics, "node_cpu_usage_seconds_total ") {
		t.Errorf("metrics/resource:\n%s", metrics)
	}
	other := cp.SimulatedNodes[0]
	if b, err := cs.CoreV1().RESTClient().Get().Resource("nodes").Name(other).SubResource("proxy").Suffix("metrics/resource").DoRaw(ctx); err != nil || strings.Contains(string(b), `namespace="`+ns+`"`) {
		t.Errorf("node %s reports a pod of node %s (%v)", other, node, err)
	}
	journal := proxy("logs/", "query", "kubelet")
	for _, want := range []string{
		node + ` kubelet[2041]: I`, `"Successfully registered node" node="` + node + `"`,
		`"Event occurred" object="` + ns + `/web" fieldPath="spec.containers{web}" kind="Pod" apiVersion="v1" type="Normal" reason="Started"`,
	} {
		if !strings.Contains(journal, want) {
			t.Errorf("the journal of %s does not hold %q:\n%s", node, want, journal)
		}
	}
	if got := strings.TrimSpace(proxy("logs/", "query", "kubelet", "pattern", "Started", "tailLines", "1")); strings.Count(got, "\n") != 0 || !strings.Contains(got, `reason="Started"`) {
		t.Errorf("tailLines 1, pattern Started:\n%s", got)
	}
	if listing := proxy("logs/"); !strings.Contains(listing, `<a href="kubelet.log">kubelet.log</a>`) {
		t.Errorf("logs/:\n%s", listing)
	}
}

// TestTop: the real metrics-server serves metrics.k8s.io from the
// simulated kubelets, so kubectl top shows a pod's usage.
func TestTop(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "metrics of pod web", func(ctx context.Context) (bool, string, error) {
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces/" + ns + "/pods/web").DoRaw(ctx)
		if err != nil {
			return false, err.Error() + ": " + string(b), nil
		}
		var m struct {
			Containers []struct {
				Name  string            `json:"name"`
				Usage map[string]string `json:"usage"`
			} `json:"containers"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return false, "", err
		}
		return len(m.Containers) == 1 && m.Containers[0].Usage["memory"] != "", string(b), nil
	})
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	out, err := exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "top", "pod", "-n", ns, "--no-headers").CombinedOutput()
	if f := strings.Fields(string(out)); err != nil || len(f) != 3 || f[0] != "web" || !strings.HasSuffix(f[1], "m") || !strings.HasSuffix(f[2], "Mi") {
		t.Errorf("kubectl top pod: %v\n%s", err, out)
	}
	out, err = exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "top", "node", cp.SimulatedNodes[0], "--no-headers").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), cp.SimulatedNodes[0]) {
		t.Errorf("kubectl top node: %v\n%s", err, out)
	}
}

// TestProgramsReachTheCluster: a container's own program that fetches
// from the cluster reaches it as it is when the program starts — a
// Service answers, a name that resolves to nothing fails with busybox's
// error and exit code — and a program that failed reaches what was fixed
// when it starts again.
func TestProgramsReachTheCluster(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	mustCreate := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	service := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}}}
	}
	mustCreate(cs.AppsV1().Deployments(ns).Create(ctx, deployment("web", 1, "nginx:1.27", nil), metav1.CreateOptions{}))
	mustCreate(cs.CoreV1().Services(ns).Create(ctx, service("web"), metav1.CreateOptions{}))
	eventually(t, 60*time.Second, "web runs", func(ctx context.Context) (bool, string, error) {
		web, state, err := runningPods(ctx, cs, ns, "web")
		return len(web) > 0, state, err
	})
	pod := func(name string, restart corev1.RestartPolicy, command ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{RestartPolicy: restart,
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: command}}}}
	}
	mustCreate(cs.CoreV1().Pods(ns).Create(ctx, pod("fetcher", corev1.RestartPolicyAlways, "sh", "-c",
		`wget -qO- http://web; echo "web: $?"; wget -qO- http://nothere; echo "nothere: $?"; sleep 3600`), metav1.CreateOptions{}))
	mustCreate(cs.CoreV1().Pods(ns).Create(ctx, pod("late", corev1.RestartPolicyOnFailure, "wget", "-qO-", "http://late"), metav1.CreateOptions{}))
	logs := func(ctx context.Context, name string, previous bool) string {
		b, _ := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Previous: previous}).DoRaw(ctx)
		return string(b)
	}
	want := nginxWelcome(t) + "web: 0\nwget: bad address 'nothere'\nnothere: 1\n"
	eventually(t, 60*time.Second, "the fetcher's log", func(ctx context.Context) (bool, string, error) {
		got := logs(ctx, "fetcher", false)
		return got == want, got, nil
	})
	eventually(t, 60*time.Second, "late fails: its Service does not exist", func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "late", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, "", err
		}
		st := p.Status.ContainerStatuses[0]
		term := st.LastTerminationState.Terminated
		if st.State.Terminated != nil {
			term = st.State.Terminated
		}
		if term == nil {
			return false, fmt.Sprintf("%+v", st.State), nil
		}
		return term.ExitCode == 1, fmt.Sprintf("exit %d", term.ExitCode), nil
	})
	if got := logs(ctx, "late", false) + logs(ctx, "late", true); !strings.Contains(got, "wget: bad address 'late'") {
		t.Errorf("late's log: %q, want wget's bad address", got)
	}
	mustCreate(cs.CoreV1().Services(ns).Create(ctx, service("late"), metav1.CreateOptions{}))
	eventually(t, 90*time.Second, "late succeeds when it starts again", func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "late", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase), nil
	})
	if got := logs(ctx, "late", false); got != nginxWelcome(t) {
		t.Errorf("late's log after the fix: %q, want nginx's page", got)
	}
}

// TestAttach: kubectl attach (and kubectl run -i) shows what a container's
// process prints as its life reaches it, and ends when the process does.
func TestAttach(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "counter"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo one; sleep 2; echo two; sleep 2; echo three; exit 3"}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "counter runs", func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "counter", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase), nil
	})
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("counter").SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: "app", Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cp.Admin, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuffer
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := ws.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatalf("attach: %v (stderr %q)", err, stderr.String())
	}
	if got := stdout.String(); !strings.HasSuffix(got, "two\nthree\n") || !strings.HasPrefix(got, "one\n") {
		t.Errorf("attached output: %q, want one, two, three", got)
	}
	if ctx.Err() != nil {
		t.Error("attach did not end when the process did")
	}
}
