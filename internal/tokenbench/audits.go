package tokenbench

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// ServicesWithoutReadyEndpoints asks which services of namespace have no
// ready endpoint. The answer lists "namespace/service", sorted.
func ServicesWithoutReadyEndpoints(namespace string) *Scenario {
	unserved := func(services []string, ready map[string]bool) []string {
		out := []string{}
		for _, s := range services {
			if !ready[s] {
				out = append(out, namespace+"/"+s)
			}
		}
		sort.Strings(out)
		return out
	}
	return &Scenario{
		Name:         "services without endpoints (one namespace)",
		OneNamespace: true,
		Question:     fmt.Sprintf("Which services in namespace %s have no ready endpoint?", namespace),
		agents: map[string]agent{
			KindCode: codeAgent[[]string](fmt.Sprintf(`const [svcs, slices] = await Promise.all([
  tools.kubernetes.services.list({ namespace: %[1]q }),
  tools.kubernetes.endpointslices.list({ namespace: %[1]q }),
])
const ready = new Set(slices.filter(s => (s.endpoints ?? []).some(e => e.conditions?.ready)).map(s => s.metadata.labels?.['kubernetes.io/service-name']))
return svcs.filter(s => Object.keys(s.spec?.selector ?? {}).length > 0 && !ready.has(s.metadata.name)).map(s => %[1]q + '/' + s.metadata.name).sort()`, namespace)),
			KindDirect: func(r *recorder) (any, error) {
				svcs, err := r.call("kubernetes_services_list", map[string]any{"namespace": namespace})
				if err != nil {
					return nil, err
				}
				slices, err := r.call("kubernetes_endpointslices_list", map[string]any{"namespace": namespace})
				if err != nil {
					return nil, err
				}
				var services []string
				for _, row := range parseTable(svcs) {
					if row["SELECTOR"] != "" && row["SELECTOR"] != "-" {
						services = append(services, row["NAME"])
					}
				}
				ready := map[string]bool{}
				for _, row := range parseTable(slices) { // a slice is named <service>-<suffix>
					if i := strings.LastIndexByte(row["NAME"], '-'); i > 0 && strings.Contains(row["READY"], "true") {
						ready[row["NAME"][:i]] = true
					}
				}
				return unserved(services, ready), nil
			},
			KindPeer: func(r *recorder) (any, error) {
				svcs, err := r.call("resources_list", map[string]any{"apiVersion": "v1", "kind": "Service", "namespace": namespace})
				if err != nil {
					return nil, err
				}
				slices, err := r.call("resources_list", map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "namespace": namespace})
				if err != nil {
					return nil, err
				}
				var services []string
				for _, row := range parseTable(svcs) {
					if row["SELECTOR"] != "" && row["SELECTOR"] != "<none>" {
						services = append(services, row["NAME"])
					}
				}
				// The table shows every address, ready or not: read each slice.
				ready := map[string]bool{}
				for _, row := range parseTable(slices) {
					text, err := r.call("resources_get", map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "namespace": namespace, "name": row["NAME"]})
					if err != nil {
						return nil, err
					}
					var s struct {
						Metadata struct {
							Labels map[string]string `json:"labels"`
						} `json:"metadata"`
						Endpoints []struct {
							Conditions struct {
								Ready *bool `json:"ready"`
							} `json:"conditions"`
						} `json:"endpoints"`
					}
					if err := yaml.Unmarshal([]byte(text), &s); err != nil {
						return nil, err
					}
					for _, e := range s.Endpoints {
						if e.Conditions.Ready != nil && *e.Conditions.Ready {
							ready[s.Metadata.Labels["kubernetes.io/service-name"]] = true
						}
					}
				}
				return unserved(services, ready), nil
			},
		},
	}
}

// WarningEvents asks which objects of namespace have warning events and
// why. The answer lists "Kind/name: Reason", sorted and without repeats.
func WarningEvents(namespace string) *Scenario {
	set := func(items []string) []string {
		sort.Strings(items)
		out := []string{}
		for i, s := range items {
			if i == 0 || s != items[i-1] {
				out = append(out, s)
			}
		}
		return out
	}
	return &Scenario{
		Name:         "warning events (one namespace)",
		OneNamespace: true,
		Question:     fmt.Sprintf("Which objects in namespace %s have warning events, and for what reason?", namespace),
		agents: map[string]agent{
			KindCode: codeAgent[[]string](fmt.Sprintf(`const evs = await tools.kubernetes.events.list({ namespace: %q })
return [...new Set(evs.filter(e => e.type === 'Warning').map(e => e.involvedObject.kind + '/' + e.involvedObject.name + ': ' + e.reason))].sort()`, namespace)),
			KindDirect: func(r *recorder) (any, error) {
				text, err := r.call("kubernetes_events_list", map[string]any{"namespace": namespace})
				if err != nil {
					return nil, err
				}
				var out []string
				for _, row := range parseTable(text) {
					if row["TYPE"] == "Warning" {
						out = append(out, row["OBJECT"]+"/"+row["OBJECT-NAME"]+": "+row["REASON"])
					}
				}
				return set(out), nil
			},
			KindPeer: func(r *recorder) (any, error) {
				text, err := r.call("events_list", map[string]any{"namespace": namespace})
				if err != nil {
					return nil, err
				}
				var evs []struct {
					InvolvedObject struct{ Kind, Name string }
					Reason, Type   string
				}
				if err := yaml.Unmarshal([]byte(text), &evs); err != nil {
					return nil, err
				}
				var out []string
				for _, e := range evs {
					if e.Type == "Warning" {
						out = append(out, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+": "+e.Reason)
					}
				}
				return set(out), nil
			},
		},
	}
}

// deploymentAudit is a policy audit over every deployment: which ones
// fail a check of their containers. jsCheck is a TypeScript expression on
// a container c that is true when it fails; failing the same on the JSON
// of a container. wrongChecks are checks the code agent guessed first,
// which the type check refuses.
func deploymentAudit(name, question, jsCheck string, failing func(c map[string]any) bool, wrongChecks ...string) *Scenario {
	bad := func(obj []byte) (bool, error) {
		var d struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []map[string]any `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(obj, &d); err != nil {
			return false, err
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if failing(c) {
				return true, nil
			}
		}
		return false, nil
	}
	// Tables show no resources or probes: a table-based agent reads every
	// deployment.
	each := func(rows []map[string]string, get func(ns, name string) (string, error)) (any, error) {
		out := []string{}
		for _, row := range rows {
			text, err := get(row["NAMESPACE"], row["NAME"])
			if err != nil {
				return nil, err
			}
			b, err := bad([]byte(text))
			if err != nil {
				return nil, err
			}
			if b {
				out = append(out, row["NAMESPACE"]+"/"+row["NAME"])
			}
		}
		sort.Strings(out)
		return out, nil
	}
	script := func(check string) string {
		return `const ds = await tools.kubernetes.deployments.list({ allNamespaces: true })
return ds.filter(d => (d.spec?.template.spec?.containers ?? []).some(c => ` + check + `))
  .map(d => d.metadata.namespace + '/' + d.metadata.name).sort()`
	}
	var wrong []string
	for _, w := range wrongChecks {
		wrong = append(wrong, script(w))
	}
	return &Scenario{
		Name:     name,
		Question: question,
		agents: map[string]agent{
			KindCode: codeAgent[[]string](script(jsCheck), wrong...),
			KindDirect: func(r *recorder) (any, error) {
				text, err := r.call("kubernetes_deployments_list", map[string]any{"allNamespaces": true})
				if err != nil {
					return nil, err
				}
				return each(parseTable(text), func(ns, name string) (string, error) {
					return r.call("kubernetes_deployments_get", map[string]any{"namespace": ns, "name": name})
				})
			},
			KindPeer: func(r *recorder) (any, error) {
				text, err := r.call("resources_list", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"})
				if err != nil {
					return nil, err
				}
				return each(parseTable(text), func(ns, name string) (string, error) {
					return r.call("resources_get", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": name})
				})
			},
		},
	}
}

// NoMemoryLimits: which deployments, in any namespace, have a container
// without a memory limit. The answer lists "namespace/deployment", sorted.
func NoMemoryLimits() *Scenario {
	return deploymentAudit("deployments without memory limits (all namespaces)",
		"Which deployments, in any namespace, have a container without a memory limit?",
		"!c.resources?.limits?.memory",
		func(c map[string]any) bool {
			res, _ := c["resources"].(map[string]any)
			lim, _ := res["limits"].(map[string]any)
			return lim["memory"] == nil
		})
}

// NoReadinessProbes: which deployments, in any namespace, have a
// container without a readiness probe. The code agent's first guess
// misspells the field (readinessProbes): what learning from the type
// check costs.
func NoReadinessProbes() *Scenario {
	return deploymentAudit("deployments without readiness probes (all namespaces)",
		"Which deployments, in any namespace, have a container without a readiness probe?",
		"!c.readinessProbe",
		func(c map[string]any) bool { return c["readinessProbe"] == nil },
		"!c.readinessProbes")
}

// SecretReferences audits which Secrets deployments reference (env,
// envFrom, volumes) and whether they exist, without reading a value. The
// answer maps "namespace/deployment" to its references, sorted, each
// "name" or "name (missing)".
func SecretReferences() *Scenario {
	refsOf := func(spec map[string]any) []string {
		var refs []string
		cs, _ := spec["containers"].([]any)
		for _, c := range cs {
			c, _ := c.(map[string]any)
			envs, _ := c["env"].([]any)
			for _, e := range envs {
				vf, _ := e.(map[string]any)["valueFrom"].(map[string]any)
				if r, ok := vf["secretKeyRef"].(map[string]any); ok {
					refs = append(refs, fmt.Sprint(r["name"]))
				}
			}
			froms, _ := c["envFrom"].([]any)
			for _, f := range froms {
				if r, ok := f.(map[string]any)["secretRef"].(map[string]any); ok {
					refs = append(refs, fmt.Sprint(r["name"]))
				}
			}
		}
		vols, _ := spec["volumes"].([]any)
		for _, v := range vols {
			if r, ok := v.(map[string]any)["secret"].(map[string]any); ok {
				refs = append(refs, fmt.Sprint(r["secretName"]))
			}
		}
		return refs
	}
	report := func(ns string, refs []string, exists map[string]bool) []string {
		var out []string
		for _, r := range refs {
			if exists[ns+"/"+r] {
				out = append(out, r)
			} else {
				out = append(out, r+" (missing)")
			}
		}
		sort.Strings(out)
		return out
	}
	fromObjects := func(r *recorder, rows []map[string]string, secrets map[string]bool, get func(ns, name string) (string, error)) (any, error) {
		out := map[string][]string{}
		for _, row := range rows {
			text, err := get(row["NAMESPACE"], row["NAME"])
			if err != nil {
				return nil, err
			}
			var d struct {
				Spec struct {
					Template struct {
						Spec map[string]any `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal([]byte(text), &d); err != nil {
				return nil, err
			}
			if refs := refsOf(d.Spec.Template.Spec); len(refs) > 0 {
				out[row["NAMESPACE"]+"/"+row["NAME"]] = report(row["NAMESPACE"], refs, secrets)
			}
		}
		return out, nil
	}
	secretSet := func(text string) map[string]bool {
		out := map[string]bool{}
		for _, row := range parseTable(text) {
			out[row["NAMESPACE"]+"/"+row["NAME"]] = true
		}
		return out
	}
	return &Scenario{
		Name:     "secret-reference audit (all namespaces)",
		Question: "Which Secrets does each deployment reference, and which of them do not exist? Do not reveal any value.",
		agents: map[string]agent{
			KindCode: codeAgent[map[string][]string](`const [ds, secrets] = await Promise.all([
  tools.kubernetes.deployments.list({ allNamespaces: true }),
  tools.kubernetes.secrets.list({ allNamespaces: true }),
])
const exists = new Set(secrets.map(s => s.metadata.namespace + '/' + s.metadata.name))
const out: Record<string, string[]> = {}
for (const d of ds) {
  const spec: any = d.spec?.template.spec ?? {}
  const refs: string[] = []
  for (const c of spec.containers ?? []) {
    for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef) refs.push(e.valueFrom.secretKeyRef.name)
    for (const f of c.envFrom ?? []) if (f.secretRef) refs.push(f.secretRef.name)
  }
  for (const v of spec.volumes ?? []) if (v.secret) refs.push(v.secret.secretName)
  const ns = d.metadata.namespace
  if (refs.length) out[ns + '/' + d.metadata.name] = refs.map(r => exists.has(ns + '/' + r) ? r : r + ' (missing)').sort()
}
return out`),
			KindDirect: func(r *recorder) (any, error) {
				list, err := r.call("kubernetes_deployments_list", map[string]any{"allNamespaces": true})
				if err != nil {
					return nil, err
				}
				secrets, err := r.call("kubernetes_secrets_list", map[string]any{"allNamespaces": true})
				if err != nil {
					return nil, err
				}
				return fromObjects(r, parseTable(list), secretSet(secrets), func(ns, name string) (string, error) {
					return r.call("kubernetes_deployments_get", map[string]any{"namespace": ns, "name": name})
				})
			},
			KindPeer: func(r *recorder) (any, error) {
				list, err := r.call("resources_list", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"})
				if err != nil {
					return nil, err
				}
				secrets, err := r.call("resources_list", map[string]any{"apiVersion": "v1", "kind": "Secret"})
				if err != nil {
					return nil, err
				}
				return fromObjects(r, parseTable(list), secretSet(secrets), func(ns, name string) (string, error) {
					return r.call("resources_get", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": name})
				})
			},
		},
	}
}
