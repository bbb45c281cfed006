package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Access reviews are questions, not changes: "can this user do that?",
// "who am I?", "what may I do here?". The API server answers them by
// creating review objects that are never stored; here they are reads,
// never planned.

var (
	selfAccessReviews = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}
	accessReviews     = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}
	rulesReviews      = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectrulesreviews"}
	selfReviews       = schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}
)

// accessOperations are kubernetes.auth.can_i, .whoami and .rules.
func accessOperations() []*catalog.Operation {
	read := catalog.Annotations{ReadOnly: true, Idempotent: true}
	canIn := &catalog.Schema{Type: "object", Required: []string{"verb", "resource"}, Properties: map[string]*catalog.Schema{
		"verb":        prop("string", "get, list, watch, create, update, patch, delete, … or * "),
		"resource":    prop("string", "the plural resource: pods, secrets, deployments, …"),
		"group":       prop("string", "its API group ('' is core: pods, secrets)"),
		"namespace":   prop("string", "where; empty asks cluster-wide"),
		"name":        prop("string", "one object"),
		"subresource": prop("string", "log, scale, status, exec, …"),
		"as":          prop("string", "ask for this user instead of yourself, e.g. system:serviceaccount:shop:api"),
		"asGroups":    {Type: "array", Items: &catalog.Schema{Type: "string"}, Description: "with as: the user's groups"},
	}}
	return []*catalog.Operation{{
		Name: "kubernetes.auth.can_i", Provider: "kubernetes", Verb: "can_i",
		Description: "Ask whether you (or another user or ServiceAccount, with as) may do verb on a resource: a read, like kubectl auth can-i.",
		Keywords:    []string{"can-i", "can i", "permission", "allowed", "access", "rbac", "authorized", "may", "serviceaccount", "service account", "permissions of a service account", "who can", "access review"},
		Hints: &catalog.Hints{Intents: []string{"can", "may", "allowed", "permitted", "permission", "permissions", "authorized", "forbidden", "access", "grant", "grants", "granted", "rbac", "account", "accounts"},
			VerbWords: []string{"can", "may", "allowed", "permitted", "check"}},
		Input: canIn,
		Output: &catalog.Schema{Type: "object", Required: []string{"allowed"}, Properties: map[string]*catalog.Schema{
			"allowed": {Type: "boolean"}, "denied": {Type: "boolean"}, "reason": {Type: "string"}}},
		OutputName: "AccessAnswer", Annotations: read,
	}, {
		Name: "kubernetes.auth.whoami", Provider: "kubernetes", Verb: "whoami",
		Description: "Say who the calls act as: user name, groups and UID, like kubectl auth whoami.",
		Keywords:    []string{"whoami", "who am i", "identity", "user", "groups", "current user"},
		Input:       &catalog.Schema{Type: "object"},
		Output: &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
			"username": {Type: "string"}, "uid": {Type: "string"}, "groups": {Type: "array", Items: &catalog.Schema{Type: "string"}}}},
		OutputName: "Identity", Annotations: read,
	}, {
		Name: "kubernetes.auth.rules", Provider: "kubernetes", Verb: "rules",
		Description: "List what you may do in a namespace: resource rules (verbs, groups, resources, names), like kubectl auth can-i --list.",
		Keywords:    []string{"rules", "permissions", "can-i --list", "what can i do", "rbac", "access"},
		Input: &catalog.Schema{Type: "object", Required: []string{"namespace"}, Properties: map[string]*catalog.Schema{
			"namespace": prop("string", "the namespace the rules apply in")}},
		Output: &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
			"resourceRules": {Type: "array", Items: &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
				"verbs": {Type: "array", Items: &catalog.Schema{Type: "string"}}, "apiGroups": {Type: "array", Items: &catalog.Schema{Type: "string"}},
				"resources": {Type: "array", Items: &catalog.Schema{Type: "string"}}, "resourceNames": {Type: "array", Items: &catalog.Schema{Type: "string"}}}}},
			"incomplete": {Type: "boolean"}}},
		OutputName: "AccessRules", Annotations: read,
	}}
}

type canIArgs struct {
	Verb        string   `json:"verb"`
	Resource    string   `json:"resource"`
	Group       string   `json:"group"`
	Namespace   string   `json:"namespace"`
	Name        string   `json:"name"`
	Subresource string   `json:"subresource"`
	As          string   `json:"as"`
	AsGroups    []string `json:"asGroups"`
}

// access runs an access review: rest is "auth.<verb>".
func (a *Adapter) access(ctx context.Context, rest string, raw json.RawMessage) (json.RawMessage, error) {
	create := func(gvr schema.GroupVersionResource, kind string, spec map[string]any) (map[string]any, error) {
		apiVersion := gvr.Group + "/" + gvr.Version
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
		out, err := a.dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return nil, wrapError(err)
		}
		st, _ := out.Object["status"].(map[string]any)
		return st, nil
	}
	var result any
	switch rest {
	case "auth.can_i":
		var args canIArgs
		if err := decodeArgs(raw, &args); err != nil {
			return nil, err
		}
		if args.Verb == "" || args.Resource == "" {
			return nil, badRequest("can_i needs a verb and a resource, e.g. {verb: 'get', resource: 'secrets', namespace: 'shop'}")
		}
		attrs := map[string]any{"verb": args.Verb, "resource": args.Resource, "group": args.Group}
		for k, v := range map[string]string{"namespace": args.Namespace, "name": args.Name, "subresource": args.Subresource} {
			if v != "" {
				attrs[k] = v
			}
		}
		gvr, kind, spec := selfAccessReviews, "SelfSubjectAccessReview", map[string]any{"resourceAttributes": attrs}
		if args.As != "" {
			gvr, kind, spec = accessReviews, "SubjectAccessReview", map[string]any{"resourceAttributes": attrs, "user": args.As}
			if groups := accessGroups(args.As, args.AsGroups); len(groups) > 0 {
				spec["groups"] = groups
			}
		} else if len(args.AsGroups) > 0 {
			return nil, badRequest("asGroups goes with as: name the user whose groups they are")
		}
		st, err := create(gvr, kind, spec)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"allowed": st["allowed"] == true}
		if st["denied"] == true {
			out["denied"] = true
		}
		if r, _ := st["reason"].(string); r != "" {
			out["reason"] = r
		}
		result = out
	case "auth.whoami":
		st, err := create(selfReviews, "SelfSubjectReview", nil)
		if err != nil {
			return nil, err
		}
		info, _ := st["userInfo"].(map[string]any)
		result = info
	case "auth.rules":
		var args struct {
			Namespace string `json:"namespace"`
		}
		if err := decodeArgs(raw, &args); err != nil {
			return nil, err
		}
		if args.Namespace == "" {
			return nil, badRequest("rules needs a namespace")
		}
		st, err := create(rulesReviews, "SelfSubjectRulesReview", map[string]any{"namespace": args.Namespace})
		if err != nil {
			return nil, err
		}
		result = map[string]any{"resourceRules": orEmpty(st["resourceRules"]), "incomplete": st["incomplete"] == true}
	default:
		return nil, fmt.Errorf("%w: kubernetes.%s", errUnknownOperation, rest)
	}
	return json.Marshal(result)
}

// accessGroups are the groups an access review asks for user with: the
// ones given, and for a ServiceAccount the groups every one has, as the
// API server would give them.
func accessGroups(user string, groups []string) []string {
	if ns, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok && len(groups) == 0 {
		ns, _, _ = strings.Cut(ns, ":")
		return []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	return groups
}

func orEmpty(v any) any {
	if v == nil {
		return []any{}
	}
	return v
}

// isReview says whether r is a review: a question the API server answers
// in the created object's status without storing it (access, rules,
// token and self reviews).
func isReview(r *resource) bool {
	return (r.gvr.Group == "authorization.k8s.io" || r.gvr.Group == "authentication.k8s.io") && strings.HasSuffix(r.kind, "Review")
}

// review asks the question a review object holds: it is created for real
// (the API server stores nothing) and comes back with its answer.
func (a *Adapter) review(ctx context.Context, r *resource, raw json.RawMessage) (json.RawMessage, error) {
	var args struct {
		Object    map[string]any `json:"object"`
		Namespace string         `json:"namespace"`
	}
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	if args.Object == nil {
		return nil, badRequest("%s.create needs object: the %s with its spec", r.seg, r.kind)
	}
	obj := &unstructured.Unstructured{Object: args.Object}
	obj.SetAPIVersion(r.gvr.GroupVersion().String())
	obj.SetKind(r.kind)
	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	ns := ""
	if r.namespaced {
		ns = orDefault(orDefault(args.Namespace, obj.GetNamespace()), a.ns)
		obj.SetNamespace(ns)
	}
	out, err := a.client(r, ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, wrapError(err)
	}
	return json.Marshal(out.Object)
}
