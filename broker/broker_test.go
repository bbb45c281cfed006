package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/scenario"
	"github.com/kubecode/kubecode/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/rest"
)

var (
	cp    *controlplane.ControlPlane
	truth *scenario.Truth
)

// One real control plane, seeded with the demo scenario, for the package.
func TestMain(m *testing.M) {
	if os.Getenv(runtime.WorkerEnv) != "" { // the pool's workers re-execute this binary
		if err := runtime.ServeWorker(os.Stdin, os.Stdout, nil); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(scenario.Main(&cp, &truth, m.Run))
}

// newBroker wires adapter → bridge → broker for one identity.
func newBroker(t testing.TB, cfg *rest.Config) *broker.Broker {
	return newBrokerMode(t, cfg, broker.ModeCode)
}

// newBrokerPool returns a code-mode broker whose scripts run in worker
// processes (this test binary, re-executed).
func newBrokerPool(t testing.TB) *broker.Broker {
	t.Helper()
	k8s, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	br := bridge.New([]bridge.Provider{k8s}, nil)
	pool := runtime.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close(); _ = br.Close() })
	return broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler), Pool: pool})
}

func newBrokerMode(t testing.TB, cfg *rest.Config, mode broker.ToolMode) *broker.Broker {
	t.Helper()
	k8s, err := kubernetes.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := helm.New(cfg, &helm.Options{ChartSources: []string{exampleCharts}})
	if err != nil {
		t.Fatal(err)
	}
	br := bridge.New([]bridge.Provider{k8s, h}, &bridge.Options{RefreshInterval: 200 * time.Millisecond})
	t.Cleanup(func() { _ = br.Close() })
	return broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler), Mode: mode})
}

// connect returns a real MCP client session to b over an in-memory transport.
func connect(t testing.TB, b *broker.Broker) *mcp.ClientSession {
	return connectWith(t, b, mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil))
}

// connectWith connects client to b over in-memory transports.
func connectWith(t testing.TB, b *broker.Broker, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func callText(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", tool)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// execJSON runs code through execute_code and decodes its JSON result.
func execJSON(t testing.TB, cs *mcp.ClientSession, code string, v any) {
	t.Helper()
	text, isErr := callText(t, cs, "execute_code", map[string]any{"code": code})
	if isErr {
		t.Fatalf("execute_code failed:\n%s", text)
	}
	body, _, _ := strings.Cut(text, "\n--- console ---")
	if s, ok := v.(*string); ok && !strings.HasPrefix(body, `"`) {
		*s = body // a string result comes back as its text
		return
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, text)
	}
}

func TestTwoTools(t *testing.T) {
	names, _ := toolNames(t, newBroker(t, cp.Admin))
	if d := cmp.Diff([]string{"execute_code", "search_tools"}, names); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
}

// searchQueries are natural questions, each with the operations that must
// be among the top five of the answer.
var searchQueries = []struct {
	query string
	want  []string
}{
	{"why is my pod crashing", []string{"kubernetes.pods.list", "kubernetes.pods.logs", "kubernetes.events.list"}},
	{"which pods restarted", []string{"kubernetes.pods.list"}},
	{"pod logs", []string{"kubernetes.pods.logs"}},
	{"logs of the previous container", []string{"kubernetes.pods.logs"}},
	{"which services have no endpoints", []string{"kubernetes.services.list", "kubernetes.endpointslices.list"}},
	{"list deployments", []string{"kubernetes.deployments.list"}},
	{"stuck rollout deployment", []string{"kubernetes.deployments.list"}},
	{"get a configmap", []string{"kubernetes.configmaps.get"}},
	{"secrets in a namespace", []string{"kubernetes.secrets.list"}},
	{"nodes not ready", []string{"kubernetes.nodes.list"}},
	{"events for a pod", []string{"kubernetes.events.list"}},
	{"failed jobs", []string{"kubernetes.jobs.list"}},
	{"cronjob schedule", []string{"kubernetes.cronjobs.list"}},
	{"ingress hosts", []string{"kubernetes.ingresses.list"}},
	{"pending persistent volume claims", []string{"kubernetes.persistentvolumeclaims.list"}},
	{"api resources", []string{"kubernetes.api_resources"}},
	{"custom resource definitions", []string{"kubernetes.customresourcedefinitions.list"}},
	{"statefulset replicas", []string{"kubernetes.statefulsets.list"}},
	{"daemonsets", []string{"kubernetes.daemonsets.list"}},
	{"horizontal pod autoscaler", []string{"kubernetes.horizontalpodautoscalers.list"}},
	{"list namespaces", []string{"kubernetes.namespaces.list"}},
	{"service accounts", []string{"kubernetes.serviceaccounts.list"}},
	{"kubernetes.pods.get", []string{"kubernetes.pods.get"}},
	{"crashloopbackoff", []string{"kubernetes.pods.list"}},
	{"widgets", []string{"kubernetes.widgets.list"}},
}

// TestSearchFindsWhatItMissed: questions search answered with nothing
// useful — a cordon, a claim resized, a ServiceAccount's permissions —
// each with the operation that does it among the top five. Apart from
// searchQueries, whose answers' tokens README states.
func TestSearchFindsWhatItMissed(t *testing.T) {
	b := newBroker(t, cp.Admin)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"cordon a node", []string{"kubernetes.nodes.cordon"}},
		{"uncordon a node after maintenance", []string{"kubernetes.nodes.uncordon"}},
		{"mark a node unschedulable", []string{"kubernetes.nodes.cordon"}},
		{"resize a persistent volume claim", []string{"kubernetes.persistentvolumeclaims.patch"}},
		{"what permissions does a service account have", []string{"kubernetes.auth.can_i"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			text, isErr := callText(t, connect(t, b), "search_tools", map[string]any{"query": tc.query})
			got := declaredOps(text)
			for _, w := range tc.want {
				if isErr || !slices.Contains(got, w) {
					t.Errorf("%q: %s not in the top 5: %v", tc.query, w, got)
				}
			}
		})
	}
}

// TestSearchQueries asks natural questions and expects the right operation
// among the top five declarations.
func TestSearchQueries(t *testing.T) {
	b := newBroker(t, cp.Admin)
	tests := searchQueries
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			text, isErr := callText(t, connect(t, b), "search_tools", map[string]any{"query": tc.query})
			if isErr {
				t.Fatalf("search failed: %s", text)
			}
			got := declaredOps(text)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%q: %s not in the top 5:\n%s", tc.query, w, declaredOps(text))
				}
			}
		})
	}
}

// declaredOps lists the operations a search_tools answer names, best
// first: those declared in a declare const tools block or given one-line
// signatures, then those named on its "Also" line.
func declaredOps(text string) []string {
	var out, path []string
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "tools."):
			name, _, _ := strings.Cut(strings.TrimPrefix(t, "tools."), "(")
			out = append(out, name)
		case strings.HasPrefix(t, "// Also: "):
			for _, n := range strings.Split(strings.TrimPrefix(t, "// Also: "), ", ") {
				out = append(out, strings.TrimPrefix(n, "tools."))
			}
		case strings.HasPrefix(t, "// tools."):
			name, _, _ := strings.Cut(strings.TrimPrefix(t, "// tools."), "(")
			out = append(out, name)
		case strings.HasPrefix(t, "declare const tools: {"), strings.HasPrefix(t, "//"), strings.HasPrefix(t, "/**"):
		case strings.HasSuffix(t, ": {"):
			path = append(path, strings.Trim(strings.TrimSuffix(t, ": {"), `"`))
		case t == "};" && len(path) > 0:
			path = path[:len(path)-1]
		case len(path) > 0 && strings.Contains(t, "("):
			name, _, _ := strings.Cut(t, "(")
			out = append(out, strings.Join(append(slices.Clone(path), strings.Trim(name, `"`)), "."))
		}
	}
	return out
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExampleRestarts(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	var got []struct {
		Namespace, Name string
		Restarts        int
	}
	execJSON(t, cs, readExample(t, "restarts.ts"), &got)
	want := append([]scenario.PodRef(nil), truth.Restarted...)
	var gotRefs []scenario.PodRef
	for _, p := range got {
		gotRefs = append(gotRefs, scenario.PodRef{Namespace: p.Namespace, Name: p.Name, Restarts: int32(p.Restarts)})
	}
	sortRefs := func(r []scenario.PodRef) {
		sort.Slice(r, func(i, j int) bool { return r[i].Namespace+"/"+r[i].Name < r[j].Namespace+"/"+r[j].Name })
	}
	sortRefs(want)
	sortRefs(gotRefs)
	if len(want) == 0 {
		t.Fatal("the scenario seeded no restarted pods")
	}
	if d := cmp.Diff(want, gotRefs); d != "" {
		t.Errorf("restarts (-seeded +script):\n%s", d)
	}
}

func TestExampleClusterHealth(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	var got []struct {
		Namespace, Pod, Container string
		Restarts                  int32
		Reason                    string
		LastLogLine               string
	}
	execJSON(t, cs, readExample(t, "cluster-health.ts"), &got)
	var gotCrash []scenario.CrashLoop
	for _, c := range got {
		gotCrash = append(gotCrash, scenario.CrashLoop{Namespace: c.Namespace, Pod: c.Pod, Container: c.Container, Restarts: c.Restarts, Reason: c.Reason, LastLogLine: c.LastLogLine})
	}
	var want []scenario.CrashLoop
	for _, c := range truth.CrashLooping {
		c.ExitCode = 0 // the example does not report it
		want = append(want, c)
	}
	if len(want) == 0 {
		t.Fatal("the scenario seeded no crash loops")
	}
	sortCrashes(want)
	sortCrashes(gotCrash)
	if d := cmp.Diff(want, gotCrash); d != "" {
		t.Errorf("crash-looping (-seeded +script):\n%s", d)
	}
}

func sortCrashes(c []scenario.CrashLoop) {
	sort.Slice(c, func(i, j int) bool { return c[i].Namespace+"/"+c[i].Pod < c[j].Namespace+"/"+c[j].Pod })
}

func TestExampleServicesWithoutEndpoints(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	var got []string
	execJSON(t, cs, readExample(t, "services-without-endpoints.ts"), &got)
	var want []string
	for _, r := range truth.ServicesWithoutEndpoints {
		want = append(want, r.Namespace+"/"+r.Name)
	}
	sort.Strings(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("services without endpoints (-seeded +script):\n%s", d)
	}
}

// TestSecretsNeverReachTheModel reads every Secret every way a script can
// and checks no canary value comes back.
func TestSecretsNeverReachTheModel(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	text, isErr := callText(t, cs, "execute_code", map[string]any{"code": `
const all = await tools.kubernetes.secrets.list({ allNamespaces: true })
const one = await tools.kubernetes.secrets.get({ name: all[0].metadata.name, namespace: all[0].metadata.namespace })
console.log(JSON.stringify(all))
return { all, one }`})
	if isErr {
		t.Fatalf("script failed: %s", text)
	}
	if len(truth.Canaries) == 0 {
		t.Fatal("scenario seeded no canaries")
	}
	for _, c := range truth.Canaries {
		if strings.Contains(text, c) {
			t.Fatalf("canary %q reached the model", c)
		}
	}
	if !strings.Contains(text, "[redacted]") {
		t.Errorf("secret data keys are not shown as redacted:\n%.500s", text)
	}
}

func TestBadScriptIsPositioned(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	tests := []struct {
		name, code, want string
	}{
		{"syntax", "const x = 1\nconst y = (x +\n", "user.ts:3:1: syntax error"},
		{"runtime after await", "const pods = await tools.kubernetes.pods.list({ namespace: 'shop' })\nconst p: any = null\np.status.phase", "user.ts:3:3: runtime error: TypeError"},
		{"unknown operation", "await tools.kubernetes.pods.lst()", "did you mean tools.kubernetes.pods.list"},
		{"invalid argument", "await tools.kubernetes.pods.list({ namespce: 'x' })", `unknown field "namespce"; did you mean "namespace"?`},
		{"not found", "await tools.kubernetes.pods.get({ name: 'no-such-pod', namespace: 'shop' })", "user.ts:1:29: tool error: ToolError: pods \"no-such-pod\" not found (tool kubernetes.pods.get, code 404)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, isErr := callText(t, cs, "execute_code", map[string]any{"code": tc.code})
			if !isErr {
				t.Fatalf("want IsError, got %s", text)
			}
			if !strings.Contains(text, tc.want) {
				t.Errorf("error text does not contain %q:\n%s", tc.want, text)
			}
		})
	}
}

// TestForbiddenIsCatchable: RBAC denies the viewer Secrets; the 403 reaches
// the script as an Error it can catch, with code and reason.
func TestForbiddenIsCatchable(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Viewer))
	var got map[string]any
	execJSON(t, cs, `
try {
  await tools.kubernetes.secrets.list({ namespace: 'shop' })
  return 'allowed'
} catch (e: any) {
  return { name: e.name, code: e.code, reason: e.reason, tool: e.tool }
}`, &got)
	want := map[string]any{"name": "ToolError", "code": 403.0, "reason": "Forbidden", "tool": "kubernetes.secrets.list"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("caught error (-want +got):\n%s", d)
	}
	var n float64
	execJSON(t, cs, "return (await tools.kubernetes.pods.list({ namespace: 'shop' })).length", &n)
	if n == 0 {
		t.Error("the viewer can list pods but got none")
	}
}

// TestCRDAddedAtRunTime installs a CRD after the broker started and expects
// it to become searchable and callable without a restart.
func TestCRDAddedAtRunTime(t *testing.T) {
	b := newBroker(t, cp.Admin)
	cs := connect(t, b)
	if text, _ := callText(t, cs, "search_tools", map[string]any{"query": "gadgets"}); slices.Contains(declaredOps(text), "kubernetes.gadgets.list") {
		t.Fatal("gadgets found before the CRD exists")
	}
	ns := cp.Namespace(t)
	createGadgetCRD(t, ns)
	deadline := time.Now().Add(20 * time.Second)
	for {
		text, _ := callText(t, cs, "search_tools", map[string]any{"query": "gadgets"})
		if slices.Contains(declaredOps(text), "kubernetes.gadgets.list") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gadgets never became searchable:\n%s", text)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var names []string
	execJSON(t, cs, fmt.Sprintf("return (await tools.kubernetes.gadgets.list({ namespace: %q })).map(g => g.metadata.name + ':' + g.spec.size)", ns), &names)
	if d := cmp.Diff([]string{"g1:3"}, names); d != "" {
		t.Errorf("gadgets (-want +got):\n%s", d)
	}
	var viaAlias string
	execJSON(t, cs, fmt.Sprintf("return (await tools.kubernetes.gdg.get({ name: 'g1', namespace: %q })).kind", ns), &viaAlias)
	if viaAlias != "Gadget" {
		t.Errorf("short-name alias returned kind %q", viaAlias)
	}
}

func TestStreamableHTTP(t *testing.T) {
	srv := httptest.NewServer(newBroker(t, cp.Admin).HTTPHandler(nil))
	defer srv.Close()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var n float64
	execJSON(t, cs, "return (await tools.kubernetes.namespaces.list()).length", &n)
	if n < 4 {
		t.Errorf("namespaces = %v, want the seeded ones", n)
	}
}

// skipUnderRace skips a long end-to-end flow in the race run: it ran in
// the plain run, and the race run is for the goroutines that serve every
// call (sessions, the worker pool, progress, type checkers), which the
// flow adds nothing to; its adapters have their own race run.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a long end-to-end flow: it runs without -race (scripts/test runs both)")
	}
}
