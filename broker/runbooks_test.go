package broker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog/secrets"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// grantRunbook widens access: no standard change covers that.
const grantRunbook = `/**
 * Lets a user read a namespace.
 * @param {string} namespace  where
 * @param {string} user  who
 */
await tools.kubernetes.rolebindings.create({ namespace: params.namespace, object: {
  metadata: { name: 'view-' + params.user },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
  subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: params.user }] } })
return 'granted'
`

// runbookReplica wires a broker serving the runbooks of dir over the test
// cluster, with bopts' stores and policy, as cmd/kubecode wires it: one
// secret boundary fed by the watch of the cluster's Secrets. The ledger
// and the log are the buffers it returns.
func runbookReplica(t *testing.T, dir string, bopts bridge.Options) (*broker.Broker, *bytes.Buffer) {
	b, ledger, _ := runbookReplicaLog(t, dir, bopts)
	return b, ledger
}

func runbookReplicaLog(t *testing.T, dir string, bopts bridge.Options) (*broker.Broker, *bytes.Buffer, *lockedBuffer) {
	t.Helper()
	reg := secrets.New(nil)
	watch, err := kubernetes.WatchSecrets(cp.Admin, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Close() })
	a, err := kubernetes.New(cp.Admin, &kubernetes.Options{Secrets: reg, SecretWatch: watch})
	if err != nil {
		t.Fatal(err)
	}
	bopts.Secrets = reg
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	rbs, err := broker.NewRunbooks(&broker.RunbooksOptions{Dir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	var ledger bytes.Buffer
	bopts.Ledger = &ledger
	br := bridge.New([]bridge.Provider{a, rbs}, &bopts)
	t.Cleanup(func() { _ = br.Close() })
	return broker.New(br, &broker.Options{Runbooks: rbs, Logger: log, ApprovalWait: 300 * time.Millisecond}), &ledger, logs
}

func restartedAt(t *testing.T, ns string) string {
	return kubectl(t, "-n", ns, "get", "deployment", "web", "-o", `jsonpath={.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}`)
}

// TestStandardChanges: the acceptance, through a real MCP client
// on two replicas sharing the plans namespace.
func TestStandardChanges(t *testing.T) {
	shop, other := webDeployment(t), webDeployment(t)
	records := cp.Namespace(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "restart-deployment.ts")
	write := func(name, code string) {
		if err := os.WriteFile(filepath.Join(dir, name+".ts"), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("restart-deployment", readExample(t, "runbooks/restart-deployment.ts"))
	write("grant-view", grantRunbook)
	store, err := kubernetes.NewApprovals(cp.Admin, records)
	if err != nil {
		t.Fatal(err)
	}
	uses, err := kubernetes.NewPlanUses(cp.Admin, records)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("a key both replicas share, 32 b.")
	// The policy lets kube-system be planned (critical changes allowed),
	// so that what takes it out of the standard change is the bound.
	pol := policy.Policy{AllowCriticalChanges: true}
	a, ledgerA := runbookReplica(t, dir, bridge.Options{PlanKey: key, PlanUses: uses, Approvals: store, Policy: pol})
	b, _ := runbookReplica(t, dir, bridge.Options{PlanKey: key, PlanUses: uses, Approvals: store, Policy: pol})
	csA, csB := connect(t, a), connect(t, b)
	ctx := context.Background()
	call := func(ns, name string) string {
		return `return await tools.runbooks.restart_deployment({ namespace: '` + ns + `', name: '` + name + `' })`
	}

	// Search finds the runbook, with its declaration.
	if text, _ := callText(t, csA, "search_tools", map[string]any{"query": "runbook to restart a deployment"}); !strings.Contains(text, "restart_deployment(input: { namespace: string; name: string })") {
		t.Errorf("search does not declare the runbook:\n%s", text)
	}
	// A runbook no person approved does not run.
	before := restartedAt(t, shop)
	text, isErr, _ := execute(t, csA, map[string]any{"code": call(shop, "web")})
	if !isErr || !strings.Contains(text, "is a draft: no person approved it") || !strings.Contains(text, "kubecode runbooks approve restart-deployment") {
		t.Fatalf("an unapproved runbook:\n%s", text)
	}

	// A person approves it once, for namespace shop and Deployment web,
	// having seen its dry run.
	views, err := a.RunbookViews(ctx)
	if err != nil {
		t.Fatal(err)
	}
	version := ""
	for _, v := range views {
		if v.Name == "restart-deployment" {
			version = v.Version
			if v.State != "draft" {
				t.Errorf("state before approval %q, want draft", v.State)
			}
		}
	}
	example, _ := json.Marshal(map[string]string{"namespace": shop, "name": "web"})
	bounds := bridge.Bounds{Namespaces: []string{shop, other}, Params: map[string]bridge.ParamBound{
		"namespace": {Values: []string{shop}}, "name": {Pattern: "web|api"}}, RunsPerHour: 5}
	if _, err := a.ApproveRunbook(ctx, "restart-deployment", "0000", bounds, example, bridge.Decision{By: "alice", Channel: "cli", Approve: true, Verified: true}); err == nil || !strings.Contains(err.Error(), "approve the version you read") {
		t.Errorf("approving a version no one read: %v", err)
	}
	sc, err := a.ApproveRunbook(ctx, "restart-deployment", version, bounds, example, bridge.Decision{By: "alice", Channel: "cli", Approve: true, Verified: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(sc.Preview, "\n"), "kubernetes.deployments.rollout.restart Deployment "+shop+"/web") {
		t.Errorf("the approval's preview:\n%s", strings.Join(sc.Preview, "\n"))
	}
	if restartedAt(t, shop) != before {
		t.Fatal("the preview restarted the Deployment")
	}

	// Within the bounds it runs twice without a plan, on either replica,
	// each run recorded.
	ledgerTexts := ""
	for i, c := range []*mcp.ClientSession{csA, csB} {
		prev := restartedAt(t, shop)
		text, isErr, sc2 := execute(t, c, map[string]any{"code": call(shop, "web")})
		if isErr || !strings.Contains(text, "restarted "+shop+"/web") || !strings.Contains(text, "ran as standard change "+sc.ID+", no plan needed: 1 change(s) applied") ||
			sc2["plan"] != nil {
			t.Fatalf("run %d within the bounds:\n%s", i+1, text)
		}
		if !strings.Contains(text, "tools.kubecode.revert({ execution:") {
			t.Errorf("run %d offers no undo:\n%s", i+1, text)
		}
		if now := restartedAt(t, shop); now == prev {
			t.Fatalf("run %d did not restart the Deployment", i+1)
		}
		ledgerTexts += text
		time.Sleep(1100 * time.Millisecond) // restartedAt has seconds
	}
	// A run is undone like any execution: a revert, planned for a person.
	undo := regexp.MustCompile(`execution: "(exec-[^"]+)"`).FindAllStringSubmatch(ledgerTexts, -1)
	if len(undo) == 0 {
		t.Fatal("no run to revert")
	}
	text, isErr, scr := execute(t, csA, map[string]any{"code": `return await tools.kubecode.revert({ execution: '` + undo[len(undo)-1][1] + `' })`})
	if isErr || scr["plan"] == nil || !strings.Contains(text, "restartedAt") {
		t.Errorf("the revert of a run:\n%s", text)
	}
	recorded := 0
	for _, line := range strings.Split(ledgerA.String(), "\n") {
		var e bridge.Entry
		if json.Unmarshal([]byte(line), &e) == nil && e.Runbook != nil && e.Decision == "applied" {
			recorded++
			want := bridge.RunbookRun{Name: "restart-deployment", Version: version, Standard: sc.ID}
			got := *e.Runbook
			got.Params, got.CalledBy = nil, ""
			if diff := cmp.Diff(want, got); diff != "" || !strings.Contains(e.ApprovedBy, "standard change "+sc.ID) || !strings.Contains(e.ApprovedBy, "alice (cli,") {
				t.Errorf("ledger entry of a run (-want +got):\n%s\napproved by %q", diff, e.ApprovedBy)
			}
		}
	}
	if recorded != 1 { // replica A's ledger: its one run
		t.Errorf("replica A recorded %d applied runs, want 1:\n%s", recorded, ledgerA)
	}
	runs, err := b.RunbookViews(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range runs {
		if v.Name == "restart-deployment" && (v.State != "standard" || len(v.Standard) != 1 || len(v.Standard[0].Runs) != 2) {
			t.Errorf("replica B's view of the runbook: %+v", v)
		}
	}

	// Outside the bounds — another namespace, another Deployment name,
	// kube-system — the run is planned like any change.
	for _, tc := range []struct{ ns, name, why string }{
		{other, "web", "parameter namespace is \"" + other + "\", not one of " + shop},
		{shop, "cache", "parameter name is \"cache\", which does not match web|api"},
		{"kube-system", "web", "parameter namespace is \"kube-system\""},
	} {
		text, _, sc2 := execute(t, csB, map[string]any{"code": call(tc.ns, tc.name)})
		if !strings.Contains(text, "outside its standard change: "+tc.why) {
			t.Errorf("%s/%s: the answer does not say why it is planned:\n%s", tc.ns, tc.name, text)
		}
		if tc.ns == other && (sc2["plan"] == nil || !strings.Contains(text, "A person must approve this plan")) {
			t.Errorf("%s/%s is not planned:\n%s", tc.ns, tc.name, text)
		}
	}

	// A runbook whose run widens access still needs its two people.
	views, _ = a.RunbookViews(ctx)
	for _, v := range views {
		if v.Name == "grant-view" {
			if _, err := a.ApproveRunbook(ctx, "grant-view", v.Version, bridge.Bounds{Namespaces: []string{shop}}, nil, bridge.Decision{By: "alice", Channel: "cli", Approve: true, Verified: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	text, _, sc2 := execute(t, csA, map[string]any{"code": `return await tools.runbooks.grant_view({ namespace: '` + shop + `', user: 'bob' })`})
	if !strings.Contains(text, "outside its standard change") || !strings.Contains(text, "grants permissions") || sc2["plan"] == nil ||
		!strings.Contains(text, "It needs 2 people to approve it") {
		t.Errorf("a runbook that grants access:\n%s", text)
	}
	if out := kubectl(t, "-n", shop, "get", "rolebindings", "-o", "name"); strings.Contains(out, "view-bob") {
		t.Errorf("the grant was made without its people: %s", out)
	}

	// The runbook edited is a draft: refused until a person approves it.
	if err := os.WriteFile(file, []byte(strings.Replace(readExample(t, "runbooks/restart-deployment.ts"), "'restarted '", "'restarted (v2) '", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	text, isErr, _ = execute(t, csA, map[string]any{"code": call(shop, "web")})
	if !isErr || !strings.Contains(text, "changed since a person approved it") || strings.Contains(text, "restarted (v2)") {
		t.Errorf("an edited runbook:\n%s", text)
	}
	write("restart-deployment", readExample(t, "runbooks/restart-deployment.ts"))

	// Revoked on replica B: the next run on A is refused.
	if _, err := b.RevokeStandard(ctx, sc.ID, bridge.Decision{By: "carol", Channel: "cli", Verified: true}); err != nil {
		t.Fatal(err)
	}
	prev := restartedAt(t, shop)
	text, isErr, _ = execute(t, csA, map[string]any{"code": call(shop, "web")})
	if !isErr || !strings.Contains(text, "was revoked by carol (cli,") || restartedAt(t, shop) != prev {
		t.Errorf("a run after the revocation:\n%s", text)
	}

	// An agent's saved runbook is a draft no one can run until a person
	// approves it.
	scale := `/**
 * Scales Deployment web.
 * @param {string} namespace  where
 * @param {integer} replicas  how many
 */
await tools.kubernetes.deployments.scale({ namespace: params.namespace, name: 'web', replicas: params.replicas })
return 'scaled'
`
	saveCode, _ := json.Marshal(scale)
	text, isErr, _ = execute(t, csA, map[string]any{"code": `return await tools.kubecode.runbooks.save({ name: 'scale-web', code: ` + string(saveCode) + ` })`})
	if isErr || !strings.Contains(text, `"state":"draft"`) {
		t.Fatalf("save:\n%s", text)
	}
	// Until a person approves it, other agents' searches do not read
	// the agent's own words.
	if text, _ := callText(t, csA, "search_tools", map[string]any{"query": "scale_web runbook"}); !strings.Contains(text, "a draft no person has approved") || strings.Contains(text, "Scales Deployment web") {
		t.Errorf("search shows a draft's own description:\n%s", text)
	}
	runScale := `return await tools.runbooks.scale_web({ namespace: '` + shop + `', replicas: 2 })`
	text, isErr, _ = execute(t, csA, map[string]any{"code": runScale})
	if !isErr || !strings.Contains(text, "scale-web") || !strings.Contains(text, "is a draft") || replicas(t, shop) != "1" {
		t.Fatalf("an agent's draft ran or was not refused:\n%s", text)
	}
	views, _ = b.RunbookViews(ctx)
	for _, v := range views {
		if v.Name == "scale-web" {
			if !strings.HasPrefix(v.Source, "saved by") || v.State != "draft" {
				t.Errorf("the saved runbook: %+v", v)
			}
			one, three := 1.0, 3.0
			if _, err := b.ApproveRunbook(ctx, "scale-web", v.Version, bridge.Bounds{Namespaces: []string{shop}, Params: map[string]bridge.ParamBound{"replicas": {Min: &one, Max: &three}}}, nil,
				bridge.Decision{By: "alice", Channel: "cli", Approve: true, Verified: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	text, isErr, _ = execute(t, csA, map[string]any{"code": runScale})
	if isErr || !strings.Contains(text, "ran as standard change") || replicas(t, shop) != "2" {
		t.Errorf("the approved saved runbook:\n%s", text)
	}
	text, _, _ = execute(t, csA, map[string]any{"code": strings.Replace(runScale, "replicas: 2", "replicas: 9", 1)})
	if !strings.Contains(text, "parameter replicas is 9, outside 1..3") || replicas(t, shop) != "2" {
		t.Errorf("a saved runbook outside its range:\n%s", text)
	}
}

// TestStandardReadsPortMismatch measures the port-mismatch flow —
// a diagnostic fetch from a pod, the fix, a verifying fetch — as people
// approving: without a standard read every step is a plan; with one,
// only the fix is. The same read in a pod that holds a Secret stays a
// plan.
func TestStandardReadsPortMismatch(t *testing.T) {
	ns := execPods(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probe-service.ts"), []byte(readExample(t, "runbooks/probe-service.ts")), 0o644); err != nil {
		t.Fatal(err)
	}
	b, ledger := runbookReplica(t, dir, bridge.Options{})
	cs := connect(t, b)
	ctx := context.Background()
	// The mismatch: Service web sends to 8080, nginx listens on 80.
	kubectl(t, "-n", ns, "patch", "service", "web", "--type", "json", "-p", `[{"op":"replace","path":"/spec/ports/0/targetPort","value":8080}]`)
	approvals := 0
	// step runs code as an agent would, a person approving each plan, and
	// returns the answer.
	step := func(code string) string {
		t.Helper()
		text, isErr, sc := execute(t, cs, map[string]any{"code": code})
		if sc["plan"] != nil {
			approvals++
			id := approved(t, b, sc)
			text, isErr, _ = execute(t, cs, map[string]any{"code": code, "approve": id})
		}
		if isErr {
			t.Fatalf("step:\n%s\n%s", code, text)
		}
		return text
	}
	direct := `const r = await tools.kubernetes.pods.exec({ namespace: '` + ns + `', name: 'reader', command: ['wget', '-qO-', '-T', '3', 'http://web'] })
return { answered: r.exitCode === 0 }`
	viaRunbook := `return await tools.runbooks.probe_service({ namespace: '` + ns + `', pod: 'reader', url: 'http://web' })`
	fix := func(port int) string {
		return fmt.Sprintf(`await tools.kubernetes.services.patch({ namespace: '%s', name: 'web', patch: [{ op: 'replace', path: '/spec/ports/0/targetPort', value: %d }], type: 'json' })
return 'fixed'`, ns, port)
	}
	flow := func(read string) (int, string, string) {
		approvals = 0
		before := step(read)
		step(fix(80))
		after := step(read)
		return approvals, before, after
	}
	without, before, after := flow(direct)
	t.Logf("port mismatch without a standard read: %d approvals (diagnostic %s, verify %s)", without, firstLine(before), firstLine(after))
	kubectl(t, "-n", ns, "patch", "service", "web", "--type", "json", "-p", `[{"op":"replace","path":"/spec/ports/0/targetPort","value":8080}]`)

	// A person approves the read once, for pod reader in this namespace.
	views, err := b.RunbookViews(ctx)
	if err != nil || len(views) != 1 {
		t.Fatalf("runbooks: %v %v", views, err)
	}
	sc, err := b.ApproveRunbook(ctx, "probe-service", views[0].Version, bridge.Bounds{Namespaces: []string{ns}, Params: map[string]bridge.ParamBound{
		"pod": {Values: []string{"reader"}}, "url": {Pattern: `http://[a-z0-9-]+(:[0-9]+)?(/[^ ]*)?`}}, RunsPerHour: 20}, nil,
		bridge.Decision{By: "alice", Channel: "cli", Approve: true, Verified: true})
	if err != nil {
		t.Fatal(err)
	}
	with, before, after := flow(viaRunbook)
	t.Logf("port mismatch with a standard read: %d approval(s) (diagnostic %s, verify %s)", with, firstLine(before), firstLine(after))
	if without != 3 || with != 1 {
		t.Errorf("approvals per fix: %d without a standard read, %d with; want 3 and 1", without, with)
	}
	if !strings.Contains(before, "ran as standard change "+sc.ID) || !strings.Contains(after, "ran as standard change "+sc.ID) {
		t.Errorf("the reads did not run as the standard change:\n%s\n%s", before, after)
	}
	if strings.Contains(ledger.String(), "hunter2") {
		t.Error("a Secret's value reached the ledger")
	}

	// In a pod that mounts a Secret the same read is no standard change.
	if _, err := b.ApproveRunbook(ctx, "probe-service", views[0].Version, bridge.Bounds{Namespaces: []string{ns}}, nil,
		bridge.Decision{By: "alice", Channel: "cli", Approve: true, Verified: true}); err != nil {
		t.Fatal(err)
	}
	text, _, scm := execute(t, cs, map[string]any{"code": strings.Replace(viaRunbook, "pod: 'reader'", "pod: 'client'", 1)})
	if scm["plan"] == nil || !strings.Contains(text, "outside its standard change") || !strings.Contains(text, "the command can read a Secret") {
		t.Errorf("a standard read in a pod holding a Secret:\n%s", text)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestRunbooksPageInABrowser: a person opens the runbooks on the
// approval page with a one-time link from the CLI, reads a draft's code,
// approves it as a standard change with bounds in a real browser, sees
// the agent's run listed, and revokes it: the next run is refused. With
// KUBECODE_SCREENSHOTS=DIR it saves the page there (docs/approval-runbooks.png).
func TestRunbooksPageInABrowser(t *testing.T) {
	ctx := browser(t)
	ns := webDeployment(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "restart-deployment.ts"), []byte(readExample(t, "runbooks/restart-deployment.ts")), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := runbookReplica(t, dir, bridge.Options{})
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = b.HTTPHandler(&broker.HTTPOptions{AllowedHosts: []string{"127.0.0.1"},
		Approvals: &broker.ApprovalOptions{URL: base + "/approvals", Announce: &lockedBuffer{}, LocalUser: "local:alice", CLIKey: "cli-key"}})
	srv.Start()
	t.Cleanup(srv.Close)
	cs := connect(t, b)
	do, text := steps(t, ctx), pageText(t, ctx)
	req, _ := http.NewRequest(http.MethodPost, base+"/approvals/api/runbooks/link", nil)
	req.Header.Set("Authorization", "Bearer cli-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Link string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Link == "" {
		t.Fatalf("link: %v %+v", err, out)
	}
	resp.Body.Close()

	do(chromedp.EmulateViewport(1000, 900), chromedp.Navigate(out.Link), chromedp.Click(chromedp.ID("open")), chromedp.WaitVisible(chromedp.ID("rb-restart-deployment")))
	if got := text("#state-restart-deployment"); got != "draft" {
		t.Errorf("state %q, want draft", got)
	}
	if got := text("#code-restart-deployment"); !strings.Contains(got, "await tools.kubernetes.deployments.rollout.restart({ namespace: params.namespace, name: params.name })\nreturn") {
		t.Errorf("the code as the page shows it:\n%s", got)
	}
	do(chromedp.SendKeys(chromedp.ID("ns-restart-deployment"), ns), chromedp.SendKeys(chromedp.ID("pattern-restart-deployment-name"), "web"),
		chromedp.Click(chromedp.ID("approve-std-restart-deployment")), chromedp.WaitVisible(chromedp.ID("message")))
	if got := text("#message"); !strings.Contains(got, "Standard change std-") || !strings.Contains(got, "name matching web") {
		t.Fatalf("after approving: %s", got)
	}
	if got := text("#state-restart-deployment"); got != "standard" {
		t.Errorf("state after approval %q", got)
	}
	call := `return await tools.runbooks.restart_deployment({ namespace: '` + ns + `', name: 'web' })`
	res, isErr, _ := execute(t, cs, map[string]any{"code": call})
	if isErr || !strings.Contains(res, "ran as standard change") {
		t.Fatalf("the agent's run:\n%s", res)
	}
	do(chromedp.Navigate(base+"/approvals/runbooks"), chromedp.WaitVisible(chromedp.CSS("ul.runs")))
	if got := text("ul.runs"); !strings.Contains(got, "exec-") || !strings.Contains(got, `"name":"web"`) {
		t.Errorf("the runs the page lists: %s", got)
	}
	if got := text(".std"); !strings.Contains(got, "approved by local:alice (page,") {
		t.Errorf("the standard change: %s", got)
	}
	if dir := os.Getenv("KUBECODE_SCREENSHOTS"); dir != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err = os.WriteFile(filepath.Join(dir, "approval-runbooks.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// At a phone's width nothing is wider than the screen.
	do(chromedp.EmulateViewport(390, 844))
	if width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || width > 390 {
		t.Errorf("the runbooks page at 390 px is %d px wide (%v)", width, err)
	}
	do(chromedp.EmulateViewport(1000, 900))
	do(chromedp.Click(chromedp.CSS(`button[id^="revoke-std-"]`)), chromedp.WaitVisible(chromedp.ID("message")))
	if got := text("#message"); !strings.HasPrefix(got, "Standard change std-") || !strings.Contains(got, "revoked: the next run") {
		t.Errorf("after revoking: %s", got)
	}
	res, isErr, _ = execute(t, cs, map[string]any{"code": call})
	if !isErr || !strings.Contains(res, "was revoked by local:alice (page,") {
		t.Errorf("a run after the page's revocation:\n%s", res)
	}
	// The link opened the runbooks only: no plan.
	do(chromedp.Navigate(base + "/approvals/plan-0123456789abcdef"))
	if got := text("h1"); !strings.Contains(got, "Not this link's plan") {
		t.Errorf("a runbooks link opened a plan page: %s", got)
	}
}

// TestRunbookSecretCanary: what a runbook hands back — its answer, its
// error, the lines of its dry run — passes the one secret boundary in
// the bridge like any call's result: a Secret's value copied into a
// ConfigMap, read by a standard run and returned raw, base64 and in a
// thrown error, reaches no answer, ledger line, log line or listing.
func TestRunbookSecretCanary(t *testing.T) {
	const canary = "canary-runbook-7f3e9a1c52d84b06"
	ns := cp.Namespace(t)
	kubectl(t, "-n", ns, "create", "secret", "generic", "db", "--from-literal=password="+canary)
	kubectl(t, "-n", ns, "create", "configmap", "copy", "--from-literal=url=postgres://app:"+canary+"@db")
	dir := t.TempDir()
	leak := `/**
 * Reads a ConfigMap and the Secret it copied, and hands them back.
 * @param {string} namespace  where
 * @param {boolean} fail  throw instead of returning
 */
const cm = await tools.kubernetes.configmaps.get({ namespace: params.namespace, name: 'copy' })
const s = await tools.kubernetes.secrets.get({ namespace: params.namespace, name: 'db' })
await tools.kubernetes.configmaps.patch({ namespace: params.namespace, name: 'copy', patch: { data: { seen: 'yes' } } })
const url = cm.data?.url ?? ''
if (params.fail) throw new Error('could not reach ' + url + ' with ' + JSON.stringify(s.data))
return { url, quoted: JSON.stringify({ url }), secret: s.data }
`
	if err := os.WriteFile(filepath.Join(dir, "leak.ts"), []byte(leak), 0o644); err != nil {
		t.Fatal(err)
	}
	b, ledger, logs := runbookReplicaLog(t, dir, bridge.Options{})
	cs := connect(t, b)
	ctx := context.Background()
	views, err := b.RunbookViews(ctx)
	if err != nil || len(views) != 1 {
		t.Fatalf("runbooks: %v %v", views, err)
	}
	example, _ := json.Marshal(map[string]any{"namespace": ns, "fail": false})
	sc, err := b.ApproveRunbook(ctx, "leak", views[0].Version, bridge.Bounds{Namespaces: []string{ns}}, example,
		bridge.Decision{By: "alice", Channel: "cli", Approve: true, Verified: true})
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, fail := range []string{"false", "true"} {
		text, _, sc2 := execute(t, cs, map[string]any{"code": `return await tools.runbooks.leak({ namespace: '` + ns + `', fail: ` + fail + ` })`})
		raw, _ := json.Marshal(sc2)
		answers = append(answers, text, string(raw))
		if fail == "false" && !strings.Contains(text, "ran as standard change") {
			t.Errorf("the run:\n%s", text)
		}
	}
	views, _ = b.RunbookViews(ctx)
	listing, _ := json.Marshal(views)
	preview, _ := json.Marshal(sc.Preview)
	b64 := base64.StdEncoding.EncodeToString([]byte("postgres://app:" + canary + "@db"))
	for what, s := range map[string]string{"answers": strings.Join(answers, "\n"), "ledger": ledger.String(), "log": logs.String(), "listing": string(listing), "preview": string(preview)} {
		for _, form := range []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)), b64[4 : len(b64)-4]} {
			if strings.Contains(s, form) {
				t.Errorf("the %s carry the canary (%q):\n%s", what, form, s)
			}
		}
	}
	t.Logf("the answers:\n%s\n%s", answers[0], answers[2])
	if !strings.Contains(answers[0], "[hidden: Secret "+ns+"/db key password]") {
		t.Errorf("the answer does not say what the boundary hid:\n%s", answers[0])
	}
}
