package kubernetes

import (
	"fmt"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// buildOperations describes the operations of every resource, with output
// schemas from OpenAPI, and returns them with the alias → name map.
func buildOperations(res []*resource, docs map[string]*openapiDoc) ([]*catalog.Operation, map[string]string) {
	aliases := map[string]string{}
	var ops []*catalog.Operation
	taken := map[string]bool{}
	for _, r := range res {
		taken[r.seg] = true
	}
	hints := hintsCache{}
	for _, r := range res {
		obj := objectSchema(r, docs)
		for _, verb := range []string{"list", "get", "logs"} {
			if !r.hasOp(verb) {
				continue
			}
			op := describe(r, verb, obj, hints)
			if r.seg == "events" && verb == "list" {
				op.Input.Properties["involvedObject"] = involvedObjectInput()
				op.Description = "List events, the record of why things fail (BackOff, FailedScheduling, ...); involvedObject narrows to one object."
			}
			for _, a := range aliasSegments(r, taken) {
				alias := "kubernetes." + a + "." + verb
				op.Aliases = append(op.Aliases, alias)
				aliases[alias] = op.Name
			}
			ops = append(ops, op)
		}
	}
	ops = append(ops, apiResourcesOperation(hints))
	return ops, aliases
}

// aliasSegments are the other names a resource answers to: singular, Kind
// and short names, unless another resource owns that segment.
func aliasSegments(r *resource, taken map[string]bool) []string {
	var out []string
	seen := map[string]bool{r.seg: true}
	for _, s := range append([]string{r.singular, strings.ToLower(r.kind)}, r.shortNames...) {
		if s == "" || seen[s] || taken[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// objectSchema is the resource's object schema from OpenAPI, with the
// shared ObjectMeta.
func objectSchema(r *resource, docs map[string]*openapiDoc) *catalog.Schema {
	doc := docs[openapiPath(r.gvr.GroupVersion())]
	if doc != nil {
		if name := doc.kindSchemaName(r.gvr.Group, r.gvr.Version, r.kind); name != "" {
			return withObjectMeta(doc.convert(name))
		}
	}
	return withObjectMeta(&catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
		"apiVersion": {Type: "string"}, "kind": {Type: "string"}, "metadata": {Type: "object"},
	}})
}

// gvScope names r's group-version ("core/v1", "apps/v1") and scope for
// descriptions.
func (r *resource) gvScope() (gv, scope string) {
	gv = r.gvr.GroupVersion().String()
	if r.gvr.Group == "" {
		gv = "core/" + r.gvr.Version
	}
	scope = "cluster-scoped"
	if r.namespaced {
		scope = "namespaced"
	}
	return gv, scope
}

// describe returns the descriptor of verb on r.
func describe(r *resource, verb string, obj *catalog.Schema, hints hintsCache) *catalog.Operation {
	gv, scope := r.gvScope()
	op := &catalog.Operation{
		Name:        "kubernetes." + r.seg + "." + verb,
		Provider:    "kubernetes",
		Group:       r.gvr.Group,
		Resource:    r.gvr.Resource,
		Kind:        r.kind,
		ShortNames:  r.shortNames,
		Verb:        verb,
		Keywords:    append(append([]string{r.singular}, resourceKeywords(r.gvr.Group, r.gvr.Resource)...), verbKeywords(verb)...),
		Hints:       hints.hints(r.gvr.Resource, verb, r.kind),
		OutputName:  r.kind,
		Annotations: catalog.Annotations{ReadOnly: true, Idempotent: true},
	}
	switch verb {
	case "list":
		op.Description = fmt.Sprintf("List %s (%s, %s): a plain array of every page.", r.gvr.Resource, gv, scope)
		if r.namespaced {
			op.Description = fmt.Sprintf("List %s of one namespace or all (%s): a plain array of every page.", r.gvr.Resource, gv)
		}
		op.Input = listInput(r.namespaced)
		op.Output = &catalog.Schema{Type: "array", Items: obj}
	case "get":
		op.Description = fmt.Sprintf("Get one %s by name (%s, %s).", r.singular, gv, scope)
		op.Input = getInput(r.namespaced)
		op.Output = obj
	case "logs":
		op.Description = "A pod container's logs as text; previous: the last terminated container's."
		op.Input = logsInput()
		op.Output = &catalog.Schema{Type: "string"}
		op.OutputName = ""
	}
	if r.kind == "Secret" {
		op.Description += " Secret values are redacted: only data keys are returned."
	}
	return op
}

func prop(t, desc string) *catalog.Schema { return &catalog.Schema{Type: t, Description: desc} }

func listInput(namespaced bool) *catalog.Schema {
	s := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
		"labelSelector": prop("string", "e.g. app=web,tier!=cache"),
		"fieldSelector": prop("string", "e.g. status.phase=Running, spec.nodeName=node-1"),
		"limit":         {Type: "integer", Description: "at most this many items", Minimum: ptr(1.0)},
	}}
	if namespaced {
		s.Properties["namespace"] = prop("string", "defaults to the context's namespace")
		s.Properties["allNamespaces"] = prop("boolean", "list across every namespace")
	}
	return s
}

func getInput(namespaced bool) *catalog.Schema {
	s := &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{
		"name": prop("string", ""),
	}}
	if namespaced {
		s.Properties["namespace"] = prop("string", "defaults to the context's namespace")
	}
	return s
}

func logsInput() *catalog.Schema {
	return &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{
		"name":         prop("string", "pod name"),
		"namespace":    prop("string", "defaults to the context's namespace"),
		"container":    prop("string", "needed when the pod has several containers"),
		"tailLines":    {Type: "integer", Description: "only the last N lines", Minimum: ptr(0.0)},
		"sinceSeconds": {Type: "integer", Description: "only lines newer than this", Minimum: ptr(1.0)},
		"previous":     prop("boolean", "logs of the previous, terminated container (crash loops)"),
		"timestamps":   prop("boolean", "prefix lines with timestamps"),
	}}
}

func involvedObjectInput() *catalog.Schema {
	return &catalog.Schema{Type: "object", Description: "only events about this object", Properties: map[string]*catalog.Schema{
		"kind": prop("string", ""), "name": prop("string", ""), "namespace": prop("string", ""), "uid": prop("string", ""),
	}}
}

func apiResourcesOperation(hints hintsCache) *catalog.Operation {
	item := &catalog.Schema{Type: "object", Required: []string{"resource", "version", "kind", "namespaced", "verbs", "operations"}, Properties: map[string]*catalog.Schema{
		"resource": {Type: "string"}, "group": {Type: "string"}, "version": {Type: "string"}, "kind": {Type: "string"},
		"namespaced": {Type: "boolean"}, "shortNames": {Type: "array", Items: &catalog.Schema{Type: "string"}},
		"verbs": {Type: "array", Items: &catalog.Schema{Type: "string"}}, "operations": {Type: "array", Items: &catalog.Schema{Type: "string"}},
	}}
	return &catalog.Operation{
		Name:        "kubernetes.api_resources",
		Provider:    "kubernetes",
		Verb:        "list",
		Description: "List the API resources the cluster serves (CRDs included) with kind, group, scope, short names and their kubecode operation names.",
		Keywords:    append([]string{"discovery", "api-resources", "crd", "custom resources", "kinds", "types"}, verbKeywords("list")...),
		Hints:       hints.hints("api_resources", "list", ""),
		Input: &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
			"group":      prop("string", "only this API group ('' is core)"),
			"namespaced": prop("boolean", "only namespaced (true) or cluster-scoped (false) resources"),
		}},
		Output:      &catalog.Schema{Type: "array", Items: item},
		OutputName:  "APIResource",
		Annotations: catalog.Annotations{ReadOnly: true, Idempotent: true},
	}
}

func ptr[T any](v T) *T { return &v }
