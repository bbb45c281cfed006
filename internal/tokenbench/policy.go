package tokenbench

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// More of the policy-audit family: answers a table can give (images,
// ingress hosts) and one it cannot (a container's securityContext).

// unpinned reports whether image names no version: no tag and no digest,
// or the tag latest.
func unpinned(image string) bool {
	last := image[strings.LastIndexByte(image, '/')+1:]
	if strings.Contains(image, "@") {
		return false
	}
	return !strings.Contains(last, ":") || strings.HasSuffix(last, ":latest")
}

// UnpinnedImages asks which deployments run an image without a version.
// The answer lists "namespace/deployment: image", sorted.
func UnpinnedImages() *Scenario {
	fromTable := func(text string) []string {
		out := []string{}
		for _, row := range parseTable(text) {
			for _, img := range strings.Split(row["IMAGES"], ",") {
				if img = strings.TrimSpace(img); img != "" && img != "-" && unpinned(img) {
					out = append(out, row["NAMESPACE"]+"/"+row["NAME"]+": "+img)
				}
			}
		}
		sort.Strings(out)
		return out
	}
	return &Scenario{
		Name:     "images without a version (all namespaces)",
		Question: "Which deployments, in any namespace, run an image without a version tag, or tagged latest?",
		agents: map[string]agent{
			KindCode: codeAgent[[]string](`const ds = await tools.kubernetes.deployments.list({ allNamespaces: true })
const unpinned = (img: string) => { const last = img.split('/').pop() ?? ''; return !img.includes('@') && (!last.includes(':') || last.endsWith(':latest')) }
return ds.flatMap(d => (d.spec?.template.spec?.containers ?? []).filter(c => unpinned(c.image ?? '')).map(c => d.metadata.namespace + '/' + d.metadata.name + ': ' + c.image)).sort()`),
			KindDirect: tableAgent("kubernetes_deployments_list", map[string]any{"allNamespaces": true}, func(t string) any { return fromTable(t) }),
			KindPeer:   tableAgent("resources_list", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}, func(t string) any { return fromTable(t) }),
		},
	}
}

// WildcardIngressHosts asks which ingresses route a wildcard host. The
// answer maps "namespace/ingress" to its wildcard hosts.
func WildcardIngressHosts() *Scenario {
	fromTable := func(text string) map[string][]string {
		out := map[string][]string{}
		for _, row := range parseTable(text) {
			for _, h := range strings.Split(row["HOSTS"], ",") {
				if h = strings.TrimSpace(h); strings.HasPrefix(h, "*") {
					k := row["NAMESPACE"] + "/" + row["NAME"]
					out[k] = append(out[k], h)
				}
			}
		}
		return out
	}
	return &Scenario{
		Name:     "wildcard ingress hosts (all namespaces)",
		Question: "Which ingresses, in any namespace, route a wildcard host, and which hosts?",
		agents: map[string]agent{
			KindCode: codeAgent[map[string][]string](`const ings = await tools.kubernetes.ingresses.list({ allNamespaces: true })
const out: Record<string, string[]> = {}
for (const i of ings) {
  const hosts = (i.spec?.rules ?? []).map(r => r.host ?? '').filter(h => h.startsWith('*'))
  if (hosts.length) out[i.metadata.namespace + '/' + i.metadata.name] = hosts
}
return out`),
			KindDirect: tableAgent("kubernetes_ingresses_list", map[string]any{"allNamespaces": true}, func(t string) any { return fromTable(t) }),
			KindPeer:   tableAgent("resources_list", map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"}, func(t string) any { return fromTable(t) }),
		},
	}
}

// PrivilegedPods asks which pods of namespace run a privileged container.
// The answer lists "namespace/pod", sorted.
func PrivilegedPods(namespace string) *Scenario {
	privileged := func(obj []byte) (bool, error) {
		var p struct {
			Spec struct {
				Containers []struct {
					SecurityContext struct {
						Privileged *bool `json:"privileged"`
					} `json:"securityContext"`
				} `json:"containers"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(obj, &p); err != nil {
			return false, err
		}
		for _, c := range p.Spec.Containers {
			if c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				return true, nil
			}
		}
		return false, nil
	}
	// Pod tables show no securityContext: read every pod.
	each := func(rows []map[string]string, get func(name string) (string, error)) (any, error) {
		out := []string{}
		for _, row := range rows {
			text, err := get(row["NAME"])
			if err != nil {
				return nil, err
			}
			p, err := privileged([]byte(text))
			if err != nil {
				return nil, err
			}
			if p {
				out = append(out, namespace+"/"+row["NAME"])
			}
		}
		sort.Strings(out)
		return out, nil
	}
	return &Scenario{
		Name:         "privileged pods (one namespace)",
		OneNamespace: true,
		Question:     fmt.Sprintf("Which pods in namespace %s run a privileged container?", namespace),
		agents: map[string]agent{
			KindCode: codeAgent[[]string](fmt.Sprintf(`const pods = await tools.kubernetes.pods.list({ namespace: %q })
return pods.filter(p => (p.spec?.containers ?? []).some((c: any) => c.securityContext?.privileged)).map(p => p.metadata.namespace + '/' + p.metadata.name).sort()`, namespace)),
			KindDirect: func(r *recorder) (any, error) {
				text, err := r.call("kubernetes_pods_list", map[string]any{"namespace": namespace})
				if err != nil {
					return nil, err
				}
				return each(parseTable(text), func(name string) (string, error) {
					return r.call("kubernetes_pods_get", map[string]any{"namespace": namespace, "name": name})
				})
			},
			KindPeer: func(r *recorder) (any, error) {
				text, err := r.call("pods_list_in_namespace", map[string]any{"namespace": namespace})
				if err != nil {
					return nil, err
				}
				return each(parseTable(text), func(name string) (string, error) {
					return r.call("pods_get", map[string]any{"namespace": namespace, "name": name})
				})
			},
		},
	}
}
