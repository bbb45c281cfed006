package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// startHTTP starts `kubecode serve --http` with args and env and returns
// its endpoint's base URL, from its JSON log.
func startHTTP(t testing.TB, env []string, args ...string) string {
	t.Helper()
	u, _ := startHTTPOn(t, cp.AdminKubeconfig, env, args...)
	return u
}

// startHTTPOn is startHTTP against the cluster of kubeconfig; it returns
// the server's process too.
func startHTTPOn(t testing.TB, kubeconfig string, env []string, args ...string) (string, *os.Process) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var l struct{ Msg, URL string }
		if json.Unmarshal(lines.Bytes(), &l) == nil && l.Msg == "serving MCP over streamable HTTP" {
			go func() {
				for lines.Scan() { // keep draining the log
				}
			}()
			return strings.TrimSuffix(l.URL, "/mcp"), cmd.Process
		}
	}
	t.Fatalf("the server did not start: %v", lines.Err())
	return "", nil
}

// waitReady waits until the server at u is ready (its catalog loaded),
// as a probe sees it on /readyz.
func waitReady(t testing.TB, u string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(u + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz: %v %v", u, resp, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestStatelessReplicas: two server processes sharing a plan key, each
// serving stateless HTTP, are interchangeable: a plan made on one is
// approved on the other.
// webNamespace makes a namespace holding Deployment web (1 replica) and
// returns it.
func webNamespace(t *testing.T) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	one := int32(1)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1.0"}}}}}}
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestStatelessReplicas(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := webNamespace(t)
	env := []string{"KUBECODE_PLAN_KEY=replicas-share-this-key-0123456789"}
	plans := cp.Namespace(t) // where the replicas keep plans and record applied ones
	files := []string{t.TempDir() + "/approvals.json", t.TempDir() + "/approvals.json"}
	urls := []string{startHTTP(t, append(env, "KUBECODE_APPROVALS_FILE="+files[0]), "--stateless", "--plans-namespace", plans),
		startHTTP(t, append(env, "KUBECODE_APPROVALS_FILE="+files[1]), "--stateless", "--plans-namespace", plans)}
	for _, u := range urls {
		waitReady(t, u)
	}
	session := func(url string) *mcp.ClientSession {
		c, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	code := `const s = await tools.kubernetes.deployments.scale({namespace: '` + ns + `', name: 'web', replicas: 3})
return s.spec.replicas`
	res, err := session(urls[0]).CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	plan, _ := sc["plan"].(map[string]any)
	token, _ := plan["id"].(string)
	if token == "" {
		t.Fatalf("no plan from the first replica: %v", res.Content)
	}
	// A person lists the plans on the second replica and approves there
	// (the CLI, with that server's local key): the decision is kept in the
	// cluster, where every replica sees it.
	cli := func(file string, args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "KUBECODE_APPROVALS_FILE="+file)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubecode %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := cli(files[1], "plans"); !strings.Contains(out, token+"  [pending]") || !strings.Contains(out, "spec.replicas: 1 → 3") {
		t.Errorf("kubecode plans on the second replica:\n%s", out)
	}
	if out := cli(files[1], "approve", token); !strings.Contains(out, "[approved]") || !strings.Contains(out, "approved by local:") {
		t.Errorf("kubecode approve:\n%s", out)
	}
	res, err = session(urls[1]).CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code, "approve": token}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError || !strings.Contains(text, "1 of 1 changes applied") {
		t.Fatalf("approval on the second replica:\n%s", text)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err == nil && *got.Spec.Replicas == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas after approval: %v %v", got.Spec.Replicas, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The same approval on the first replica (or again on the second)
	// applies nothing more: the replicas share the record of applied plans.
	for _, u := range urls {
		res, err = session(u).CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code, "approve": token}})
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "was already applied") {
			t.Errorf("a replayed approval on %s:\n%s", u, text)
		}
	}
	// A shared plan key without a shared record is refused at start.
	cmd := exec.Command(bin, "--kubeconfig", cp.AdminKubeconfig, "exec", "-")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader("return 1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "add --plans-namespace NS") {
		t.Errorf("a shared plan key without --plans-namespace: %v\n%s", err, out)
	}
}

var (
	approveToken = regexp.MustCompile(`approve: "([^"]+)"`)
	undoExec     = regexp.MustCompile(`tools\.kubecode\.revert\(\{ execution: "([^"]+)" \}\)`)
)

// TestRevertCommand: an execution applied at the terminal is undone by
// kubecode revert in another process — a plan, then applied with its
// token — through the record kept in --plans-namespace.
func TestRevertCommand(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns, plans := cp.Namespace(t), cp.Namespace(t)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--kubeconfig", cp.AdminKubeconfig, "--plans-namespace", plans}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubecode %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The same key in both processes: the plan of one is approved in the
	// other, as the terminal's person does.
	t.Setenv(PlanKeyEnv, "terminal-share-this-key-0123456789")
	script := filepath.Join(t.TempDir(), "patch.ts")
	if err := os.WriteFile(script, []byte(`await tools.kubernetes.configmaps.patch({ namespace: '`+ns+`', name: 'cfg', patch: { data: { a: '2' } } })
return 'patched'`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := kc("", "exec", script)
	m := approveToken.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no token in:\n%s", out)
	}
	out = kc("", "exec", script, "--approve", m[1])
	e := undoExec.FindStringSubmatch(out)
	if e == nil || !strings.Contains(out, "approved by the person at the terminal") {
		t.Fatalf("the applied answer:\n%s", out)
	}
	out = kc("", "revert", e[1])
	if m = approveToken.FindStringSubmatch(out); m == nil || !strings.Contains(out, `data.a: "2" → "1"`) {
		t.Fatalf("revert plan:\n%s", out)
	}
	kc("", "revert", e[1], "--approve", m[1])
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "1" {
		t.Errorf("after the revert: %v %v", got.Data, err)
	}
}
