package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/rest"
)

// newBrokerWith wires a broker over the test cluster with bopts (policy,
// stores) and oopts (broker options; the logger is discarded).
func newBrokerWith(t testing.TB, cfg *rest.Config, bopts bridge.Options, oopts broker.Options) (*broker.Broker, *bytes.Buffer) {
	t.Helper()
	a, err := kubernetes.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ledger bytes.Buffer
	bopts.Ledger = &ledger
	br := bridge.New([]bridge.Provider{a}, &bopts)
	t.Cleanup(func() { _ = br.Close() })
	oopts.Logger = slog.New(slog.DiscardHandler)
	return broker.New(br, &oopts), &ledger
}

// TestAgentAloneCannotApply: with a client that cannot elicit, no sequence
// of execute_code calls by the agent changes the cluster in plan mode:
// the plan comes back with an id and no token, and approving it by id,
// by an edited id, by anything token-like, in parallel or again after a
// denial applies nothing. Once a person approves, the plan applies once.
func TestAgentAloneCannotApply(t *testing.T) {
	ns := webDeployment(t)
	b, ledger := newBrokerWith(t, cp.Admin, bridge.Options{}, broker.Options{ApprovalWait: 300 * time.Millisecond})
	cs := connect(t, b)
	code := `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 3 })
return 'asked for 3'`
	text, isErr, sc := execute(t, cs, map[string]any{"code": code})
	id := planID(t, sc)
	if isErr || !strings.Contains(text, "A person must approve this plan") || !strings.Contains(text, `approve: "`+id+`"`) ||
		!strings.Contains(text, "spec.replicas: 1 → 3") {
		t.Fatalf("plan answer:\n%s", text)
	}
	plan := sc["plan"].(map[string]any)
	if _, ok := plan["token"]; ok || strings.Contains(text, "eyJ") {
		t.Fatalf("the agent got a token:\n%s\n%v", text, sc)
	}

	tries := []struct{ approve, want string }{
		{id, "still waiting for a person's approval"},
		{id + "0", "no plan " + id + "0 is waiting"},
		{"plan-0000000000000000", "no plan plan-0000000000000000 is waiting"},
		{strings.ToUpper(id), "approve takes the plan's id"},
		{"eyJpZCI6InBsYW4tMSJ9.c2lnbmF0dXJl", "approve takes the plan's id"},
		{"../" + id, "approve takes the plan's id"},
	}
	for _, tc := range tries {
		text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": tc.approve})
		if !isErr || !strings.Contains(text, tc.want) {
			t.Errorf("approve %q answered:\n%s\nwant %q", tc.approve, text, tc.want)
		}
	}
	// Nor can a script write kubecode's own records, whatever the policy.
	text, _, _ = execute(t, cs, map[string]any{"code": `await tools.kubernetes.configmaps.create({ namespace: '` + ns + `', object: { metadata: { name: 'kubecode-approval-` + id + `' }, data: { plan: 'x' } } })`})
	if !strings.Contains(text, "holds kubecode's own records") {
		t.Errorf("a script writing kubecode's records:\n%s", text)
	}
	// Four parallel uses, and the agent planning the same change again.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code, "approve": id}})
			if err != nil || !res.IsError {
				t.Errorf("a parallel approve applied or failed: %v %v", err, res)
			}
		}()
	}
	wg.Wait()
	if got := replicas(t, ns); got != "1" {
		t.Fatalf("kubectl: %s replicas before any person approved, want 1", got)
	}

	// A person denies: the plan never applies, and no one can approve it.
	if _, err := b.Decide(context.Background(), id, bridge.Decision{By: "reviewer", Channel: "cli", Approve: false, Verified: true}); err != nil {
		t.Fatal(err)
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": id})
	if !isErr || !strings.Contains(text, "was denied by reviewer (cli,") {
		t.Errorf("approve after a denial:\n%s", text)
	}
	if _, err := b.Decide(context.Background(), id, bridge.Decision{By: "someone-else", Channel: "cli", Approve: true, Verified: true}); err == nil || !strings.Contains(err.Error(), "denied already") {
		t.Errorf("approval after a denial: %v", err)
	}

	// A new plan, approved by a person: it applies, once.
	_, _, sc = execute(t, cs, map[string]any{"code": code})
	id = planID(t, sc)
	if _, err := b.Decide(context.Background(), id, bridge.Decision{By: "reviewer", Channel: "page", Approve: true, Verified: true}); err != nil {
		t.Fatal(err)
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": id})
	if isErr || !strings.Contains(text, "1 of 1 changes applied") || !strings.Contains(text, "approved by reviewer (page,") {
		t.Fatalf("approved run:\n%s", text)
	}
	if got := replicas(t, ns); got != "3" {
		t.Fatalf("kubectl: %s replicas after the approval, want 3", got)
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": id})
	if !isErr || !strings.Contains(text, "already applied") {
		t.Errorf("replay:\n%s", text)
	}
	if !strings.Contains(ledger.String(), `"approvedBy":"reviewer (page, `) {
		t.Errorf("the ledger does not say who approved:\n%s", ledger)
	}
}

// TestApproveWaitsForTheDecision: execute_code with approve waits for the
// person's decision and applies as soon as it comes.
func TestApproveWaitsForTheDecision(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerWith(t, cp.Admin, bridge.Options{}, broker.Options{ApprovalWait: time.Minute})
	cs, waiting := connectWaiting(t, b)
	code := `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
return 'ok'`
	_, _, sc := execute(t, cs, map[string]any{"code": code})
	id := planID(t, sc)
	decided := make(chan error, 1)
	go func() {
		select {
		case <-waiting: // the execution says it waits: now the person decides
		case <-time.After(time.Minute):
			decided <- fmt.Errorf("the execution never said it waits for a person")
			return
		}
		if replicas(t, ns) != "1" {
			decided <- fmt.Errorf("the Deployment changed before the decision")
			return
		}
		_, err := b.Decide(context.Background(), id, bridge.Decision{By: "reviewer", Channel: "cli", Approve: true, Verified: true})
		decided <- err
	}()
	params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code, "approve": id}}
	params.SetProgressToken("wait")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-decided; err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError || !strings.Contains(text, "1 of 1 changes applied") || replicas(t, ns) != "2" {
		t.Fatalf("answer:\n%s", text)
	}
}

// connectWaiting connects a client to b whose channel receives once an
// execution reports, by progress notification, that it waits for a
// person's decision (calls with a progress token only).
func connectWaiting(t *testing.T, b *broker.Broker) (*mcp.ClientSession, <-chan struct{}) {
	waiting := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if strings.Contains(r.Params.Message, "waiting for a person to approve") {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}
		}})
	return connectWith(t, b, client), waiting
}

// TestApprovalAgent: policy approval "agent" gives the agent the token,
// which applies the plan; the ledger says the agent approved.
func TestApprovalAgent(t *testing.T) {
	ns := webDeployment(t)
	b, ledger := newBrokerWith(t, cp.Admin, bridge.Options{Policy: policy.Policy{Approval: policy.ApprovalAgent}}, broker.Options{})
	cs := connect(t, b)
	code := `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
return 'ok'`
	_, _, sc := execute(t, cs, map[string]any{"code": code})
	token, _ := sc["plan"].(map[string]any)["token"].(string)
	if token == "" {
		t.Fatalf("no token under approval: agent: %v", sc)
	}
	text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": token})
	if isErr || !strings.Contains(text, "approved by the agent") || replicas(t, ns) != "2" {
		t.Fatalf("answer:\n%s", text)
	}
	if !strings.Contains(ledger.String(), `"approvedBy":"the agent`) {
		t.Errorf("ledger:\n%s", ledger)
	}
}

// TestTwoPersonRule: a plan under the two-person rule needs two distinct
// approvers; one person approving twice is refused, and the plan waits.
func TestTwoPersonRule(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerWith(t, cp.Admin, bridge.Options{Policy: policy.Policy{TwoPerson: []string{policy.TwoAll}}},
		broker.Options{ApprovalWait: 200 * time.Millisecond})
	cs := connect(t, b)
	code := `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
return 'ok'`
	text, _, sc := execute(t, cs, map[string]any{"code": code})
	id := planID(t, sc)
	if !strings.Contains(text, "needs 2 people to approve it") {
		t.Errorf("plan answer:\n%s", text)
	}
	ctx := context.Background()
	if _, err := b.Decide(ctx, id, bridge.Decision{By: "local:carol", Channel: "page", Approve: true}); err == nil || !strings.Contains(err.Error(), "each approving as themselves") {
		t.Errorf("a local link's approval of a two-person plan: %v", err)
	}
	if _, err := b.Decide(ctx, id, bridge.Decision{By: "alice", Channel: "page", Approve: true, Verified: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Decide(ctx, id, bridge.Decision{By: "alice", Channel: "cli", Approve: true, Verified: true}); err == nil || !strings.Contains(err.Error(), "alice approved it already") {
		t.Errorf("second approval by alice: %v", err)
	}
	text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": id})
	if !isErr || !strings.Contains(text, "needs 2 approvers, 1 so far") || replicas(t, ns) != "1" {
		t.Fatalf("after one approver:\n%s", text)
	}
	if _, err := b.Decide(ctx, id, bridge.Decision{By: "bob", Channel: "page", Approve: true, Verified: true}); err != nil {
		t.Fatal(err)
	}
	text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": id})
	if isErr || replicas(t, ns) != "2" || !strings.Contains(text, "alice (page, ") || !strings.Contains(text, "bob (page, ") {
		t.Fatalf("after two approvers:\n%s", text)
	}
}

// TestURLElicitation: a client that can open URLs gets the approval page's
// one-time link for its user; the model's answer holds neither the link
// nor a token. The user approves on the page (here an HTTP client with
// cookies, as a browser), and the call applies the plan.
func TestURLElicitation(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerWith(t, cp.Admin, bridge.Options{}, broker.Options{ApprovalWait: 30 * time.Second})
	srv := httptest.NewUnstartedServer(nil)
	pageURL := "http://" + srv.Listener.Addr().String() + "/approvals"
	var announced bytes.Buffer
	srv.Config.Handler = b.HTTPHandler(&broker.HTTPOptions{AllowedHosts: []string{"127.0.0.1"},
		Approvals: &broker.ApprovalOptions{URL: pageURL, Announce: &announced}})
	srv.Start()
	t.Cleanup(srv.Close)

	var link string
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			link = req.Params.URL
			if err := approveOnPage(link); err != nil {
				t.Error(err)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		}})
	cs := connectWith(t, b, client)
	text, isErr, _ := execute(t, cs, map[string]any{"code": `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
return 'done'`})
	if !strings.HasPrefix(link, pageURL+"/plan-") || !strings.Contains(link, "?key=") {
		t.Fatalf("the client was sent %q", link)
	}
	key := link[strings.Index(link, "?key=")+5:]
	if isErr || !strings.Contains(text, "applied after the user approved the plan on the approval page") || strings.Contains(text, key) {
		t.Fatalf("answer:\n%s", text)
	}
	if got := replicas(t, ns); got != "2" {
		t.Errorf("kubectl: %s replicas", got)
	}
	// The link opens the page once.
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a used link answered %s", resp.Status)
	}
}

var (
	csrfField    = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	linkKeyField = regexp.MustCompile(`name="key" value="([^"]+)"`)
)

// approveOnPage opens a one-time link as a browser would and presses
// Approve.
func approveOnPage(link string) error {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(link) // a form that opens the plan
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	k := linkKeyField.FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || k == nil {
		return fmt.Errorf("the link answered %s:\n%s", resp.Status, body)
	}
	lu, _ := url.Parse(link)
	req, _ := http.NewRequest(http.MethodPost, lu.Scheme+"://"+lu.Host+"/approvals/link", strings.NewReader(url.Values{"key": {string(k[1])}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", lu.Scheme+"://"+lu.Host)
	if resp, err = c.Do(req); err != nil {
		return err
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		return fmt.Errorf("the page answered %s:\n%s", resp.Status, body)
	}
	u, _ := url.Parse(link)
	u.RawQuery = ""
	req, _ = http.NewRequest(http.MethodPost, u.String()+"/approve", strings.NewReader(url.Values{"csrf": {string(m[1])}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	resp, err = c.Do(req)
	if err != nil {
		return err
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`id="state">approved`)) {
		return fmt.Errorf("approve answered %s:\n%s", resp.Status, body)
	}
	return nil
}

// BenchmarkApproveAndApply: what a person's approval adds to a change.
// "change" is a one-object patch in apply mode (dry run, policy, the real
// call); "approved" is the same patch in plan mode once planned: the
// decision recorded, the approve call's wait, the plan opened and used,
// the script re-run and the change applied. Target: approved − change
// ≤ 50 ms.
func BenchmarkApproveAndApply(b *testing.B) {
	ns := cp.Namespace(b)
	kubectlB(b, "-n", ns, "create", "configmap", "cfg", "--from-literal=a=0")
	code := func(i int) string {
		return fmt.Sprintf(`await tools.kubernetes.configmaps.patch({ namespace: '%s', name: 'cfg', patch: { data: { a: 'v%d' } } })
return 'ok'`, ns, i)
	}
	ctx := context.Background()
	call := func(cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: args})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	b.Run("change", func(b *testing.B) {
		br, _ := newBrokerWith(b, cp.Admin, bridge.Options{Policy: policy.Policy{Mode: policy.ModeApply}}, broker.Options{})
		cs := connect(b, br)
		call(cs, map[string]any{"code": code(-1)}) // warm: the catalog
		i := 0
		for b.Loop() {
			if res := call(cs, map[string]any{"code": code(i)}); res.IsError {
				b.Fatal(res.Content[0].(*mcp.TextContent).Text)
			}
			i++
		}
	})
	b.Run("approved", func(b *testing.B) {
		br, _ := newBrokerWith(b, cp.Admin, bridge.Options{}, broker.Options{})
		cs := connect(b, br)
		call(cs, map[string]any{"code": code(-1)})
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			res := call(cs, map[string]any{"code": code(i)})
			id, _ := res.StructuredContent.(map[string]any)["plan"].(map[string]any)["id"].(string)
			b.StartTimer()
			if _, err := br.Decide(ctx, id, bridge.Decision{By: "reviewer", Channel: "cli", Approve: true, Verified: true}); err != nil {
				b.Fatal(err)
			}
			if res := call(cs, map[string]any{"code": code(i), "approve": id}); res.IsError {
				b.Fatal(res.Content[0].(*mcp.TextContent).Text)
			}
		}
	})
}

func kubectlB(b *testing.B, args ...string) {
	b.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestRefusedScriptHasNoPlan: a script one of whose changes the policy
// refuses yields no approvable plan, even when it catches the refusal:
// its other changes cannot be approved alone.
func TestRefusedScriptHasNoPlan(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerWith(t, cp.Admin, bridge.Options{}, broker.Options{})
	cs := connect(t, b)
	text, _, sc := execute(t, cs, map[string]any{"code": `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
try { await tools.kubernetes.secrets.create({ namespace: '` + ns + `', object: { metadata: { name: 's' }, stringData: { a: 'b' } } }) } catch (e) {}
return 'done'`})
	if _, ok := sc["plan"]; ok || !strings.Contains(text, "--- no plan: a change was refused or its dry run failed (kubernetes.secrets.create Secret "+ns+"/s:") ||
		!strings.Contains(text, "the other 1 planned change(s) cannot be approved alone") {
		t.Errorf("answer:\n%s\n%v", text, sc)
	}
	// A change whose dry run fails, caught or not, leaves no plan either:
	// approving the rest would do what the script never does.
	text, _, sc = execute(t, cs, map[string]any{"code": `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
try { await tools.kubernetes.configmaps.create({ namespace: '` + ns + `', object: { metadata: { name: 'Not_A_Name' }, data: { a: 'b' } } }) } catch (e) {}
return 'done'`})
	if _, ok := sc["plan"]; ok || !strings.Contains(text, "--- no plan: a change was refused or its dry run failed (kubernetes.configmaps.create ConfigMap "+ns+"/Not_A_Name: its dry run failed: ") {
		t.Errorf("a failed dry run:\n%s\n%v", text, sc)
	}
	// A delete and a create of the same name are previewed in order: the
	// create is checked as it follows the delete, and the plan holds both.
	code := `await tools.kubernetes.configmaps.delete({ namespace: '` + ns + `', name: 'cfg' })
await tools.kubernetes.configmaps.create({ namespace: '` + ns + `', object: { metadata: { name: 'cfg' }, data: { a: '2' }, immutable: true } })
return 'done'`
	text, _, sc = execute(t, cs, map[string]any{"code": code})
	if _, ok := sc["plan"]; !ok || !strings.Contains(text, "2 change(s)") || !strings.Contains(text, `validated under a generated name: ConfigMap "cfg" is deleted earlier in this plan`) {
		t.Fatalf("delete, then create of the same name:\n%s", text)
	}
	if text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc)}); isErr || !strings.Contains(text, "2 of 2 changes applied") {
		t.Fatalf("the approved run:\n%s", text)
	}
	if got := kubectl(t, "-n", ns, "get", "configmap", "cfg", "-o", "jsonpath={.data.a} {.immutable}"); got != "2 true" {
		t.Errorf("kubectl after the approved run: %q", got)
	}
	// An object a finalizer holds is still there, being deleted, when the
	// approved run creates it again: the create waits for it to go.
	kubectl(t, "-n", ns, "create", "configmap", "held", "--from-literal=a=1")
	kubectl(t, "-n", ns, "patch", "configmap", "held", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
	code = strings.ReplaceAll(strings.ReplaceAll(code, "'cfg'", "'held'"), "immutable: true", "immutable: false")
	_, _, sc = execute(t, cs, map[string]any{"code": code})
	id := approved(t, b, sc)
	go func() {
		for range 50 { // lift the finalizer once the approved run deleted it
			time.Sleep(200 * time.Millisecond)
			if out, err := exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "-n", ns, "get", "configmap", "held", "-o", "jsonpath={.metadata.deletionTimestamp}").Output(); err == nil && len(out) > 0 {
				_ = exec.Command("kubectl", "--kubeconfig", cp.AdminKubeconfig, "-n", ns, "patch", "configmap", "held", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`).Run()
				return
			}
		}
	}()
	if text, isErr, _ := execute(t, cs, map[string]any{"code": code, "approve": id}); isErr || !strings.Contains(text, "2 of 2 changes applied") {
		t.Fatalf("the approved run over a finalizer:\n%s", text)
	}
	if got := kubectl(t, "-n", ns, "get", "configmap", "held", "-o", "jsonpath={.data.a}"); got != "2" {
		t.Errorf("kubectl after the approved run over a finalizer: %q", got)
	}
}
