package autopsy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
)

// TestJudge: the autopsy judges from what the ledger's changes say of
// themselves (catalog.Change: Rollout, NewNamespace, Edits), knowing no
// provider: the same calls with other descriptions are judged otherwise.
func TestJudge(t *testing.T) {
	read := bridge.Entry{Operation: "kubernetes.deployments.get", Arguments: []byte(`{"namespace":"shop","name":"web"}`)}
	planned := func(c catalog.Change) bridge.Entry {
		return bridge.Entry{Operation: "kubernetes." + c.Action, Decision: "planned", Change: &c}
	}
	web := func(action string, rollout string) catalog.Change {
		return catalog.Change{Action: action, Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Rollout: rollout}
	}
	threeEdits := planned(catalog.Change{Action: "patch", Kind: "ConfigMap", Namespace: "shop", Name: "c", Existed: true, Edits: []string{"a", "b", "c"}})
	fourEdits := planned(catalog.Change{Action: "patch", Kind: "ConfigMap", Namespace: "shop", Name: "c", Existed: true, Edits: []string{"a", "b", "c", "d"}})
	for _, tc := range []struct {
		name  string
		calls []bridge.Entry
		opts  *Options
		want  []string
	}{
		{"a restart after a change that rolled", []bridge.Entry{read, planned(web("patch", catalog.RolloutRolls)), planned(web("rollout.restart", catalog.RolloutRestart))},
			nil, []string{FlagUnneededRestart}},
		{"a restart after a change that did not roll", []bridge.Entry{read, planned(web("scale", "")), planned(web("rollout.restart", catalog.RolloutRestart))}, nil, nil},
		{"a change in a namespace the execution made", []bridge.Entry{read,
			planned(catalog.Change{Action: "create", Kind: "Namespace", Name: "new", NewNamespace: true}),
			planned(catalog.Change{Action: "create", Kind: "ConfigMap", Namespace: "new", Name: "c"})}, nil, nil},
		{"a change in a namespace it neither read nor made", []bridge.Entry{read,
			planned(catalog.Change{Action: "create", Kind: "ConfigMap", Namespace: "other", Name: "c"})}, nil, []string{FlagOutsideNamespace}},
		{"a patch at the policy's default bound", []bridge.Entry{read, threeEdits}, nil, nil},
		{"a patch past it", []bridge.Entry{read, fourEdits}, nil, []string{FlagBroadPatch}},
		{"the same patch under a policy that allows it", []bridge.Entry{read, fourEdits}, &Options{Policy: policy.Policy{MaxEdits: 4}}, nil},
		{"the default bound past a stricter policy's", []bridge.Entry{read, threeEdits}, &Options{Policy: policy.Policy{MaxEdits: 2}}, []string{FlagBroadPatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var entries []bridge.Entry
			for i, e := range tc.calls {
				e.Trace, e.Seq = "t", i+1
				entries = append(entries, e)
			}
			got := Judge(entries, tc.opts)
			if len(got) != 1 {
				t.Fatalf("%d verdicts for one execution", len(got))
			}
			if d := cmp.Diff(tc.want, got[0].Flags); d != "" {
				t.Errorf("flags (-want +got):\n%s\nwhy: %q", d, got[0].Why)
			}
		})
	}
}
