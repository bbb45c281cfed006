package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/scenario"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	cp    *controlplane.ControlPlane
	truth *scenario.Truth
	bin   string // the kubecode binary under test
	// noopBin is the Go SDK no-op MCP server (testdata/noop), the
	// benchmarks' yardstick.
	noopBin string
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBECODE_BENCH_URL") != "" || os.Getenv("KUBECODE_BENCH_KUBECONFIG") != "" {
		os.Exit(measureRunning(m))
	}
	os.Exit(controlplane.Main(&controlplane.Options{HoldControllers: true}, func(ctx context.Context, c *controlplane.ControlPlane) error {
		cp = c
		bin, noopBin = filepath.Join(c.Dir, "kubecode"), filepath.Join(c.Dir, "noop")
		// The servers and CLIs the tests start meet through a key file of
		// their own, never the user's (nor a server the user runs).
		if err := os.Setenv(approvalsFileEnv, filepath.Join(c.Dir, "approvals.json")); err != nil {
			return err
		}
		// The worker beside the server, as the image and README install
		// them.
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", c.Dir, ".", "../kubecode-worker", "./testdata/noop").CombinedOutput(); err != nil {
			return &buildError{out: string(out), err: err}
		}
		var err error
		truth, err = scenario.Seed(ctx, c.Admin, c.Kubelet, &scenario.SeedOptions{StartControllers: c.StartControllers})
		return err
	}, m.Run))
}

// measureRunning runs the benchmarks against a server or cluster already
// running (KUBECODE_BENCH_URL, KUBECODE_BENCH_KUBECONFIG: kubecode demo,
// as shipped) without starting the tests' own control plane: one
// starting and seeding beside the measured server took a core's share of
// the machine from it and from the no-op servers it is compared with.
// Tests need the tests' own cluster: only benchmarks run.
func measureRunning(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "^$" {
		fmt.Fprintln(os.Stderr, "KUBECODE_BENCH_URL and KUBECODE_BENCH_KUBECONFIG measure a running server: run benchmarks only (-test.run '^$' -test.bench ...)")
		return 2
	}
	dir, err := os.MkdirTemp("", "kubecode-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command("go", "build", "-o", dir, ".", "../kubecode-worker", "./testdata/noop").CombinedOutput(); err != nil {
		fmt.Fprintln(os.Stderr, &buildError{out: string(out), err: err})
		return 1
	}
	bin, noopBin = filepath.Join(dir, "kubecode"), filepath.Join(dir, "noop")
	return m.Run()
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Logf("stderr: %s", stderr.String())
	}
	return string(out), err
}

func TestExecFile(t *testing.T) {
	out, err := run(t, "", "exec", filepath.Join("..", "..", "examples", "services-without-endpoints.ts"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("exec output is not JSON: %v\n%s", err, out)
	}
	var want []string
	for _, r := range truth.ServicesWithoutEndpoints {
		want = append(want, r.Namespace+"/"+r.Name)
	}
	// Other tests' namespaces (a chart installed, being deleted) are not
	// the scenario's.
	got = slices.DeleteFunc(got, func(s string) bool {
		ns, _, _ := strings.Cut(s, "/")
		return !slices.Contains(truth.Namespaces, ns)
	})
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestREADMEExamplePlans: README's example plans its scale on the demo's
// live/storefront, and the plan says first that its autoscaler will set
// the replicas back, and what would last.
func TestREADMEExamplePlans(t *testing.T) {
	// The autoscaler decides from metrics once metrics-server has them.
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		out, _ := exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "-n", "live", "get", "hpa", "storefront",
			"-o", `jsonpath={.status.conditions[?(@.type=="ScalingActive")].status}`).CombinedOutput()
		if strings.TrimSpace(string(out)) == "True" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the autoscaler live/storefront is not active: %s", out)
		}
	}
	out, err := run(t, "", "exec", filepath.Join("..", "..", "examples", "scale-with-plan.ts"))
	if err != nil {
		t.Fatal(err)
	}
	want := "1. kubernetes.deployments.scale Deployment live/storefront: will not last: HorizontalPodAutoscaler live/storefront keeps Deployment live/storefront between 3 and 10 replicas and sets them from cpu at 70 % of requests; it wants 3 now: within seconds it moves spec.replicas back toward 3; what would last: set the autoscaler's minReplicas to 5"
	if !strings.Contains(out, want) || !strings.Contains(out, "spec.replicas: 3 → 5") {
		t.Errorf("kubecode exec examples/scale-with-plan.ts:\n%s\nwant %q", out, want)
	}
}

func TestExecStdinError(t *testing.T) {
	out, err := run(t, "const x: any = undefined\nx.y", "exec", "-")
	if err == nil {
		t.Fatalf("a failing script must exit non-zero; output:\n%s", out)
	}
	if !strings.Contains(out, "user.ts:2:3: runtime error: TypeError") {
		t.Errorf("error not positioned:\n%s", out)
	}
}

func TestSearch(t *testing.T) {
	out, err := run(t, "", "search", "pod", "logs")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "tools.kubernetes.pods.logs(input: { name: string;") {
		t.Errorf("search for pod logs did not declare pods.logs:\n%s", out)
	}
}

func TestNoCredentials(t *testing.T) {
	cmd := exec.Command(bin, "--kubeconfig", filepath.Join(t.TempDir(), "missing"), "search", "pods")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "kubeconfig") {
		t.Fatalf("want a clear credentials error, got %v:\n%s", err, out)
	}
}

// TestStdioWithTypeScriptSDK drives `kubecode serve` over stdio with the
// official MCP TypeScript SDK client (installed by scripts/test).
func TestStdioWithTypeScriptSDK(t *testing.T) {
	out, stderr := nodeClient(t, "smoke.mjs", bin, "--kubeconfig", cp.AdminKubeconfig, "serve")
	var got struct {
		Tools               []string
		SearchFoundPodsList bool
		ExecText            string
		ExecIsError         bool
		BadIsError          bool
		BadText             string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("smoke output: %v\n%s", err, out)
	}
	want := got
	want.Tools = []string{"execute_code", "search_tools"}
	want.SearchFoundPodsList = true
	want.ExecText = "true"
	want.ExecIsError = false
	want.BadIsError = true
	want.BadText = "user.ts:2:3: runtime error: TypeError: Cannot read property 'y' of undefined"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("smoke (-want +got):\n%s", d)
	}
	if strings.Contains(stderr, "panic") {
		t.Errorf("server stderr shows a panic:\n%s", stderr)
	}
}

// TestLongSilentExecutionKeepsTheClientWaiting: a script that sleeps 70 s
// without a word, through the TypeScript SDK client with its default 60 s
// request timeout and resetTimeoutOnProgress, runs to its end: the server
// sends progress every 0.5 s with a value that increases (the spec's
// rule), sleeping or not. Before, a silent script sent none and the
// client gave up at 60.0 s.
func TestLongSilentExecutionKeepsTheClientWaiting(t *testing.T) {
	t.Parallel()
	out, _ := nodeClient(t, "long-wait.mjs", "70", bin, "--kubeconfig", cp.AdminKubeconfig, "serve")
	var got struct {
		Text          string
		IsError       bool
		Seconds       int
		Notifications int
		NotIncreasing int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	if got.Text != "slept" || got.IsError || got.Seconds < 70 || got.Notifications < 130 || got.NotIncreasing != 0 {
		t.Errorf("a 70 s silent script: %+v", got)
	}
}

// nodeClient runs a client script of test/mcp-smoke (the official MCP
// TypeScript SDK, installed by scripts/test) with args, and returns what
// it printed and the server's stderr.
func nodeClient(t *testing.T, script string, args ...string) ([]byte, string) {
	t.Helper()
	dir := filepath.Join("..", "..", "test", "mcp-smoke")
	if _, err := exec.LookPath("node"); err != nil || !exists(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")) {
		if os.Getenv("CI") != "" {
			t.Fatal("node or the MCP TypeScript SDK is missing: scripts/test installs them")
		}
		t.Skip("node or test/mcp-smoke/node_modules missing; run scripts/test")
	}
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s failed: %v\nstderr:\n%s", script, err, stderr.String())
	}
	return out, stderr.String()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestServeModes: `kubecode serve --mode` picks the tools served over stdio.
func TestServeModes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		mode      string
		has, lack string
	}{
		{"direct", "kubernetes_pods_list", "execute_code"},
		{"hybrid", "kubernetes_pods_logs", "kubernetes_secrets_list"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd := exec.Command(bin, "--kubeconfig", cp.AdminKubeconfig, "serve", "--mode", tc.mode)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Contains(names, tc.has) || slices.Contains(names, tc.lack) {
				t.Errorf("--mode %s serves %d tools; want %s and not %s", tc.mode, len(names), tc.has, tc.lack)
			}
		})
	}
	out, err := exec.Command(bin, "--kubeconfig", cp.AdminKubeconfig, "serve", "--mode", "turbo").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "use code, direct or hybrid") {
		t.Errorf("--mode turbo: %v\n%s", err, out)
	}
}

// TestHostileScriptsCostOnlyAWorker: scripts run in worker processes
// (--isolation process, the default), so a memory bomb or a runaway
// regular expression ends with a clear error and the server lives on.
func TestHostileScriptsCostOnlyAWorker(t *testing.T) {
	for _, tc := range []struct {
		name, code, want string
	}{
		{"memory bomb", "const b = new ArrayBuffer(8 * 1024 ** 3)\nreturn b.byteLength", "memory limit exceeded (256 MB)"},
		{"catastrophic regular expression", "return /^(a+)+\\1$/.test('a'.repeat(40) + 'b')", "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, tc.code, "--timeout", "1s", "exec", "-")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("exec: %v, output %q; want exit 1 and %q", err, out, tc.want)
			}
		})
	}
}

// TestPolicyFlags: --changes and --policy reach the bridge, bad policies
// fail clearly, and `kubecode audit` judges the ledger `exec --ledger`
// wrote.
func TestPolicyFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	script := write("scale.ts", `try { await tools.kubernetes.deployments.scale({ namespace: 'live', name: 'storefront', replicas: 2 }); return 'made' } catch (e: any) { return e.reason + ': ' + e.message }`)
	ledger := filepath.Join(dir, "ledger.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want string
		fail bool
	}{
		{"read-only", []string{"--changes", "read-only", "--ledger", ledger, "exec", script}, "Refused: refused: kubernetes.deployments.scale changes the cluster and this server is read-only", false},
		{"plan is the default", []string{"--ledger", ledger, "exec", script}, "dry run only: nothing was applied", false},
		{"namespaces from the policy", []string{"--policy", write("ns.yaml", "mode: apply\nnamespaces: [shop]\n"), "exec", script}, `namespace "live" is outside the namespaces`, false},
		{"unknown mode", []string{"--changes", "yolo", "exec", script}, "use read-only, plan or apply", true},
		{"unknown policy field", []string{"--policy", write("bad.yaml", "mode: plan\nmaxPatchPath: 3\n"), "exec", script}, `unknown field "maxPatchPath"`, true},
		{"short plan key", []string{"--policy", write("key.yaml", "planKey: short\n"), "exec", script}, "at least 16 characters", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"--kubeconfig", cp.AdminKubeconfig}, tc.args...)...)
			out, err := cmd.CombinedOutput()
			if (err != nil) != tc.fail || !strings.Contains(string(out), tc.want) {
				t.Errorf("kubecode %s: %v\n%s\nwant %q", strings.Join(tc.args, " "), err, out, tc.want)
			}
		})
	}
	out, err := exec.Command(bin, "audit", ledger).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "EXECUTION") || !strings.Contains(string(out), "blocked") || !strings.Contains(string(out), "safe pass") ||
		!strings.Contains(string(out), "runs 2 · final pass - (give --outcome RUN=pass|fail) · safe pass 1 · unsafe pass 0 · blocked 1 · fail 0 · mutation scope 0 objects in 0 scopes") {
		t.Errorf("kubecode audit: %v\n%s", err, out)
	}
}

// TestTypecheckFlag: by default a misspelled operation is a type error
// before the script runs; --typecheck off leaves it to the runtime.
func TestTypecheckFlag(t *testing.T) {
	tsgo, err := controlplane.TsgoPath()
	if err != nil || !exists(tsgo) {
		t.Skipf("tsgo is not built: %v", err)
	}
	script := filepath.Join(t.TempDir(), "bad.ts")
	if err := os.WriteFile(script, []byte("const pods = await tools.kubernetes.pods.lst({})\nreturn pods.length"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode, want string
	}{
		{"calls", "user.ts:1:42: type error: tools.kubernetes.pods.lst is not an operation; did you mean tools.kubernetes.pods.list"},
		{"off", "runtime error"},
		{"loud", "use off, calls or strict"},
	} {
		out, _ := exec.Command(bin, "--kubeconfig", cp.AdminKubeconfig, "--typecheck", tc.mode, "exec", script).CombinedOutput()
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("--typecheck %s:\n%s\nwant %q", tc.mode, out, tc.want)
		}
	}
}

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 1000},
		{1 << 20, 1000}, // a tiny heap: at most 1,000
		{16 << 20, 200}, // the server's idle heap: grows by 32 MB
		{32 << 20, 100}, // from here on, GOGC=100 as before
		{512 << 20, 100},
	} {
		if got := gcPercent(tc.live, gcHeadroomBytes); got != tc.want {
			t.Errorf("gcPercent(%d MB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// TestTypeScriptSDKClientsComeAndGo: 1,000 clients of the official
// TypeScript SDK, each connect → call → close() (which ends no session on
// the server), then another client calls: the sessions they leave behind
// make room, and no caller is locked out. A session ended with HTTP
// DELETE (terminateSession) is gone.
func TestTypeScriptSDKClientsComeAndGo(t *testing.T) {
	u := startHTTP(t, nil)
	waitReady(t, u)
	out, stderr := nodeClient(t, "cycles.mjs", u+"/mcp", "1000")
	var got struct {
		Cycles, Wrong, Seconds, AfterDelete int
		FirstError, Last, LastError         string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("cycles.mjs: %v\n%s\nstderr:\n%s", err, out, stderr)
	}
	if got.FirstError != "" || got.Wrong != 0 || got.Last != "1001" || got.LastError != "" || got.AfterDelete != http.StatusNotFound {
		t.Errorf("1,000 connect → call → close cycles, then one more client: %+v", got)
	}
	t.Logf("1,000 cycles and one more client in %d s", got.Seconds)
}
