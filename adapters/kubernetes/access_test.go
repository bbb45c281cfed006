package kubernetes

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/catalog"
)

// TestAccessReviews: can_i, whoami and rules answer as kubectl auth does,
// for the caller and for a ServiceAccount named with as.
func TestAccessReviews(t *testing.T) {
	a := newAdapter(t, nil)
	viewer, err := New(cp.Viewer, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	type answer struct {
		Allowed bool `json:"allowed"`
	}
	for _, tc := range []struct {
		name string
		a    *Adapter
		args string
		want bool
	}{
		{"the admin may delete secrets", a, `{"verb":"delete","resource":"secrets","namespace":"` + ns + `"}`, true},
		{"the viewer may list pods", viewer, `{"verb":"list","resource":"pods","namespace":"` + ns + `"}`, true},
		{"the viewer may not delete deployments", viewer, `{"verb":"delete","resource":"deployments","group":"apps","namespace":"` + ns + `"}`, false},
		{"a ServiceAccount may not read secrets", a, `{"verb":"get","resource":"secrets","namespace":"` + ns + `","as":"system:serviceaccount:` + ns + `:default"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got answer
			call(t, tc.a, "kubernetes.auth.can_i", tc.args, &got)
			if diff := cmp.Diff(tc.want, got.Allowed); diff != "" {
				t.Errorf("allowed (-want +got):\n%s", diff)
			}
		})
	}
	var who struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	}
	call(t, viewer, "kubernetes.auth.whoami", `{}`, &who)
	if who.Username == "" || len(who.Groups) == 0 {
		t.Errorf("whoami: %+v", who)
	}
	var rules struct {
		ResourceRules []struct {
			Verbs []string `json:"verbs"`
		} `json:"resourceRules"`
	}
	call(t, viewer, "kubernetes.auth.rules", `{"namespace":"`+ns+`"}`, &rules)
	if len(rules.ResourceRules) == 0 {
		t.Errorf("rules: %+v", rules)
	}
	if _, err := a.Call(t.Context(), "kubernetes.auth.can_i", []byte(`{"verb":"get"}`)); err == nil {
		t.Error("can_i without a resource answered")
	}
}

// TestReviewObjects: the review resources' own create operations are reads
// too: no name needed, nothing planned, the answer in status.
func TestReviewObjects(t *testing.T) {
	a := newAdapter(t, nil)
	ns := cp.Namespace(t)
	ops, _, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ops, func(o *catalog.Operation) bool { return o.Name == "kubernetes.subjectaccessreviews.create" })
	if i < 0 || !ops[i].Annotations.ReadOnly {
		t.Fatalf("subjectaccessreviews.create: %+v", ops)
	}
	var out struct {
		Status struct {
			Allowed bool `json:"allowed"`
		} `json:"status"`
	}
	call(t, a, "kubernetes.subjectaccessreviews.create", `{"object":{"spec":{"user":"system:serviceaccount:`+ns+`:default",
		"resourceAttributes":{"verb":"get","resource":"secrets","namespace":"`+ns+`"}}}}`, &out)
	if out.Status.Allowed {
		t.Error("a ServiceAccount may read secrets, says the review")
	}
	call(t, a, "kubernetes.selfsubjectaccessreviews.create", `{"object":{"spec":{"resourceAttributes":{"verb":"delete","resource":"pods","namespace":"`+ns+`"}}}}`, &out)
	if !out.Status.Allowed {
		t.Error("the admin may not delete pods, says the review")
	}
}
