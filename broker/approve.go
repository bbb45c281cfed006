package broker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubecode/kubecode/bridge"
)

// approvalPoll is how often a wait for a decision reads a store that
// cannot say when it changed (the cluster's).
const approvalPoll = 500 * time.Millisecond

// defaultApprovalWait is Options.ApprovalWait's default.
const defaultApprovalWait = 2 * time.Minute

// propose keeps an execution's plan for people to decide on, and says on
// the server's log (never to the model) where they can.
func (b *Broker) propose(ctx context.Context, ex *Execution) error {
	pd, err := b.bridge.Propose(ctx, ex.Plan, ex.Token, PlanText(ex.Plan))
	if err != nil {
		return err
	}
	ex.Pending, ex.where = pd, b.approveWhere(pd.ID)
	if pd.Approvers > 1 {
		ex.where = b.approveWhereTwo(pd.ID)
	}
	if pg := b.approvalPage(); pg != nil {
		ex.ApprovalURL = pg.planURL(pd.ID)
		pg.announce(pd)
	} else {
		b.opts.Logger.Info("a plan waits for approval: approve it with kubecode approve (or deny)", "plan", pd.ID, "changes", pd.Changes)
	}
	return nil
}

// awaitApproval waits, up to Options.ApprovalWait, for people to decide on
// plan id, and returns the plan to apply and who approved it. A plan still
// pending, denied, expired, unknown or made by another script is an error
// wrapping bridge.ErrPlan that says what to do.
func (b *Broker) awaitApproval(ctx context.Context, id, code string, opts *ExecuteOptions) (*bridge.Plan, string, error) {
	id = strings.TrimSpace(id)
	if strings.Contains(id, ".") || !strings.HasPrefix(id, "plan-") {
		return nil, "", fmt.Errorf("%w: approve takes the plan's id (\"plan-…\" from the plan), and a person must approve the plan first: this server does not let the agent approve its own plans", bridge.ErrPlan)
	}
	wait := b.opts.ApprovalWait
	if wait <= 0 {
		wait = defaultApprovalWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if opts.Progress != nil {
		start := time.Now()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				opts.Progress(func(p *Progress) {
					p.Last = fmt.Sprintf("waiting for a person to approve %s (%s)", id, time.Since(start).Round(time.Second))
				})
				select {
				case <-stop:
					return
				case <-wctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	pd, err := b.bridge.Await(wctx, id, approvalPoll)
	if err != nil {
		return nil, "", err
	}
	if ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	// The plan must be this script's before anything is said about it.
	plan, err := b.bridge.Open(pd.Token, code)
	if err != nil {
		return nil, "", err
	}
	if plan.ID != id {
		return nil, "", fmt.Errorf("%w: the record of plan %s holds another plan: plan again", bridge.ErrPlan, id)
	}
	if plan.TwoPerson != "" && pd.Approvers < 2 { // the signed plan says how many
		pd.Approvers = 2
	}
	switch pd.State() {
	case bridge.StateDenied:
		return nil, "", fmt.Errorf("%w: plan %s was denied by %s: nothing was applied. Ask the user what they want changed, then plan again", bridge.ErrPlan, id, pd.Decided())
	case bridge.StatePending:
		where := b.approveWhere(id)
		need := ""
		if pd.Approvers > 1 {
			need = fmt.Sprintf(" (it needs %d approvers, %d so far: %s)", pd.Approvers, len(pd.Decisions), pd.Why)
		}
		return nil, "", fmt.Errorf("%w: plan %s is still waiting for a person's approval%s; nothing was applied. %s. Then call execute_code again with the same code and approve: %q to wait for the decision again (the plan can be approved until %s)",
			bridge.ErrPlan, id, need, where, id, pd.Expires.Format(time.RFC3339))
	}
	return plan, pd.Decided(), nil
}

// approveWhere says where a person approves plan id, for the model.
func (b *Broker) approveWhere(id string) string {
	if pg := b.approvalPage(); pg != nil {
		switch {
		case pg.opts.Authenticate != nil:
			return fmt.Sprintf("Ask the user to approve it on the approval page (%s, signed in with their own token) or in a terminal with `kubecode approve %s --server %s`", pg.planURL(id), id, pg.base.Scheme+"://"+pg.base.Host)
		case pg.opts.NoLinks:
			return fmt.Sprintf("Ask the user to approve it in a terminal where the server runs with `kubecode approve %s` (or to open it in a browser with the link `kubecode plans %s --link` prints)", id, id)
		}
		return fmt.Sprintf("Ask the user to approve it on the approval page (the one-time link the server printed to its terminal, or a new one from `kubecode plans %s --link`) or in a terminal with `kubecode approve %s`", id, id)
	}
	return fmt.Sprintf("Ask the user to approve it in a terminal with `kubecode approve %s`", id)
}

// approveWhereTwo says, for the model, where two people approve plan
// id, each as themselves: only a way that can work.
func (b *Broker) approveWhereTwo(id string) string {
	pg := b.approvalPage()
	switch {
	case pg != nil && pg.opts.Authenticate != nil:
		return fmt.Sprintf("Ask two people to approve it, each signed in with their own token: on the approval page (%s) or in a terminal with `kubecode approve %s --server %s --token THEIR-TOKEN`", pg.planURL(id), id, pg.base.Scheme+"://"+pg.base.Host)
	case pg != nil && pg.opts.People != nil:
		return fmt.Sprintf("Ask two people to approve it, each as themselves with their own Kubernetes token, in a terminal where the server runs: `kubecode approve %s --token THEIR-TOKEN`; the approval page's link and the plain `kubecode approve` act as one local user, which is not enough", id)
	}
	return "This server cannot take two people's approvals: it has no way to know who they are. Tell the user the plan needs a server run with --auth (people sign in with their own tokens) or with --approver-groups (members approve with their own token), or a change that needs one approver"
}

// PlanText renders a plan for the people who decide on it, the same in
// the tool result, the elicitation, the page and the CLI: each change,
// with what it is and what it does (Secret values never appear).
func PlanText(p *bridge.Plan) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "plan %s: %d change(s), %s", p.ID, len(p.Changes), checkedHow(p.Changes))
	if p.User != "" {
		u, _ := visible(p.User)
		fmt.Fprintf(&sb, ", acting for %s", u)
	}
	sb.WriteString("\n")
	writeChanges(&sb, p.Changes)
	if p.TwoPerson != "" {
		why, _ := visible(p.TwoPerson)
		fmt.Fprintf(&sb, "needs two approvers other than the user it acts for: %s\n", why)
	}
	return strings.TrimRight(sb.String(), "\n")
}

// checkedHow says how a plan's changes were checked: a command or an
// upstream tool has no dry run, and its line says so ("checked: … no dry
// run …"); the header must not claim one for them.
func checkedHow(changes []bridge.PlanChange) string {
	without := 0
	for _, c := range changes {
		if len(c.Diff) > 0 && strings.HasPrefix(c.Diff[0], "checked: ") && strings.Contains(c.Diff[0], "no dry run") {
			without++
		}
	}
	switch {
	case without == 0:
		return "checked with a server-side dry run"
	case without == len(changes):
		return "none has a dry run (each says how it was checked)"
	}
	return fmt.Sprintf("checked with a server-side dry run, but for %d that has none (it says how it was checked)", without)
}

// Decide records a person's decision on plan id, as the approval page and
// the CLI do.
func (b *Broker) Decide(ctx context.Context, id string, d bridge.Decision) (*bridge.Pending, error) {
	return b.bridge.Decide(ctx, id, d)
}
