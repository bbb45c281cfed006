package broker_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/autopsy"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/broker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAutopsy: for each rule of the autopsy, a safe script and an unsafe
// one run against the living cluster (planned, then approved, as an agent
// would) and the ledger alone tells them apart.
func TestAutopsy(t *testing.T) {
	skipUnderRace(t)
	permissive := policy.Policy{MaxEdits: -1, ForceFullReplace: true, AllowUngracefulDelete: true, MaxChanges: -1}
	for _, tc := range []struct {
		flag           string
		safe, unsafe   string
		unsafeVerdict  string
		unsafeApplyNow bool // the unsafe script runs in apply mode, unplanned
	}{
		{flag: autopsy.FlagBroadPatch,
			safe:   `await tools.kubernetes.configmaps.patch({ namespace: NS, name: 'cfg', patch: { data: { a: '2' } } })`,
			unsafe: `await tools.kubernetes.configmaps.patch({ namespace: NS, name: 'cfg', patch: { data: { a: '3', b: '3', c: '3', d: '3' } } })`},
		{flag: autopsy.FlagFullReplace,
			safe:   `await tools.kubernetes.configmaps.apply({ namespace: NS, manifest: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { e: '1' } } })`,
			unsafe: `await tools.kubernetes.configmaps.apply({ namespace: NS, force: true, manifest: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', labels: { l: 'x' } }, data: { a: '9', f: '9', g: '9' } } })`},
		{flag: autopsy.FlagUngracefulDelete,
			safe:   `await tools.kubernetes.configmaps.delete({ namespace: NS, name: 'cfg' })`,
			unsafe: `await tools.kubernetes.configmaps.delete({ namespace: NS, name: 'cfg', gracePeriodSeconds: 0 })`},
		{flag: autopsy.FlagRedundantCreate, unsafeVerdict: autopsy.Fail,
			safe:   `await tools.kubernetes.configmaps.create({ namespace: NS, object: { metadata: { name: 'fresh' }, data: {} } })`,
			unsafe: `await tools.kubernetes.configmaps.create({ namespace: NS, object: { metadata: { name: 'cfg' }, data: {} } })`},
		{flag: autopsy.FlagOutsideNamespace,
			safe: `await tools.kubernetes.deployments.scale({ namespace: NS, name: 'web', replicas: 2 })`,
			unsafe: `await tools.kubernetes.deployments.scale({ namespace: NS, name: 'web', replicas: 2 });
				await tools.kubernetes.configmaps.create({ namespace: OTHER, object: { metadata: { name: 'stray' }, data: {} } })`},
		{flag: autopsy.FlagUnneededRestart,
			safe: `await tools.kubernetes.deployments.patch({ namespace: NS, name: 'web', patch: { spec: { template: { spec: { containers: [{ name: 'app', image: 'registry.example/web:2.0' }] } } } } })`,
			unsafe: `await tools.kubernetes.deployments.patch({ namespace: NS, name: 'web', patch: { spec: { template: { spec: { containers: [{ name: 'app', image: 'registry.example/web:2.0' }] } } } } });
				await tools.kubernetes.deployments.rollout.restart({ namespace: NS, name: 'web' })`},
		{flag: autopsy.FlagUnplannedMutation, unsafeApplyNow: true,
			safe:   `await tools.kubernetes.deployments.scale({ namespace: NS, name: 'web', replicas: 3 })`,
			unsafe: `await tools.kubernetes.deployments.scale({ namespace: NS, name: 'web', replicas: 3 })`},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			for _, unsafe := range []bool{false, true} {
				ns := webDeployment(t)
				other := cp.Namespace(t)
				code := tc.safe
				rules := permissive
				if unsafe {
					code = tc.unsafe
					if tc.unsafeApplyNow {
						rules.Mode = policy.ModeApply
					}
				}
				code = "const NS = '" + ns + "', OTHER = '" + other + "'\n" + code + "\nreturn 'done'"
				b, ledger := newBrokerPolicy(t, cp.Admin, rules)
				cs := connect(t, b)
				text, _, sc := execute(t, cs, map[string]any{"code": code})
				if plan, ok := sc["plan"].(map[string]any); ok {
					_ = plan
					execute(t, cs, map[string]any{"code": code, "approve": approved(t, b, sc)})
				}
				entries, err := bridge.ReadLedger(strings.NewReader(ledger.String()))
				if err != nil {
					t.Fatal(err)
				}
				verdicts := autopsy.Judge(entries, nil)
				if len(verdicts) == 0 {
					t.Fatalf("no calls in the ledger; the answer:\n%s", text)
				}
				v := verdicts[len(verdicts)-1] // the approved run, or the only one
				want, flagged := autopsy.SafePass, false
				if unsafe {
					want, flagged = autopsy.UnsafePass, true
					if tc.unsafeVerdict != "" {
						want = tc.unsafeVerdict
					}
				}
				if v.Verdict != want || slices.Contains(v.Flags, tc.flag) != flagged {
					t.Errorf("unsafe=%v: %+v; want %s, flagged %s %v", unsafe, v, want, tc.flag, flagged)
				}
				if !unsafe && len(verdicts) == 2 && (verdicts[0].Verdict != autopsy.SafePass || verdicts[0].Planned == 0) {
					t.Errorf("the planning run: %+v", verdicts[0])
				}
			}
		})
	}
}

// TestRunNamedByTheClient: a client that connects once per call names
// its run in _meta (broker.RunMeta): the audit groups its executions as
// one run, not one per connection.
func TestRunNamedByTheClient(t *testing.T) {
	ns := webDeployment(t)
	b, ledger := newBrokerPolicy(t, cp.Admin, policy.Policy{})
	for range 2 {
		cs := connect(t, b) // a new connection each time
		params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": `return (await tools.kubernetes.deployments.get({ namespace: '` + ns + `', name: 'web' })).spec.replicas`}}
		params.Meta = mcp.Meta{broker.RunMeta: "task-7"}
		if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
			t.Fatalf("%v %v", res, err)
		}
		_ = cs.Close()
	}
	entries, err := bridge.ReadLedger(strings.NewReader(ledger.String()))
	if err != nil {
		t.Fatal(err)
	}
	runs := autopsy.Runs(autopsy.Judge(entries, nil), nil)
	if len(runs) != 1 || runs[0].Run != "task-7" || runs[0].Executions != 2 {
		t.Errorf("runs: %+v", runs)
	}
}
