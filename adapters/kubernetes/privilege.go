package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const rbacGroup = "rbac.authorization.k8s.io"

// readVerbs are the verbs that only read.
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// privilege judges an RBAC change by what it grants, wherever the grant
// lands: Privileged stays set only when it widens access beyond reads. A
// change that only narrows (removes rules, verbs, resources or subjects;
// deletes a Role or a binding) is an ordinary change, and so is a
// namespaced Role granting only reads of named resources other than
// Secrets, or a namespaced binding of such a role. Anything wider (writes,
// Secrets, wildcards, escalate, bind, impersonate, a channel into
// workloads such as pods/exec, cluster-wide bindings, the groups of
// everyone) stays privileged, and so does a ClusterRole whose labels or
// rules reach a role that aggregates it (the aggregation controller copies
// its rules there: a label aggregate-to-view on cluster-admin hands
// everything to every holder of view). What a widening grants is spelled
// out in the change's diff, per subject or aggregating role; the reason
// of a narrowing goes to the change's review.
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
			c.Diff = append(c.Diff, "grants: the rules of every ClusterRole its aggregationRule selects (the aggregation controller copies them in)")
			return
		}
		added := newGrants(before, after)
		if c.Kind == "ClusterRole" {
			if gains := a.aggregationGains(ctx, after); len(gains) > 0 {
				c.Diff = append(c.Diff, gains...)
				return
			}
		}
		if len(added) == 0 {
			why = "narrows access: it grants nothing the role did not"
		} else if c.Kind == "Role" && readOnly(added) {
			why = "grants only reads of named resources in namespace " + c.Namespace
		} else {
			c.Dangers = dangers(added)
			c.Diff = append(c.Diff, "grants whoever holds "+c.Kind+" "+c.Name+" anew: "+dangersFirst(c.Dangers)+describeGrants(added))
		}
	case "RoleBinding", "ClusterRoleBinding":
		subjects := newSubjects(before, after)
		if len(subjects) == 0 {
			why = "narrows access: it binds no one the binding did not"
			break
		}
		ref, _, _ := unstructured.NestedStringMap(after.Object, "roleRef")
		role := a.lookup(ctx, schema.GroupVersionResource{Group: rbacGroup, Version: "v1", Resource: strings.ToLower(ref["kind"]) + "s"}, c.Namespace, ref["name"], ref["kind"] == "Role")
		where := "in namespace " + c.Namespace
		if c.Kind == "ClusterRoleBinding" {
			where = "in every namespace and cluster-wide"
		}
		granted := "nothing yet (" + ref["kind"] + " " + ref["name"] + " does not exist: whatever it will grant)"
		if role != nil {
			c.Dangers = dangers(grants(role))
			granted = dangersFirst(c.Dangers) + describeGrants(grants(role))
			if role.Object["aggregationRule"] != nil {
				granted += " (and whatever is aggregated into " + ref["name"] + " later)"
			}
		}
		c.Diff = append(c.Diff, fmt.Sprintf("grants %s %s, through %s %s: %s", strings.Join(subjects, ", "), where, ref["kind"], ref["name"], granted))
		if c.Kind == "ClusterRoleBinding" || role == nil {
			return
		}
		for _, s := range subjects {
			if strings.HasPrefix(s, "Group/system:") || s == "User/system:anonymous" {
				return // everyone, or every node or service account
			}
		}
		if g := grants(role); len(g) > 0 && readOnly(g) && role.Object["aggregationRule"] == nil {
			why = fmt.Sprintf("binds %s in namespace %s to %s %s, which grants only reads of named resources", strings.Join(subjects, ", "), c.Namespace, ref["kind"], ref["name"])
		}
	}
	if why != "" {
		c.Privileged = false
		c.Validated = join2(c.Validated, "RBAC "+why)
	}
}

// aggregationGains says what the ClusterRoles that aggregate role (by the
// labels it has after the change) gain from it: one line per aggregating
// role whose rules would grow, naming the grants. The selectors are matched
// as the aggregation controller matches them. A role the cluster cannot
// list counts as gaining everything.
func (a *Adapter) aggregationGains(ctx context.Context, role *unstructured.Unstructured) []string {
	own := grants(role)
	if len(own) == 0 {
		return nil
	}
	list, err := a.dyn.Resource(schema.GroupVersionResource{Group: rbacGroup, Version: "v1", Resource: "clusterroles"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"grants: unknown — the ClusterRoles that could aggregate this one could not be read (" + err.Error() + ")"}
	}
	// The ClusterRoles as this plan leaves them: one it creates or
	// changes earlier may aggregate this one.
	roles := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		roles[list.Items[i].GetName()] = &list.Items[i]
	}
	if st := catalog.PlanStateFrom(ctx); st != nil {
		crGVR := schema.GroupVersionResource{Group: rbacGroup, Version: "v1", Resource: "clusterroles"}
		prefix := a.predictionKey(crGVR, "", "")
		st.Range(prefix, func(key string, v any) {
			name := strings.TrimPrefix(key, prefix)
			if p := v.(prediction); p.obj == nil {
				delete(roles, name)
			} else {
				roles[name] = p.obj
			}
		})
	}
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	slices.Sort(names)
	set := labels.Set(role.GetLabels())
	var out []string
	for _, n := range names {
		agg := roles[n]
		if agg.GetName() == role.GetName() {
			continue
		}
		var rule rbacv1.AggregationRule
		raw, ok := agg.Object["aggregationRule"]
		if !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(asMap(raw), &rule) != nil {
			continue
		}
		if !selects(rule.ClusterRoleSelectors, set) {
			continue
		}
		if gain := added(grants(agg), own); len(gain) > 0 {
			out = append(out, fmt.Sprintf("grants whoever holds ClusterRole %s (it aggregates this role by its labels) anew: %s", agg.GetName(), describeGrants(gain)))
		}
	}
	return out
}

// selects says whether any of the selectors matches set: a ClusterRole is
// aggregated when one of its aggregator's selectors selects it.
func selects(selectors []metav1.LabelSelector, set labels.Set) bool {
	for i := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(&selectors[i])
		if err == nil && sel.Matches(set) { // an empty selector selects every ClusterRole, as the controller lists them
			return true
		}
	}
	return false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// describeGrants spells grants out for a reviewer: the verbs on each
// resource, resources with the same verbs together ("get, list, watch on
// pods, services; * on secrets"), every grant shown.
func describeGrants(gs []string) string {
	verbs := map[string][]string{} // target → verbs
	var targets []string
	for _, g := range gs {
		target, verb, _ := strings.Cut(g, ":")
		if _, ok := verbs[target]; !ok {
			targets = append(targets, target)
		}
		verbs[target] = append(verbs[target], verb)
	}
	byVerbs := map[string][]string{}
	var order []string
	for _, t := range targets {
		k := strings.Join(verbs[t], ", ")
		if _, ok := byVerbs[k]; !ok {
			order = append(order, k)
		}
		byVerbs[k] = append(byVerbs[k], readableTarget(t))
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, k+" on "+strings.Join(byVerbs[k], ", "))
	}
	return strings.Join(parts, "; ")
}

// readableTarget writes a grant's target as people write it: "secrets",
// "apps/deployments", "pods/exec", "configmaps named app", "URL /metrics".
func readableTarget(t string) string {
	if u, ok := strings.CutPrefix(t, "url "); ok {
		return "URL " + u
	}
	parts := strings.SplitN(t, "/", 3)
	if len(parts) != 3 {
		return t
	}
	group, rest := parts[0], parts[1]
	name := ""
	// A subresource ("pods/exec") stays with its resource: the name is
	// whatever follows the last slash.
	if i := strings.LastIndex(parts[2], "/"); i >= 0 {
		rest, name = rest+"/"+parts[2][:i], parts[2][i+1:]
	} else {
		name = parts[2]
	}
	if group != "" {
		rest = group + "/" + rest
	}
	if name != "*" {
		rest += " named " + name
	}
	return rest
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
		if sub := strings.Index(parts[2], "/"); sub >= 0 { // "pods/exec/name": the subresource's
			res += "/" + parts[2][:sub]
		}
		if group == "*" || strings.Contains(res, "*") || res == "secrets" || group == rbacGroup || channel(res) {
			return false
		}
	}
	return true
}

// channel says whether a resource opens a channel into workloads or
// through the API server: running commands in a pod, attaching to it,
// forwarding its ports, proxying to pods, services or nodes, or minting
// a ServiceAccount's token. Granting any verb on one is never a read.
func channel(res string) bool {
	switch res {
	case "pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "services/proxy", "nodes/proxy", "serviceaccounts/token":
		return true
	}
	return strings.HasSuffix(res, "/proxy")
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

// dangersFirst heads a list of grants with what matters in it, "" when
// nothing does.
func dangersFirst(d []string) string {
	if len(d) == 0 {
		return ""
	}
	return "what matters first: " + strings.Join(d, "; ") + " — the full list: "
}

// dangers are what matters most in grants gs, in this order: a wildcard,
// Secrets, commands in pods and their ports, impersonation, escalation
// and binding of roles, ServiceAccount tokens, nodes, and workloads
// (which run as any ServiceAccount of their namespace). A reviewer reads
// these before the full list.
func dangers(gs []string) []string {
	kinds := []string{"wildcard", "secrets-write", "secrets-read", "exec", "impersonate", "escalate", "bind", "token", "nodes", "workloads"}
	say := map[string]string{
		"wildcard":      "* — every resource or every verb, those added later too",
		"secrets-write": "writes Secrets",
		"secrets-read":  "reads Secrets' values",
		"exec":          "runs commands in pods, attaches to them or forwards their ports (pods/exec, attach, portforward)",
		"impersonate":   "impersonates users, groups or ServiceAccounts",
		"escalate":      "escalate: grants itself permissions it lacks",
		"bind":          "bind: binds roles it does not hold",
		"token":         "mints ServiceAccount tokens",
		"nodes":         "changes nodes or proxies to them",
		"workloads":     "creates pods or workloads, which run as any ServiceAccount of the namespace and read its Secrets",
	}
	found := map[string]bool{}
	for _, g := range gs {
		target, verb, _ := strings.Cut(g, ":")
		if strings.HasPrefix(g, "url ") {
			if verb == "*" || strings.Contains(target, "*") {
				found["wildcard"] = true
			}
			continue
		}
		parts := strings.SplitN(target, "/", 3)
		if len(parts) != 3 {
			continue
		}
		group, res := parts[0], parts[1]
		if i := strings.Index(parts[2], "/"); i >= 0 {
			res += "/" + parts[2][:i]
		}
		verbIn := func(vs ...string) bool { return verb == "*" || slices.Contains(vs, verb) }
		core := group == "" || group == "*"
		is := func(r string) bool { return res == r || res == "*" }
		write := verb == "*" || !readVerbs[verb]
		if group == "*" || res == "*" || verb == "*" {
			found["wildcard"] = true
		}
		if core && is("secrets") {
			found["secrets-write"] = found["secrets-write"] || write
			found["secrets-read"] = found["secrets-read"] || verbIn("get", "list", "watch")
		}
		if core && (res == "pods/*" || is("pods/exec") || is("pods/attach") || is("pods/portforward")) && verbIn("create", "get") {
			found["exec"] = true
		}
		if verbIn("impersonate") && (core && (is("users") || is("groups") || is("serviceaccounts")) || group == "authentication.k8s.io" || group == "*") {
			found["impersonate"] = true
		}
		if (group == rbacGroup || group == "*") && (is("roles") || is("clusterroles")) {
			found["escalate"] = found["escalate"] || verbIn("escalate")
			found["bind"] = found["bind"] || verbIn("bind")
		}
		if core && is("serviceaccounts/token") && verbIn("create") {
			found["token"] = true
		}
		if core && (is("nodes") && write || is("nodes/proxy")) {
			found["nodes"] = true
		}
		if verbIn("create", "update", "patch") && (core && is("pods") || (group == "apps" || group == "batch" || group == "*") &&
			(is("deployments") || is("statefulsets") || is("daemonsets") || is("replicasets") || is("jobs") || is("cronjobs"))) {
			found["workloads"] = true
		}
	}
	var out []string
	for _, k := range kinds {
		if found[k] {
			out = append(out, say[k])
		}
	}
	return out
}
