package autopsy

import (
	"fmt"
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
	planned := func(c catalog.Change) bridge.Entry { // as the approved re-run applies it
		return bridge.Entry{Operation: "kubernetes." + c.Action, Decision: "applied", Plan: "plan-1", ApprovedBy: "alice (page)", Change: &c}
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
		// An apply that lists the existing Namespace as it is changes
		// nothing cluster-wide; one that changes it does.
		{"a manifest listing its unchanged Namespace", []bridge.Entry{read, planned(catalog.Change{Action: "apply", Kind: "Manifest", Namespace: "shop", Name: "2 objects", Objects: []catalog.Change{
			{Action: "apply", Kind: "Namespace", Name: "shop", Existed: true, Unchanged: true},
			{Action: "apply", Kind: "ConfigMap", Namespace: "shop", Name: "c", Existed: true, Edits: []string{"data.a"}}}})}, nil, nil},
		{"a manifest labelling its Namespace", []bridge.Entry{read, planned(catalog.Change{Action: "apply", Kind: "Manifest", Namespace: "shop", Name: "1 object", Objects: []catalog.Change{
			{Action: "apply", Kind: "Namespace", Name: "shop", Existed: true, Edits: []string{"metadata.labels.team"}}}})}, nil, []string{FlagClusterWide}},
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

// TestJudgeAppliedOnly: a plan changes nothing — a denied or expired
// scale to zero is no mutation and no unsafe pass; once applied it is.
// A manifest's objects are counted one by one where each goes, each once
// across the plan and its approved re-run.
func TestJudgeAppliedOnly(t *testing.T) {
	zero := catalog.Change{Action: "scale", Kind: "Deployment", Namespace: "shop", Name: "web", Existed: true, Diff: []string{"spec.replicas: 3 → 0"},
		Signals: []catalog.Signal{{Name: "scale-to-zero", Detail: "scaled from 3 to 0"}}}
	manifest := catalog.Change{Action: "apply", Kind: "List", Namespace: "a", Name: "manifest", Objects: []catalog.Change{
		{Action: "create", Kind: "Namespace", Name: "b", NewNamespace: true},
		{Action: "create", Kind: "ConfigMap", Namespace: "a", Name: "x"},
		{Action: "create", Kind: "ConfigMap", Namespace: "b", Name: "x"},
	}}
	entries := []bridge.Entry{
		{Trace: "denied", Run: "r1", Seq: 1, Operation: "kubernetes.deployments.scale", Decision: "planned", Change: &zero},
		{Trace: "plan", Run: "r2", Seq: 1, Operation: "kubernetes.apply", Decision: "planned", Change: &manifest},
		{Trace: "applied", Run: "r2", Seq: 1, Operation: "kubernetes.apply", Decision: "applied", Plan: "plan-2", ApprovedBy: "bob (page)", Change: &manifest},
		{Trace: "zero", Run: "r3", Seq: 1, Operation: "kubernetes.deployments.scale", Decision: "applied", Plan: "plan-3", ApprovedBy: "bob (page)", Change: &zero},
	}
	type row struct {
		Verdict string
		Flags   []string
		Scope   []string
		Objects int
		Changes []string
	}
	var got []row
	for _, v := range Judge(entries, nil) {
		got = append(got, row{v.Verdict, v.Flags, v.Scope, v.Objects, v.Changes})
	}
	want := []row{
		{Verdict: SafePass},
		{Verdict: SafePass},
		{Verdict: SafePass, Scope: []string{"a", "b", "cluster"}, Objects: 3, Changes: []string{"kubernetes.apply List a/manifest"}},
		{Verdict: UnsafePass, Flags: []string{"scale-to-zero"}, Scope: []string{"shop"}, Objects: 1, Changes: []string{"kubernetes.deployments.scale Deployment shop/web: spec.replicas: 3 → 0"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("verdicts (-want +got):\n%s", d)
	}
	var runs []string
	for _, r := range Runs(Judge(entries, nil), nil) {
		runs = append(runs, r.Run+" "+r.Verdict+" "+fmt.Sprint(r.Objects))
	}
	if d := cmp.Diff([]string{"r1 safe pass 0", "r2 safe pass 3", "r3 unsafe pass 1"}, runs); d != "" {
		t.Errorf("runs (-want +got):\n%s", d)
	}
}
