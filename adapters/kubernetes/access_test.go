package kubernetes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
