package kubernetes

import (
	"fmt"
	"strings"

	"github.com/kubecode/kubecode/adapters/kubeapi"
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
		for _, verb := range opVerbs {
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
	ops = append(ops, accessOperations()...)
	ops = append(ops, applyOperation())
	for _, op := range ops {
		// Any object an operation's arguments carry may be a Secret.
		op.Annotations.SecretArgs = secretDataKeys
		op.Annotations.TargetArgs = targetArgs
	}
	return ops, aliases
}

// targetArgs name a call's target in every operation's arguments: the
// object's name, namespace and kind (top-level, or in the object or
// manifest a create, replace or apply carries), how a delete propagates,
// a patch's type, and a JSON patch operation's op and path.
var targetArgs = func() []catalog.Path {
	out := []catalog.Path{{"name"}, {"namespace"}, {"type"}, {"propagationPolicy"}, {"patch", "[]", "op"}, {"patch", "[]", "path"}}
	for _, obj := range []string{"object", "manifest"} {
		out = append(out, catalog.Path{obj, "kind"}, catalog.Path{obj, "apiVersion"},
			catalog.Path{obj, "metadata", "name"}, catalog.Path{obj, "metadata", "namespace"}, catalog.Path{obj, "metadata", "generateName"})
	}
	return out
}()

// secretDataKeys are the fields of a Kubernetes object that hold a Secret's
// values.
var secretDataKeys = []string{"data", "stringData"}

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

// subjectOf is the subject search hints know r by: its plural, but a
// measurement's kind (metrics.k8s.io's "pods" are PodMetrics), so that
// questions about pods find the pods.
func subjectOf(r *resource) string {
	if r.gvr.Group == "metrics.k8s.io" {
		return strings.ToLower(r.kind)
	}
	return r.gvr.Resource
}

// describe returns the descriptor of verb on r.
func describe(r *resource, verb string, obj *catalog.Schema, hints hintsCache) *catalog.Operation {
	gv, scope := r.gvScope()
	op := &catalog.Operation{
		Name:        "kubernetes." + r.seg + "." + verb,
		Provider:    "kubernetes",
		Group:       r.gvr.Group,
		Resource:    subjectOf(r),
		Kind:        r.kind,
		ShortNames:  r.shortNames,
		Verb:        verb,
		Keywords:    append(append([]string{r.singular}, resourceKeywords(r.gvr.Group, r.gvr.Resource)...), verbKeywords(verb)...),
		Hints:       hints.hints(subjectOf(r), verb, r.kind),
		OutputName:  r.kind,
		Annotations: catalog.Annotations{ReadOnly: true, Idempotent: true},
	}
	switch {
	case verb == "list":
		op.Description = fmt.Sprintf("List %s (%s, %s): a plain array of every page.", r.gvr.Resource, gv, scope)
		if r.namespaced {
			op.Description = fmt.Sprintf("List %s of one namespace or all (%s): a plain array of every page.", r.gvr.Resource, gv)
		}
		op.Input = listInput(r.namespaced)
		op.Output = &catalog.Schema{Type: "array", Items: obj}
	case verb == "page":
		op.Description = fmt.Sprintf("One page of %s (%s) and where the next starts: for lists too large to hold at once; call again with continue until it is absent. list gives every page at once.", r.gvr.Resource, gv)
		op.Input = listInput(r.namespaced)
		op.Input.Properties["limit"] = &catalog.Schema{Type: "integer", Description: "items in the page: 500 by default, at most 5000", Minimum: ptr(1.0), Maximum: ptr(float64(maxPage))}
		op.Input.Properties["continue"] = prop("string", "the continue of the page before; absent for the first page")
		op.Output = &catalog.Schema{Type: "object", Required: []string{"items"}, Properties: map[string]*catalog.Schema{
			"items":              {Type: "array", Items: obj},
			"continue":           prop("string", "absent after the last page; pass it to get the next (it expires after about five minutes)"),
			"remainingItemCount": {Type: "integer", Description: "items after this page, when the API server says"},
		}}
		op.OutputName = ""
	case verb == "get":
		op.Description = fmt.Sprintf("Get one %s by name (%s, %s).", r.singular, gv, scope)
		op.Input = getInput(r.namespaced)
		op.Output = obj
	case verb == "logs" && r.kind == "Node":
		describeNodeLogs(op)
	case verb == "stats":
		describeNodeStats(op)
	case verb == "top":
		describeTop(op, r)
	case verb == "logs":
		op.Description = "A pod container's logs as text; previous: the last terminated container's."
		op.Input = logsInput()
		op.Output = &catalog.Schema{Type: "string"}
		op.OutputName = ""
	case verb == "exec":
		describeExec(op)
	case verb == "evict":
		describeEvict(op)
	case verb == "drain":
		describeDrain(op)
	case verb == "create" && isReview(r):
		// A review is a question: the API server answers it and stores
		// nothing.
		op.Description = fmt.Sprintf("Ask the API server a question with a %s (%s): it answers in status and stores nothing; a read, never planned. kubernetes.auth.can_i, .whoami and .rules ask the usual ones.", r.kind, gv)
		op.Input = &catalog.Schema{Type: "object", Required: []string{"object"}, Properties: map[string]*catalog.Schema{
			"object": {Type: "object", Description: "the " + r.kind + ": spec (no name needed)", AdditionalProperties: &catalog.Schema{}}}}
		if r.namespaced {
			op.Input.Properties["namespace"] = prop("string", "the namespace asked about")
		}
		op.Output = obj
	default:
		describeWrite(op, r, verb, obj)
	}
	if kubeapi.IsSecret(r.kind) {
		op.Description += " Secret values are redacted: only data keys are returned."
		op.Annotations.Sensitive = true
	}
	return op
}

// gated is what every mutating operation's description says of the gates.
const gated = " A change: a dry run, planned, until approved."

// describeWrite fills the descriptor of a mutating or rollout verb.
func describeWrite(op *catalog.Operation, r *resource, verb string, obj *catalog.Schema) {
	target := getInput(r.namespaced)
	op.Input = target
	op.Output = obj
	op.Annotations = catalog.Annotations{}
	whole := &catalog.Schema{Type: "object", Description: "the whole " + r.kind + " as kubectl apply -f takes it: apiVersion, kind, metadata (name), spec", AdditionalProperties: &catalog.Schema{}}
	switch verb {
	case "create":
		op.Description = fmt.Sprintf("Create a %s from a whole object; fails if it exists.", r.singular)
		op.Input = &catalog.Schema{Type: "object", Required: []string{"object"}, Properties: map[string]*catalog.Schema{"object": whole}}
		if r.namespaced {
			op.Input.Properties["namespace"] = prop("string", "defaults to the object's, then the context's namespace")
		}
	case "run":
		op.Description = "Run a pod of one container, as kubectl run does: name, image, command, args, env; labelled run=NAME. A create like any other: its plan says what it makes."
		op.Input = &catalog.Schema{Type: "object", Required: []string{"name", "image"}, Properties: map[string]*catalog.Schema{
			"name":          prop("string", "the pod's (and its container's) name"),
			"namespace":     prop("string", "defaults to the context's namespace"),
			"image":         prop("string", "e.g. busybox:1.36"),
			"command":       {Type: "array", Items: &catalog.Schema{Type: "string"}, Description: "the entrypoint, e.g. [\"sleep\", \"3600\"]"},
			"args":          {Type: "array", Items: &catalog.Schema{Type: "string"}},
			"env":           {Type: "object", AdditionalProperties: &catalog.Schema{Type: "string"}, Description: "environment variables by name"},
			"labels":        {Type: "object", AdditionalProperties: &catalog.Schema{Type: "string"}, Description: "beside run=NAME"},
			"restartPolicy": {Type: "string", Enum: []any{"Always", "OnFailure", "Never"}, Description: "default Always"},
		}}
		op.Keywords = append(op.Keywords, "kubectl run", "debug pod", "one-off", "start a container")
	case "apply":
		op.Description = fmt.Sprintf("Server-side apply of a %s manifest (field manager kubecode): creates it, or sets exactly the fields the manifest names. Conflicts with other managers are reported, not forced.", r.singular)
		op.Input = &catalog.Schema{Type: "object", Required: []string{"manifest"}, Properties: map[string]*catalog.Schema{
			"manifest": whole,
			"force":    prop("boolean", "take over fields other managers own"),
		}}
		if r.namespaced {
			op.Input.Properties["namespace"] = prop("string", "defaults to the manifest's, then the context's namespace")
		}
		op.Annotations.Idempotent = true
	case "patch":
		op.Description = fmt.Sprintf("Patch fields of one %s: keep the patch to the fields you mean to change.", r.singular)
		target.Required = []string{"name", "patch"}
		target.Properties["patch"] = &catalog.Schema{Description: "strategic/merge: an object of the fields to set, e.g. {spec: {replicas: 3}}; json: a list of {op, path, value}"}
		target.Properties["type"] = &catalog.Schema{Type: "string", Enum: []any{"strategic", "merge", "json"}, Description: "default strategic for built-in kinds, merge for custom resources"}
	case "delete":
		op.Description = fmt.Sprintf("Delete one %s (graceful by default).", r.singular)
		target.Properties["gracePeriodSeconds"] = &catalog.Schema{Type: "integer", Minimum: ptr(0.0), Description: "seconds to terminate gracefully; default the object's own"}
		target.Properties["propagationPolicy"] = &catalog.Schema{Type: "string", Enum: []any{"Foreground", "Background", "Orphan"}, Description: "what happens to dependents; default Background"}
		target.Properties["force"] = prop("boolean", "skip graceful termination (refused unless allowed)")
		op.Output = &catalog.Schema{Type: "object", Required: []string{"kind", "name", "deleted"}, Properties: map[string]*catalog.Schema{
			"kind": {Type: "string"}, "name": {Type: "string"}, "namespace": {Type: "string"}, "deleted": {Type: "boolean"},
			"dryRun": {Type: "boolean", Description: "true when the delete was only planned"},
		}}
		op.OutputName = "Deleted"
		op.Annotations = catalog.Annotations{Destructive: true, Idempotent: true}
	case "scale":
		op.Description = fmt.Sprintf("Scale a %s to a number of replicas (the scale subresource).", r.singular)
		target.Required = []string{"name", "replicas"}
		target.Properties["replicas"] = &catalog.Schema{Type: "integer", Minimum: ptr(0.0)}
		op.Output = &catalog.Schema{Type: "object", Required: []string{"metadata", "spec"}, Properties: map[string]*catalog.Schema{
			"metadata": objectMeta,
			"spec":     {Type: "object", Properties: map[string]*catalog.Schema{"replicas": {Type: "integer"}}},
			"status":   {Type: "object", Properties: map[string]*catalog.Schema{"replicas": {Type: "integer"}, "selector": {Type: "string"}}},
		}}
		op.OutputName = "Scale"
		op.Annotations.Idempotent = true
	case "cordon", "uncordon":
		if verb == "cordon" {
			op.Description = "Cordon a node as kubectl cordon does: mark it unschedulable (spec.unschedulable: true), so no new pod is scheduled there; its pods keep running (nodes.drain also moves them off)."
			op.Keywords = append(op.Keywords, "cordon", "cordon a node", "unschedulable", "mark a node unschedulable", "stop scheduling", "kubectl cordon", "maintenance")
		} else {
			op.Description = "Uncordon a node as kubectl uncordon does: mark it schedulable again (spec.unschedulable: false)."
			op.Keywords = append(op.Keywords, "uncordon", "uncordon a node", "schedulable", "kubectl uncordon", "after maintenance")
		}
		op.Annotations.Idempotent = true
	case "rollout.restart":
		op.Description = fmt.Sprintf("Restart a %s's pods with a rolling update, as kubectl rollout restart does.", r.singular)
	case "rollout.undo":
		op.Description = "Roll a deployment back to its previous revision (or toRevision), as kubectl rollout undo does."
		target.Properties["toRevision"] = &catalog.Schema{Type: "integer", Minimum: ptr(1.0), Description: "a revision from rollout.history; default the previous one"}
	case "rollout.status":
		op.Description = fmt.Sprintf("Whether a %s's rollout is done, as kubectl rollout status decides it (observed generation, updated and available replicas, progress deadline). Poll it with sleep.", r.singular)
		op.Output = rolloutStatusSchema
		op.OutputName = "RolloutStatus"
		op.Annotations = catalog.Annotations{ReadOnly: true, Idempotent: true}
	case "rollout.history":
		op.Description = "A deployment's revisions, oldest first: ReplicaSet, images, change cause; current marks the live one."
		op.Output = &catalog.Schema{Type: "array", Items: revisionSchema}
		op.OutputName = "Revision"
		op.Annotations = catalog.Annotations{ReadOnly: true, Idempotent: true}
	}
	if !op.Annotations.ReadOnly {
		op.Description += gated
	}
}

var rolloutStatusSchema = &catalog.Schema{Type: "object", Required: []string{"done", "failed", "message"}, Properties: map[string]*catalog.Schema{
	"done":               {Type: "boolean", Description: "the rollout finished"},
	"failed":             {Type: "boolean", Description: "the progress deadline passed"},
	"message":            {Type: "string"},
	"generation":         {Type: "integer"},
	"observedGeneration": {Type: "integer"},
	"desired":            {Type: "integer"},
	"updated":            {Type: "integer"},
	"ready":              {Type: "integer"},
	"available":          {Type: "integer"},
}}

var revisionSchema = &catalog.Schema{Type: "object", Required: []string{"revision", "replicaSet", "images", "created", "current"}, Properties: map[string]*catalog.Schema{
	"revision":    {Type: "integer"},
	"replicaSet":  {Type: "string"},
	"images":      {Type: "array", Items: &catalog.Schema{Type: "string"}},
	"changeCause": {Type: "string"},
	"created":     {Type: "string"},
	"current":     {Type: "boolean"},
}}

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
