package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const rbacGroup = "rbac.authorization.k8s.io"

// readVerbs are the verbs that only read.
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// privilege judges an RBAC change by its direction and size: Privileged
// stays set only when it widens access beyond reads. A change that only
// narrows (removes rules, verbs, resources or subjects; deletes a Role or
// a binding) is an ordinary change, and so is a namespaced Role granting
// only reads of named resources other than Secrets, or a namespaced
// binding of such a role. Anything wider (writes, Secrets, wildcards,
// escalate, bind, impersonate, cluster-wide bindings, the groups of
// everyone) stays privileged. The reason goes to the change's review.
func (a *Adapter) privilege(ctx context.Context, w *write, c *catalog.Change, before, after *unstructured.Unstructured) {
	if w.r.gvr.Group != rbacGroup {
		return
	}
	if w.verb == "delete" {
		c.Privileged = false // removing access narrows it
		return
	}
	if after == nil {
		return // a dry run that failed: judged as a widening
	}
	var why string
	switch c.Kind {
	case "Role", "ClusterRole":
		if _, agg := after.Object["aggregationRule"]; agg {
			return
		}
		added := newGrants(before, after)
		if len(added) == 0 {
			why = "narrows access: it grants nothing the role did not"
		} else if c.Kind == "Role" && readOnly(added) {
			why = "grants only reads of named resources in namespace " + c.Namespace
		}
	case "RoleBinding", "ClusterRoleBinding":
		subjects := newSubjects(before, after)
		if len(subjects) == 0 {
			why = "narrows access: it binds no one the binding did not"
			break
		}
		if c.Kind == "ClusterRoleBinding" {
			return
		}
		for _, s := range subjects {
			if strings.HasPrefix(s, "Group/system:") || s == "User/system:anonymous" {
				return // everyone, or every node or service account
			}
		}
		ref, _, _ := unstructured.NestedStringMap(after.Object, "roleRef")
		role := a.lookup(ctx, schema.GroupVersionResource{Group: rbacGroup, Version: "v1", Resource: strings.ToLower(ref["kind"]) + "s"}, c.Namespace, ref["name"], ref["kind"] == "Role")
		if role == nil {
			return
		}
		if g := grants(role); len(g) > 0 && readOnly(g) {
			why = fmt.Sprintf("binds %s in namespace %s to %s %s, which grants only reads of named resources", strings.Join(subjects, ", "), c.Namespace, ref["kind"], ref["name"])
		}
	}
	if why != "" {
		c.Privileged = false
		c.Validated = join2(c.Validated, "RBAC "+why)
	}
}

// lookup reads an object as this plan leaves it (a role the same plan
// creates) or else as the cluster has it; nil when neither has it.
func (a *Adapter) lookup(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, namespaced bool) *unstructured.Unstructured {
	if !namespaced {
		ns = ""
	}
	if o, gone, ok := a.predicted(ctx, gvr, ns, name); ok {
		if gone {
			return nil
		}
		return o
	}
	var obj *unstructured.Unstructured
	var err error
	if ns == "" {
		obj, err = a.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	} else {
		obj, err = a.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil
	}
	return obj
}

// grants expands a role's rules into "group/resource/name:verb" and
// "url:verb" grants; "*" stays a wildcard.
func grants(role *unstructured.Unstructured) []string {
	if role == nil {
		return nil
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []string
	for _, r := range rules {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		list := func(k string) []string {
			v, _, _ := unstructured.NestedStringSlice(m, k)
			return v
		}
		verbs := list("verbs")
		for _, u := range list("nonResourceURLs") {
			for _, v := range verbs {
				out = append(out, "url "+u+":"+v)
			}
		}
		names := list("resourceNames")
		if len(names) == 0 {
			names = []string{"*"}
		}
		for _, g := range list("apiGroups") {
			for _, res := range list("resources") {
				for _, n := range names {
					for _, v := range verbs {
						out = append(out, g+"/"+res+"/"+n+":"+v)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// newGrants are the grants of after that before did not have.
func newGrants(before, after *unstructured.Unstructured) []string {
	return added(grants(before), grants(after))
}

// added are the items of now not in had.
func added(had, now []string) []string {
	var out []string
	for _, x := range now {
		if !slices.Contains(had, x) {
			out = append(out, x)
		}
	}
	return out
}

// readOnly says whether every grant reads a named resource (no wildcard)
// other than Secrets, and no URL.
func readOnly(gs []string) bool {
	for _, g := range gs {
		target, verb, _ := strings.Cut(g, ":")
		parts := strings.SplitN(target, "/", 3)
		if strings.HasPrefix(g, "url ") || len(parts) != 3 || !readVerbs[verb] {
			return false
		}
		group, res := parts[0], parts[1]
		if group == "*" || strings.Contains(res, "*") || res == "secrets" || group == rbacGroup {
			return false
		}
	}
	return true
}

// newSubjects are the subjects of after ("Kind/namespace/name") that
// before did not bind.
func newSubjects(before, after *unstructured.Unstructured) []string {
	subjects := func(o *unstructured.Unstructured) []string {
		if o == nil {
			return nil
		}
		list, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		var out []string
		for _, s := range list {
			m, _ := s.(map[string]any)
			kind, _ := m["kind"].(string)
			ns, _ := m["namespace"].(string)
			name, _ := m["name"].(string)
			if ns != "" {
				out = append(out, kind+"/"+ns+"/"+name)
			} else {
				out = append(out, kind+"/"+name)
			}
		}
		return out
	}
	return added(subjects(before), subjects(after))
}
