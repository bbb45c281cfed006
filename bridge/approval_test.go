package bridge

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDecide: the rules of people's decisions on a plan, each refusal a
// clear message, each decision a ledger line.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	type step struct {
		by      string
		approve bool
		err     string // "" for accepted
	}
	for _, tc := range []struct {
		name      string
		user, two string
		noSelf    string
		at        time.Duration // when the decisions are made, after the plan
		steps     []step
		state     string
	}{
		{name: "one approval applies", steps: []step{{"alice", true, ""}}, state: StateApproved},
		{name: "a denial is final", steps: []step{{"alice", false, ""}, {"bob", true, "denied already by alice (test, "}}, state: StateDenied},
		{name: "an approved plan is not decided again", steps: []step{{"alice", true, ""}, {"bob", false, "approved already by alice"}}, state: StateApproved},
		{name: "self-approval is marked, and allowed for one approver", user: "carol", steps: []step{{"carol", true, ""}}, state: StateApproved},
		{name: "two-person rule: not the user it acts for", user: "carol", two: "Node n1 is cluster-scoped",
			steps: []step{{"carol", true, "needs two approvers other than carol"}, {"alice", true, ""}}, state: StatePending},
		{name: "two-person rule: not twice the same", two: "every change needs two approvers",
			steps: []step{{"alice", true, ""}, {"alice", true, "alice approved it already"}, {"bob", true, ""}}, state: StateApproved},
		{name: "two-person rule: one denial is enough", two: "x",
			steps: []step{{"alice", true, ""}, {"bob", false, ""}}, state: StateDenied},
		{name: "two-person rule: people signed in, not local links", two: "x",
			steps: []step{{"local:alice", true, "needs two people, each approving as themselves"}}, state: StatePending},
		{name: "a change that widens access: not the user it acts for, even alone", user: "carol", noSelf: "RoleBinding shop/admin widens access",
			steps: []step{{"carol", true, "cannot be approved by carol, for whom it acts: RoleBinding shop/admin widens access"}, {"alice", true, ""}}, state: StateApproved},
		{name: "expired", at: 16 * time.Minute, steps: []step{{"alice", true, "expired at 2026-11-25T12:15:00Z"}}, state: StatePending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := now
			var ledger bytes.Buffer
			b := New(nil, &Options{Now: func() time.Time { return clock }, Ledger: &ledger})
			defer b.Close()
			p := &Plan{ID: "plan-0123456789abcdef", Expires: now.Add(15 * time.Minute), User: tc.user, TwoPerson: tc.two, NoSelf: tc.noSelf,
				Changes: []PlanChange{{Op: "kubernetes.nodes.delete", Object: "Node n1"}}}
			ctx := context.Background()
			if _, err := b.Propose(ctx, p, "token", "plan text"); err != nil {
				t.Fatal(err)
			}
			clock = now.Add(tc.at)
			for _, s := range tc.steps {
				_, err := b.Decide(ctx, p.ID, Decision{By: s.by, Channel: "test", Approve: s.approve, Verified: !strings.HasPrefix(s.by, "local:")})
				switch {
				case s.err == "" && err != nil:
					t.Errorf("%s: %v", s.by, err)
				case s.err != "" && (err == nil || !strings.Contains(err.Error(), s.err)):
					t.Errorf("%s: %v, want %q", s.by, err, s.err)
				}
			}
			got, err := b.Pending(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.state, got.State()); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			for _, d := range got.Decisions {
				if d.Self != (d.By == tc.user) {
					t.Errorf("decision by %s marked self=%v", d.By, d.Self)
				}
				if !strings.Contains(ledger.String(), `"plan":"`+p.ID+`"`) || !strings.Contains(ledger.String(), d.By+" (test, ") {
					t.Errorf("the ledger lacks %s's decision:\n%s", d.By, ledger.String())
				}
			}
		})
	}
}

// TestDecideUnknownPlan: an id no store holds is a clear error.
func TestDecideUnknownPlan(t *testing.T) {
	b := New(nil, nil)
	defer b.Close()
	for _, id := range []string{"plan-ffff", "", "../plan-1", "plan-0123\x00"} {
		_, err := b.Decide(context.Background(), id, Decision{By: "alice", Channel: "test", Approve: true})
		if err == nil || !strings.Contains(err.Error(), "waiting for approval here") && !strings.Contains(err.Error(), "needs who") {
			t.Errorf("%q: %v", id, err)
		}
	}
	if _, err := b.Decide(context.Background(), "plan-1", Decision{Channel: "test", Approve: true}); err == nil || !strings.Contains(err.Error(), "needs who makes it") {
		t.Errorf("a decision by nobody: %v", err)
	}
}

// TestRecordsAreSealed: a record this server did not seal — a decision
// written into the store by hand — is refused.
func TestRecordsAreSealed(t *testing.T) {
	store := NewMemoryApprovals(nil)
	b := New(nil, &Options{Approvals: store})
	defer b.Close()
	ctx := context.Background()
	p := &Plan{ID: "plan-00000000000000aa", Expires: time.Now().Add(time.Minute), Changes: []PlanChange{{Op: "x", Object: "y"}}}
	if _, err := b.Propose(ctx, p, "token", "text"); err != nil {
		t.Fatal(err)
	}
	_, version, _ := store.Get(ctx, p.ID)
	forged := `{"id":"plan-00000000000000aa","token":"token","approvers":1,"decisions":[{"by":"alice","channel":"page","approve":true}]}`
	if ok, err := store.Update(ctx, p.ID, version, []byte(forged)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := b.Pending(ctx, p.ID); err == nil || !strings.Contains(err.Error(), "seal does not match") {
		t.Errorf("a forged record: %v", err)
	}
}
