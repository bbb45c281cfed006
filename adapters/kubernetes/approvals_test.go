package kubernetes

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecode/kubecode/bridge"
)

// TestApprovalsShared: two replicas keep plans in one namespace: a plan
// proposed on one is seen and decided on the other; decisions made at
// once on both (a two-person plan) are both kept, none lost to the other;
// a restart (a new store) loses nothing.
func TestApprovalsShared(t *testing.T) {
	ns := cp.Namespace(t)
	key := []byte("replicas-share-this-key-0123456789")
	replica := func() *bridge.Bridge {
		a, err := NewApprovals(cp.Admin, ns)
		if err != nil {
			t.Fatal(err)
		}
		b := bridge.New(nil, &bridge.Options{PlanKey: key, Approvals: a})
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	one, two := replica(), replica()
	ctx := context.Background()
	p := &bridge.Plan{ID: "plan-00aa11bb22cc33dd", Expires: time.Now().Add(15 * time.Minute).UTC().Truncate(time.Second),
		TwoPerson: "every change needs two approvers", Changes: []bridge.PlanChange{{Op: "kubernetes.deployments.scale", Object: "Deployment shop/web"}}}
	if _, err := one.Propose(ctx, p, "signed-token", "plan text"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, b := range []*bridge.Bridge{one, two} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.Decide(ctx, p.ID, bridge.Decision{By: []string{"alice", "bob"}[i], Channel: "page", Approve: true, Verified: true}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := replica().Pending(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State() != bridge.StateApproved || len(got.Decisions) != 2 || got.Token != "signed-token" || got.Text != "plan text" {
		t.Errorf("after two decisions on two replicas: %s %+v", got.State(), got)
	}
	list, err := two.PendingPlans(ctx)
	if err != nil || len(list) != 1 || list[0].ID != p.ID {
		t.Errorf("list: %v %v", list, err)
	}
	for _, id := range []string{"plan-ffff", "plan-../x", "kube-root-ca.crt", "plan-00AA11"} {
		if _, err := two.Decide(ctx, id, bridge.Decision{By: "eve", Channel: "page", Approve: true}); err == nil || !strings.Contains(err.Error(), "waiting for approval here") {
			t.Errorf("%q: %v", id, err)
		}
	}
}
