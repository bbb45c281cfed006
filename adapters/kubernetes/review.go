package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// A plan is read by a person who approves it, not by the script's author:
// a create says what the object is and what it may do (its containers and
// images, privileges, host access, the Secrets and ConfigMaps it reads,
// its service account and ports), a delete what it takes with it. No
// Secret value is ever shown; a Secret's name and keys may be.

// dependentKinds are the kinds whose objects a workload owns, looked for
// when it is deleted: what the garbage collector removes with it.
var dependentKinds = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "replicationcontrollers"},
	{Version: "v1", Resource: "pods"},
	{Group: "apps", Version: "v1", Resource: "controllerrevisions"},
	{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
}

// cascade says what a delete of obj takes with it: its dependents by owner
// reference, transitively, counted by kind; or that they are orphaned. It
// reads the dependent kinds of obj's namespace only, and says nothing when
// it cannot read them.
func (a *Adapter) cascade(ctx context.Context, obj *unstructured.Unstructured, propagation string) []string {
	if obj == nil || obj.GetNamespace() == "" {
		return nil
	}
	type node struct {
		kind   string
		uid    types.UID
		owners []types.UID
	}
	var all []node
	for _, gvr := range dependentKinds {
		list, err := a.dyn.Resource(gvr).Namespace(obj.GetNamespace()).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, it := range list.Items {
			n := node{kind: it.GetKind(), uid: it.GetUID()}
			for _, ref := range it.GetOwnerReferences() {
				n.owners = append(n.owners, ref.UID)
			}
			if len(n.owners) > 0 {
				all = append(all, n)
			}
		}
	}
	gone := map[types.UID]bool{obj.GetUID(): true}
	counts := map[string]int{}
	for changed := true; changed; {
		changed = false
		for _, n := range all {
			if !gone[n.uid] && slices.ContainsFunc(n.owners, func(o types.UID) bool { return gone[o] }) {
				gone[n.uid] = true
				counts[n.kind]++
				changed = true
			}
		}
	}
	if len(counts) == 0 {
		return nil
	}
	var parts []string
	for _, k := range sortedCounts(counts) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], plural(k, counts[k])))
	}
	if propagation == "Orphan" {
		return []string{"leaves behind (orphaned): " + strings.Join(parts, ", ")}
	}
	return []string{"takes with it (owner references): " + strings.Join(parts, ", ")}
}

// propagation is what a delete does to obj's dependents: as asked, or the
// API's default for its kind (a batch/v1 Job's and a ReplicationController's
// are orphaned, everything else's deleted in the background).
func propagation(obj *unstructured.Unstructured, asked string) string {
	if asked == "" && obj != nil && (obj.GetKind() == "Job" && obj.GroupVersionKind().Group == "batch" || obj.GetKind() == "ReplicationController") {
		return "Orphan"
	}
	return asked
}

func sortedCounts(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func plural(kind string, n int) string {
	if n == 1 {
		return kind
	}
	return kind + "s"
}
