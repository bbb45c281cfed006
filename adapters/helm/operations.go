package helm

import "github.com/kubecode/kubecode/catalog"

func prop(t, desc string) *catalog.Schema { return &catalog.Schema{Type: t, Description: desc} }

// gated is what every changing operation's description says of the gates.
const gated = " A change: a dry run, planned, until approved; each object of the release passes the same rules as a direct change."

// operations describes the Helm operations.
func operations() []*catalog.Operation {
	release := &catalog.Schema{Type: "object", Name: "HelmRelease",
		Required: []string{"name", "namespace", "revision", "status", "chart", "chartVersion", "updated"},
		Properties: map[string]*catalog.Schema{
			"name":         prop("string", ""),
			"namespace":    prop("string", ""),
			"revision":     prop("integer", "counts from 1; every upgrade and rollback adds one"),
			"status":       {Type: "string", Enum: []any{"deployed", "failed", "pending-install", "pending-upgrade", "pending-rollback", "superseded", "uninstalled", "uninstalling", "unknown"}},
			"chart":        prop("string", "chart name"),
			"chartVersion": prop("string", ""),
			"appVersion":   prop("string", ""),
			"updated":      prop("string", "RFC 3339"),
			"description":  prop("string", "e.g. Install complete, Upgrade complete, Rollback to 2"),
		}}
	object := &catalog.Schema{Type: "object", Name: "HelmObject", Description: "a Kubernetes object as the chart rendered it; Secrets keep their keys, values redacted",
		Required: []string{"apiVersion", "kind", "metadata"},
		Properties: map[string]*catalog.Schema{
			"apiVersion": prop("string", ""),
			"kind":       prop("string", ""),
			"metadata": {Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{
				"name": prop("string", ""), "namespace": prop("string", ""),
				"labels":      {Type: "object", AdditionalProperties: &catalog.Schema{Type: "string"}},
				"annotations": {Type: "object", AdditionalProperties: &catalog.Schema{Type: "string"}},
			}},
			"spec": {Type: "object", AdditionalProperties: &catalog.Schema{}},
			"data": {Type: "object", AdditionalProperties: &catalog.Schema{Type: "string"}},
		},
		AdditionalProperties: &catalog.Schema{}}
	target := func(revision bool) *catalog.Schema {
		s := &catalog.Schema{Type: "object", Required: []string{"release"}, Properties: map[string]*catalog.Schema{
			"release":   prop("string", "release name"),
			"namespace": prop("string", "the release's namespace; defaults to the context's"),
		}}
		if revision {
			s.Properties["revision"] = &catalog.Schema{Type: "integer", Description: "a past revision; defaults to the latest", Minimum: ptr(1.0)}
		}
		return s
	}
	chartProps := func(s *catalog.Schema) *catalog.Schema {
		s.Properties["chart"] = prop("string", `a chart from an allowed source: local path ("./examples/charts/web-app"), "repo/name", or oci://...`)
		s.Properties["version"] = prop("string", "chart version constraint (repository and OCI charts)")
		s.Properties["values"] = &catalog.Schema{Type: "object", Description: "values overriding the chart's values.yaml", AdditionalProperties: &catalog.Schema{}}
		return s
	}
	waiting := func(s *catalog.Schema) *catalog.Schema {
		s.Properties["wait"] = prop("boolean", "wait until the objects are ready (Deployments Available, ...); default true")
		s.Properties["timeoutSeconds"] = &catalog.Schema{Type: "integer", Description: "how long to wait; default 120", Minimum: ptr(1.0)}
		return s
	}
	changeOut := &catalog.Schema{Type: "object", Name: "HelmChange", Required: []string{"release", "dryRun", "changes"}, Properties: map[string]*catalog.Schema{
		"release": release,
		"dryRun":  prop("boolean", "true when planned: nothing changed yet"),
		"changes": {Type: "array", Items: &catalog.Schema{Type: "string"}, Description: `"create Deployment/web", "update Deployment/web: spec.replicas", "delete ConfigMap/old"`},
		"notes":   prop("string", "the chart's NOTES.txt, rendered"),
	}}
	row := &catalog.Schema{Type: "object", Required: []string{"object", "change"}, Properties: map[string]*catalog.Schema{
		"object": prop("string", `"Deployment/web"`),
		"path":   prop("string", `the field, list items by key: "spec.template.spec.containers[web].image"; absent for whole objects`),
		"change": {Type: "string", Enum: []any{"changed", "removed", "added", "missing", "extra", "error"},
			Description: "changed: the release sets another value; removed: the release sets it, the cluster lacks it; added: set outside the release; missing: object gone; extra: labelled as the release's but no longer rendered"},
		"expected": {Description: "what the release sets (server defaults applied)"},
		"actual":   {Description: "what the cluster holds"},
		"manager":  prop("string", "the field manager that set the live value (kubectl-edit, kubectl-set, kube-controller-manager, ...)"),
	}}
	rw := catalog.Annotations{ReadOnly: true, Idempotent: true}
	op := func(verb, desc string, keywords []string, hints *catalog.Hints, in, out *catalog.Schema, outName string, ann catalog.Annotations) *catalog.Operation {
		// What names a call's target, kept in records that elide its
		// values (the values a release is given may hold secrets).
		ann.TargetArgs = []catalog.Path{{"release"}, {"namespace"}, {"chart"}, {"version"}, {"revision"}}
		return &catalog.Operation{Name: "helm." + verb, Provider: "helm", Group: "helm", Resource: "releases", Kind: "HelmRelease",
			ShortNames: []string{"helm", "release", "chart"}, Verb: verb, Description: desc, Keywords: keywords, Hints: hints,
			Input: in, Output: out, OutputName: outName, Annotations: ann}
	}
	listIn := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
		"namespace":     prop("string", "defaults to the context's namespace"),
		"allNamespaces": prop("boolean", "releases of every namespace"),
		"filter":        prop("string", "regular expression on release names"),
		"all":           prop("boolean", "every state, superseded and uninstalled (kept history) too; default: deployed, failed and pending"),
	}}
	valuesIn := target(true)
	valuesIn.Properties["all"] = prop("boolean", "the computed values (chart defaults merged), not only those the user supplied")
	manifestIn := target(true)
	manifestIn.Properties["hooks"] = prop("boolean", "include the chart's hooks (Jobs run on install, ...)")
	templateIn := chartProps(&catalog.Schema{Type: "object", Required: []string{"chart"}, Properties: map[string]*catalog.Schema{
		"release":   prop("string", "the release name to render with; default release-name"),
		"namespace": prop("string", "defaults to the context's namespace"),
	}})
	installIn := waiting(chartProps(target(false)))
	installIn.Required = []string{"release", "chart"}
	installIn.Properties["createNamespace"] = prop("boolean", "create the namespace if missing")
	upgradeIn := waiting(chartProps(target(false)))
	upgradeIn.Required = []string{"release", "chart"}
	upgradeIn.Properties["reuseValues"] = prop("boolean", "merge values into the last release's user-supplied values")
	upgradeIn.Properties["resetValues"] = prop("boolean", "start again from the chart's values")
	rollbackIn := waiting(target(false))
	rollbackIn.Properties["revision"] = &catalog.Schema{Type: "integer", Description: "the revision to return to; defaults to the previous one", Minimum: ptr(1.0)}
	uninstallIn := waiting(target(false))
	uninstallIn.Properties["keepHistory"] = prop("boolean", "keep the release's history (status uninstalled)")
	driftIn := target(false)
	driftIn.Properties["ignore"] = &catalog.Schema{Type: "array", Items: &catalog.Schema{Type: "string"},
		Description: `JSON pointers to leave out: "/spec/replicas" (every object) or "Deployment/web:/spec/replicas"; a segment may be an index, an item's key ("web") or "*"`}
	driftIn.Properties["ignoreManagers"] = &catalog.Schema{Type: "array", Items: &catalog.Schema{Type: "string"},
		Description: `leave out fields these field managers own, e.g. ["kube-controller-manager"] for replicas an autoscaler sets`}
	driftIn.Properties["extra"] = prop("boolean", "also report objects labelled as the release's that it no longer renders")
	driftOut := &catalog.Schema{Type: "object", Required: []string{"release", "namespace", "revision", "checked", "drifted", "rows", "method"}, Properties: map[string]*catalog.Schema{
		"release": prop("string", ""), "namespace": prop("string", ""), "revision": prop("integer", ""),
		"checked": prop("integer", "objects compared"),
		"drifted": prop("integer", "objects with at least one row"),
		"rows":    {Type: "array", Items: row},
		"method":  prop("string", "how the comparison was made"),
	}}
	statusOut := &catalog.Schema{Type: "object", Required: append([]string{"objects"}, release.Required...), Properties: map[string]*catalog.Schema{
		"firstDeployed": prop("string", "RFC 3339"),
		"objects":       {Type: "array", Items: &catalog.Schema{Type: "string"}, Description: `what the release deployed: "Deployment/web"`},
		"hooks":         {Type: "array", Items: &catalog.Schema{Type: "string"}},
	}}
	for k, v := range release.Properties {
		statusOut.Properties[k] = v
	}
	change := catalog.Annotations{}
	return []*catalog.Operation{
		op("list", "List Helm releases (deployed, failed, pending) of a namespace or all: name, chart, revision, status.",
			[]string{"releases", "installed", "charts", "deployed"}, &catalog.Hints{VerbWords: []string{"which", "installed", "show"}, Intents: []string{"installed", "deployed", "running"},
				Columns: columns("NAME", "name", "NAMESPACE", "namespace", "REVISION", "revision", "STATUS", "status", "CHART", "chart", "VERSION", "chartVersion", "UPDATED", "updated")},
			listIn, &catalog.Schema{Type: "array", Items: release}, "HelmRelease", rw),
		op("status", "A Helm release's status: revision, chart, when deployed, and the objects it deployed.",
			[]string{"state", "deployed", "objects", "resources"}, &catalog.Hints{Intents: []string{"healthy", "succeeded", "failed"}},
			target(true), statusOut, "HelmStatus", rw),
		op("history", "A Helm release's revisions, oldest first: revision, chart version, status, description.",
			[]string{"revisions", "versions", "upgrades", "past"}, &catalog.Hints{Intents: []string{"when", "upgraded", "previous", "earlier"},
				Columns: columns("REVISION", "revision", "UPDATED", "updated", "STATUS", "status", "CHART", "chart", "VERSION", "chartVersion", "DESCRIPTION", "description")},
			target(false), &catalog.Schema{Type: "array", Items: release}, "HelmRelease", rw),
		op("get_values", "The values a Helm release uses: user-supplied, or all (chart defaults merged). Secret-looking values are redacted.",
			[]string{"values", "configuration", "settings", "overrides", "config"}, &catalog.Hints{Intents: []string{"configured", "uses", "set"}},
			valuesIn, &catalog.Schema{Type: "object", AdditionalProperties: &catalog.Schema{}}, "HelmValues", rw),
		op("get_manifest", "The objects a Helm release rendered, parsed (not YAML). Secrets keep only their keys.",
			[]string{"manifest", "objects", "rendered", "resources", "yaml"}, &catalog.Hints{Intents: []string{"rendered", "deployed"}},
			manifestIn, &catalog.Schema{Type: "array", Items: object}, "HelmObject", rw),
		op("get_notes", "A Helm release's rendered NOTES.txt, as text.",
			[]string{"notes", "instructions", "readme"}, nil, target(true), &catalog.Schema{Type: "string"}, "", rw),
		op("template", "Render a chart locally without installing (helm template): the objects and notes.",
			[]string{"render", "template", "preview", "dry", "chart"}, &catalog.Hints{VerbWords: []string{"render", "preview"}},
			templateIn, &catalog.Schema{Type: "object", Name: "HelmRendered", Required: []string{"objects"}, Properties: map[string]*catalog.Schema{
				"objects": {Type: "array", Items: object}, "notes": prop("string", ""),
			}}, "HelmRendered", rw),
		op("install", "Install a chart as a new Helm release and wait for it to be ready."+gated,
			[]string{"deploy", "install", "chart", "new"}, &catalog.Hints{VerbWords: []string{"install", "deploy"}},
			installIn, changeOut, "HelmChange", change),
		op("upgrade", "Upgrade a Helm release to a chart version or new values, and wait for it to be ready."+gated,
			[]string{"upgrade", "update", "values", "bump", "version"}, &catalog.Hints{VerbWords: []string{"upgrade", "update", "change", "bump"}},
			upgradeIn, changeOut, "HelmChange", change),
		op("rollback", "Roll a Helm release back to an earlier revision (default: the previous one)."+gated,
			[]string{"rollback", "roll", "back", "revert", "undo", "previous", "restore"}, &catalog.Hints{VerbWords: []string{"rollback", "roll", "revert", "undo", "restore"}},
			rollbackIn, changeOut, "HelmChange", catalog.Annotations{Destructive: true}),
		op("uninstall", "Uninstall a Helm release: delete every object it deployed."+gated,
			[]string{"uninstall", "remove", "delete"}, &catalog.Hints{VerbWords: []string{"uninstall", "remove", "delete"}},
			uninstallIn, changeOut, "HelmChange", catalog.Annotations{Destructive: true}),
		op("drift", "What changed in the cluster since a Helm release: its objects compared with what the release sets (server defaults applied, no false positives), as compact rows.",
			[]string{"drift", "diff", "changed", "modified", "edited", "hand", "manual", "compare", "audit", "since"},
			&catalog.Hints{Intents: []string{"drift", "drifted", "changed", "modified", "edited", "differs", "diverged", "since"}, VerbWords: []string{"compare", "diff", "audit"}},
			driftIn, driftOut, "HelmDrift", rw),
	}
}

// columns pairs names and paths: the columns of a table of results.
func columns(namePath ...string) []catalog.Column {
	var out []catalog.Column
	for i := 0; i+1 < len(namePath); i += 2 {
		out = append(out, catalog.Column{Name: namePath[i], Paths: []string{namePath[i+1]}})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
