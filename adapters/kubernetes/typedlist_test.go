package kubernetes

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/adapters/kubeapi"
)

// TestTypedListsMatchJSON: a list read in protobuf and written from the
// typed objects holds exactly what the same list read as JSON holds, but
// managedFields and kubectl's last-applied annotation, for every kind of
// built-in object the seeded cluster has (objects that changed between
// the two reads are left out: their resourceVersions differ).
func TestTypedListsMatchJSON(t *testing.T) {
	typed := newAdapter(t, nil)
	plain := newAdapter(t, nil)
	no := false
	plain.typed.fits = &no
	for _, res := range []string{"pods", "deployments", "replicasets", "services", "endpointslices", "events_events_k8s_io", "ingresses", "networkpolicies", "storageclasses", "leases", "configmaps", "secrets", "events", "nodes", "namespaces",
		"jobs", "cronjobs", "statefulsets", "daemonsets", "persistentvolumeclaims", "serviceaccounts", "roles", "clusterroles", "rolebindings", "poddisruptionbudgets"} {
		t.Run(res, func(t *testing.T) {
			r := typed.resources[res]
			if r == nil {
				t.Fatalf("no resource %s", res)
			}
			if !typed.typed.usable(typed, r) {
				t.Fatalf("%s is not listed typed", res)
			}
			var got, want []map[string]any
			call(t, typed, "kubernetes."+res+".list", `{"allNamespaces":true}`, &got)
			call(t, plain, "kubernetes."+res+".list", `{"allNamespaces":true}`, &want)
			byVersion := map[string]map[string]any{}
			for _, o := range want {
				md := o["metadata"].(map[string]any)
				delete(md, "managedFields")
				if ann, ok := md["annotations"].(map[string]any); ok {
					delete(ann, kubeapi.LastApplied)
					if len(ann) == 0 {
						delete(md, "annotations")
					}
				}
				byVersion[md["uid"].(string)+"@"+md["resourceVersion"].(string)] = o
			}
			same := 0
			for _, o := range got {
				md := o["metadata"].(map[string]any)
				if _, ok := md["managedFields"]; ok {
					t.Errorf("%s/%s keeps managedFields", md["namespace"], md["name"])
				}
				w := byVersion[md["uid"].(string)+"@"+md["resourceVersion"].(string)]
				if w == nil {
					continue
				}
				same++
				if d := cmp.Diff(w, o); d != "" {
					t.Errorf("%s/%s (-json +typed):\n%s", md["namespace"], md["name"], d)
				}
			}
			if len(got) > 0 && same == 0 {
				t.Errorf("no object of %d in both lists", len(got))
			}
			t.Logf("%s: %d objects, %d compared", res, len(got), same)
		})
	}
	// Custom resources (and CRDs themselves) are listed as JSON.
	if typed.typed.usable(typed, typed.resources["customresourcedefinitions"]) {
		t.Error("CRDs are listed typed: client-go has no type for them")
	}
	// A limit and pages behave as with JSON.
	var pods []map[string]any
	call(t, typed, "kubernetes.pods.list", `{"allNamespaces":true,"limit":3}`, &pods)
	if len(pods) != 3 {
		t.Errorf("limit 3: %d pods", len(pods))
	}
	small := newAdapter(t, &Options{PageSize: 7})
	var paged, whole []json.RawMessage
	call(t, small, "kubernetes.namespaces.list", `{}`, &paged)
	call(t, typed, "kubernetes.namespaces.list", `{}`, &whole)
	if len(paged) != len(whole) || len(whole) < 8 {
		t.Errorf("namespaces in pages of 7: %d, in one: %d", len(paged), len(whole))
	}
}

// TestAPITypesMinor: apiTypesMinor is go.mod's k8s.io/api minor version.
func TestAPITypesMinor(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+)\.`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != apiTypesMinor {
		t.Errorf("go.mod has k8s.io/api v0.%d, apiTypesMinor is %d: update it", n, apiTypesMinor)
	}
}
