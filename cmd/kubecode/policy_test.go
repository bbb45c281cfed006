package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/bridge/policy"
)

// TestReadmePolicy: the complete policy file the safety page shows loads,
// and means what it says.
func TestReadmePolicy(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "safety.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "A complete policy file")
	_, rest, ok2 := strings.Cut(rest, "```yaml\n")
	body, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/safety.md has no complete policy file")
	}
	path := filepath.Join(t.TempDir(), "safety.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &globalFlags{policy: path}
	got, key, err := g.loadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Policy{Mode: policy.ModePlan, MaxEdits: 3, Namespaces: []string{"shop", "live"}, DeniedKinds: []string{"NetworkPolicy"},
		MaxChanges: 10, PlanTTL: policy.Duration(15 * time.Minute), Approval: policy.ApprovalHuman, TwoPerson: []string{policy.TwoProtectedDelete, policy.TwoClusterScoped},
		ExecReads:                [][]string{{"cat", "/etc/nginx/nginx.conf"}, {"ls", "*"}},
		PermissionWriteApprovers: 2, PrivilegedPodNamespaces: []string{"cni-system"}, ApprovalChannels: []string{"page", "cli", "elicitation", "terminal"}}
	if d := cmp.Diff(want, got); d != "" || key != nil {
		t.Errorf("policy (-want +got):\n%s (key %q)", d, key)
	}
	g.changes = "read-only"
	if got, _, _ := g.loadPolicy(); got.Mode != policy.ModeReadOnly {
		t.Errorf("--changes read-only gave mode %q", got.Mode)
	}
}
