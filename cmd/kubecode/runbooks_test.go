package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRunbooksCLI: a person at the terminal lists the operator's
// runbooks, reads one with its dry run, approves it once as a standard
// change and revokes it; an agent's runs between apply without a plan. A
// runbook that fails the type check cannot be approved.
func TestRunbooksCLI(t *testing.T) {
	ctx := context.Background()
	ns := webNamespace(t)
	dir := t.TempDir()
	restart := "/**\n * Restarts a Deployment's pods.\n * @param {string} namespace  where\n * @param {string} name  the Deployment\n */\n" +
		"await tools.kubernetes.deployments.rollout.restart({ namespace: params.namespace, name: params.name })\nreturn 'restarted'\n"
	broken := "/**\n * Scales, with a misspelt field.\n * @param {string} namespace  where\n */\n" +
		"await tools.kubernetes.deployments.scale({ namespace: params.namespace, name: 'web', replicaz: 2 })\n"
	for name, code := range map[string]string{"restart-deployment": restart, "broken": broken} {
		if err := os.WriteFile(filepath.Join(dir, name+".ts"), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "approvals.json")
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	u := startHTTP(t, []string{"KUBECODE_APPROVALS_FILE=" + file}, "--runbooks", dir, "--ledger", ledger)
	waitReady(t, u)
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "KUBECODE_APPROVALS_FILE="+file)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := cli(args...)
		if err != nil {
			t.Fatalf("kubecode %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	out := must("runbooks")
	m := regexp.MustCompile(`restart-deployment  version ([0-9a-f]{12})  \[draft\]  \(folder\)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "call: tools.runbooks.restart_deployment({ namespace: string, name: string })") {
		t.Fatalf("kubecode runbooks:\n%s", out)
	}
	version := m[1]
	out = must("runbooks", "show", "restart-deployment", "--example", "namespace="+ns, "--example", "name=web")
	if !strings.Contains(out, "await tools.kubernetes.deployments.rollout.restart(") ||
		!strings.Contains(out, "kubernetes.deployments.rollout.restart Deployment "+ns+"/web") ||
		!strings.Contains(out, "approve it: kubecode runbooks approve restart-deployment --version "+version) {
		t.Errorf("kubecode runbooks show:\n%s", out)
	}
	if out, err := cli("runbooks", "approve", "broken", "--version", "000000000000", "--namespace", ns); err == nil || !strings.Contains(out, "is at version") {
		t.Errorf("approving another version than the runbook's: %v\n%s", err, out)
	}
	listed := must("runbooks")
	if !strings.Contains(listed, "⚠ fails its type check, so it does not run: broken.ts:5:") || !strings.Contains(listed, "replicaz") {
		t.Errorf("kubecode runbooks does not say broken fails its type check:\n%s", listed)
	}
	bv := regexp.MustCompile(`broken  version ([0-9a-f]{12})`).FindStringSubmatch(listed)
	if out, err := cli("runbooks", "approve", "broken", "--version", bv[1], "--namespace", ns); err == nil || !strings.Contains(out, "fails its type check") || !strings.Contains(out, "replicaz") {
		t.Errorf("approving a runbook that fails its type check: %v\n%s", err, out)
	}
	out = must("runbooks", "approve", "restart-deployment", "--version", version, "--namespace", ns, "--pattern", "name=web", "--runs-per-hour", "3", "--for", "24h")
	id := regexp.MustCompile(`standard change (std-[0-9a-f]+)`).FindStringSubmatch(out)
	if id == nil || !strings.Contains(out, "approved by local:") || !strings.Contains(out, "name matching web") || !strings.Contains(out, "3 runs an hour") {
		t.Fatalf("kubecode runbooks approve:\n%s", out)
	}

	c, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
		"code": `return await tools.runbooks.restart_deployment({ namespace: '` + ns + `', name: 'web' })`}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, "ran as standard change "+id[1]) {
		t.Fatalf("the agent's run:\n%s", text)
	}
	out = must("runbooks")
	if !strings.Contains(out, "restart-deployment  version "+version+"  [standard]") || !strings.Contains(out, "standard change "+id[1]+" [active]") ||
		!strings.Contains(out, `{"name":"web","namespace":"`+ns+`"}`) {
		t.Errorf("kubecode runbooks after a run:\n%s", out)
	}
	out = must("runbooks", "revoke", id[1], "--reason", "the incident is over")
	if !strings.Contains(out, "revoked by local:") {
		t.Errorf("kubecode runbooks revoke:\n%s", out)
	}
	res, err = c.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
		"code": `return await tools.runbooks.restart_deployment({ namespace: '` + ns + `', name: 'web' })`}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "was revoked by local:") || !strings.Contains(text, "the incident is over") {
		t.Errorf("a run after the revocation:\n%s", text)
	}

	// The audit names the runbook, its version and parameters, the
	// standard change and the people who approved and revoked it.
	out = must("audit", ledger)
	for _, want := range []string{
		"runbook restart-deployment version " + version + ` params {"name":"web","namespace":"` + ns + `"} standard change ` + id[1] + " called by exec-",
		"standard change " + id[1] + " of runbook restart-deployment version " + version + " approved by local:",
		"standard change " + id[1] + " of runbook restart-deployment version " + version + " revoked by local:",
		"standard change " + id[1] + " of runbook restart-deployment (version " + version + "), approved by local:",
		" · fail 0 · ", // calling a runbook is no failure
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubecode audit does not say %q:\n%s", want, out)
		}
	}
}

// TestTwoPeopleApproveAsThemselves: on a server without --auth but with
// --approver-groups (the demo's), a plan that needs two people is
// approved by two members, each with their own token in kubecode
// approve; the local key, one person twice, or an unknown token are not
// enough. The agent is told only a way that works.
func TestTwoPeopleApproveAsThemselves(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	file := filepath.Join(t.TempDir(), "approvals.json")
	u := startHTTP(t, []string{"KUBECODE_APPROVALS_FILE=" + file}, "--approver-groups", "kubecode:reviewers")
	waitReady(t, u)
	c, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	code := `await tools.kubernetes.rolebindings.create({ namespace: '` + ns + `', object: {
  metadata: { name: 'view-carol' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
  subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'carol' }] } })
return 'granted'`
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	id := regexp.MustCompile(`approve: "(plan-[0-9a-f]+)"`).FindStringSubmatch(text)
	if id == nil || !strings.Contains(text, "It needs 2 people") || !strings.Contains(text, "kubecode approve "+id[1]+" --token THEIR-TOKEN") ||
		strings.Contains(text, "--auth, and approve") {
		t.Fatalf("the plan's answer:\n%s", text)
	}
	// A server that cannot know who people are says so, and names what
	// would work.
	plain := startHTTP(t, []string{"KUBECODE_APPROVALS_FILE=" + filepath.Join(t.TempDir(), "approvals.json")})
	waitReady(t, plain)
	pc, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: plain + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	res, err = pc.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "This server cannot take two people's approvals") || !strings.Contains(text, "--approver-groups") {
		t.Errorf("a plan for two on a server that cannot know who people are:\n%s", text)
	}

	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "KUBECODE_APPROVALS_FILE="+file)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	alice, bob := controlplaneReviewer(t, "alice"), controlplaneReviewer(t, "bob")
	for _, tc := range []struct {
		args []string
		ok   bool
		want string
	}{
		{[]string{"approve", id[1]}, false, "needs two people, each approving as themselves"},
		{[]string{"approve", id[1], "--token", "not-a-token"}, false, "neither the server's CLI key nor a token the Kubernetes API server accepts"},
		{[]string{"approve", id[1], "--token", alice}, true, "approved by alice (cli,"},
		{[]string{"approve", id[1], "--token", alice}, false, "alice approved it already"},
		{[]string{"approve", id[1], "--token", bob}, true, "[approved]"},
	} {
		out, err := cli(tc.args...)
		if (err == nil) != tc.ok || !strings.Contains(out, tc.want) {
			t.Errorf("kubecode %s: %v\n%s\nwant %q", strings.Join(tc.args[:2], " "), err, out, tc.want)
		}
	}
	// A person who decides with their own token runs nothing here: a
	// script would act with the server's identity on their word.
	req, _ := http.NewRequest(http.MethodPost, u+"/approvals/api/exec", strings.NewReader(`{"code": "return 1"}`))
	req.Header.Set("Authorization", "Bearer "+alice)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a person's token ran a script: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	res, err = c.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code, "approve": id[1]}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, "1 of 1 changes applied") || !strings.Contains(text, "alice (cli,") || !strings.Contains(text, "bob (cli,") {
		t.Errorf("the approved run:\n%s", text)
	}
}

// controlplaneReviewer is one of the test cluster's people's token.
func controlplaneReviewer(t *testing.T, name string) string {
	tok := cp.ReviewerTokens[name]
	if tok == "" {
		t.Fatalf("the control plane has no person %s", name)
	}
	return tok
}
