package broker_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// formClient is an MCP client that declares form elicitation and answers
// every question with action, as a ServiceAccount's own client could.
func formClient(action string, asked *string) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			*asked = req.Params.Message
			return &mcp.ElicitResult{Action: action}, nil
		}})
}

// TestElicitationAppliesTheApproverRules: the red-team's finding as
// written — under `serve --auth passthrough`, a ServiceAccount's own MCP
// client that declares form elicitation and answers accept got its plan
// applied ("self-approval"), though the page refuses that token. Now the
// elicitation applies the page's rules: a workload's identity approves
// nothing, and the answer says which channel refused and why.
func TestElicitationAppliesTheApproverRules(t *testing.T) {
	ns := webDeployment(t)
	cs, err := k8s.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	token := serviceAccount(t, cs, ns, "bob")
	// bob may scale the Deployment: his plan passes its dry run.
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-edit"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "bob", Namespace: ns}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := kubernetes.New(cp.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	br := bridge.New([]bridge.Provider{a}, &bridge.Options{})
	t.Cleanup(func() { _ = br.Close() })
	b := broker.New(br, &broker.Options{Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(b.HTTPHandler(&broker.HTTPOptions{
		Authenticate: func(ctx context.Context, token string) (*catalog.Caller, error) {
			return a.Authenticate(ctx, token, true)
		}}))
	t.Cleanup(srv.Close)
	var asked string
	c, err := formClient("accept", &asked).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	text, isErr, _ := execute(t, c, map[string]any{"code": `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
return 'done'`})
	if asked == "" {
		t.Fatal("the client was never asked: the plan went another way")
	}
	if !isErr || !strings.Contains(text, "not applied: the elicitation refused this approval") || !strings.Contains(text, "a workload's identity, not a person's") {
		t.Errorf("answer (error %v):\n%s", isErr, text)
	}
	if got := replicas(t, ns); got != "1" {
		t.Errorf("kubectl: %s replicas: a ServiceAccount approved its own plan", got)
	}
}

// TestApprovalChannels: a team that turns a channel off is not offered
// it: the client is never asked (a seat that cannot approve does not
// offer to), the plan waits for the channels left, and a decision sent
// through it anyway is refused, saying which channel and why.
func TestApprovalChannels(t *testing.T) {
	ns := webDeployment(t)
	b, _ := newBrokerPolicy(t, cp.Admin, policy.Policy{ApprovalChannels: []string{"page", "cli"}})
	var asked string
	cs := connectWith(t, b, formClient("accept", &asked))
	text, _, sc := execute(t, cs, map[string]any{"code": `await tools.kubernetes.deployments.scale({ namespace: '` + ns + `', name: 'web', replicas: 2 })
return 'done'`})
	if asked != "" || !strings.Contains(text, "dry run only: nothing was applied") || !strings.Contains(text, "kubecode approve ") {
		t.Errorf("the client was asked (%q), or the plan does not wait for the channels left:\n%s", asked, text)
	}
	if _, err := b.Decide(context.Background(), planID(t, sc), bridge.Decision{By: "u", Channel: bridge.ChannelElicitation, Approve: true}); err == nil ||
		!strings.Contains(err.Error(), "cannot be approved through elicitation: the policy's approvalChannels allow only page, cli") {
		t.Errorf("an approval through elicitation: %v", err)
	}
	if got := replicas(t, ns); got != "1" {
		t.Errorf("kubectl: %s replicas", got)
	}
	if err := (policy.Policy{ApprovalChannels: []string{"email"}}).Check(); err == nil || !strings.Contains(err.Error(), "unknown approval channel") {
		t.Errorf("Check: %v", err)
	}
}
