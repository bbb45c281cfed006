package kubeapi

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CreateSummary describes a new object for whoever approves its creation:
// one line per fact, no Secret value. Helm's plans use it for the objects
// a release creates.
func CreateSummary(obj *unstructured.Unstructured) []string {
	var lines []string
	if spec := podSpec(obj); spec != nil {
		lines = append(lines, podLines(spec)...)
	}
	if obj.GetKind() == "Service" {
		typ, _, _ := unstructured.NestedString(obj.Object, "spec", "type")
		ports, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
		var ps []string
		for _, p := range ports {
			if m, ok := p.(map[string]any); ok {
				ps = append(ps, fmt.Sprintf("%v→%v/%v", m["port"], orValue(m["targetPort"], m["port"]), orValue(m["protocol"], "TCP")))
			}
		}
		lines = append(lines, fmt.Sprintf("service %s, ports %s", orValue(typ, "ClusterIP"), strings.Join(ps, ", ")))
	}
	if IsSecret(obj.GetKind()) || obj.GetKind() == "ConfigMap" {
		var keys []string
		for _, f := range []string{"data", "stringData", "binaryData"} {
			m, _, _ := unstructured.NestedMap(obj.Object, f)
			for k := range m {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		if len(keys) > 0 {
			lines = append(lines, "keys: "+strings.Join(keys, ", "))
		}
	}
	return lines
}

func orValue(v, def any) any {
	if v == nil || v == "" {
		return def
	}
	return v
}

// podSpec finds the pod template's spec of a workload, or a Pod's own
// spec: where its kind keeps it (templatePaths), so a decoy at another
// path is not what a reviewer reads.
func podSpec(obj *unstructured.Unstructured) map[string]any {
	for _, path := range templatePaths(obj) {
		if m, ok, _ := unstructured.NestedMap(obj.Object, append(path, "spec")...); ok {
			return m
		}
	}
	return nil
}

// templatePaths are where obj's kind keeps its pod template (its metadata
// and spec below the path): a Pod is its own, a CronJob's is in its job
// template, a PodTemplate's at template, a workload's at spec.template.
// An unknown kind (a custom resource) may keep one at any of them: all
// are given, and every one found is judged.
func templatePaths(obj *unstructured.Unstructured) [][]string {
	core := obj.GroupVersionKind().Group
	switch kind := obj.GetKind(); {
	case core == "" && kind == "Pod":
		return [][]string{{}}
	case core == "" && kind == "PodTemplate":
		return [][]string{{"template"}}
	case core == "batch" && kind == "CronJob":
		return [][]string{{"spec", "jobTemplate", "spec", "template"}}
	case core == "apps" || core == "batch" || core == "" && kind == "ReplicationController":
		return [][]string{{"spec", "template"}}
	}
	return [][]string{{"spec", "jobTemplate", "spec", "template"}, {"spec", "template"}, {"template"}}
}

// podLines describes a pod spec: containers and images, what it may do to
// its node, what it reads.
func podLines(spec map[string]any) []string {
	var lines, warnings []string
	for _, host := range [][2]string{{"hostNetwork", "network"}, {"hostPID", "processes"}, {"hostIPC", "IPC"}} {
		if b, _ := spec[host[0]].(bool); b {
			warnings = append(warnings, "⚠ "+host[0]+": the pod shares the node's "+host[1])
		}
	}
	secrets, configMaps := map[string][]string{}, map[string][]string{}
	var containers []string
	for _, field := range []string{"initContainers", "containers"} {
		list, _ := spec[field].([]any)
		for _, c := range list {
			m, _ := c.(map[string]any)
			if m == nil {
				continue
			}
			name, _ := m["name"].(string)
			desc := fmt.Sprintf("%s (%v)", name, m["image"])
			if field == "initContainers" {
				desc = "init " + desc
			}
			if ports, _ := m["ports"].([]any); len(ports) > 0 {
				var ps []string
				for _, p := range ports {
					if pm, ok := p.(map[string]any); ok {
						ps = append(ps, fmt.Sprint(pm["containerPort"]))
					}
				}
				desc += " ports " + strings.Join(ps, ",")
			}
			containers = append(containers, desc)
			sc, _ := m["securityContext"].(map[string]any)
			if b, _ := sc["privileged"].(bool); b {
				warnings = append(warnings, "⚠ privileged container: "+name)
			}
			if b, _ := sc["allowPrivilegeEscalation"].(bool); b {
				warnings = append(warnings, "⚠ privilege escalation allowed: "+name)
			}
			if caps, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "add"); len(caps) > 0 {
				warnings = append(warnings, fmt.Sprintf("⚠ capabilities added to %s: %s", name, strings.Join(caps, ", ")))
			}
			if uid, ok := sc["runAsUser"].(int64); ok && uid == 0 {
				warnings = append(warnings, "⚠ runs as root: "+name)
			}
			env, _ := m["env"].([]any)
			for _, e := range env {
				em, _ := e.(map[string]any)
				if ref, ok, _ := unstructured.NestedString(em, "valueFrom", "secretKeyRef", "name"); ok {
					key, _, _ := unstructured.NestedString(em, "valueFrom", "secretKeyRef", "key")
					secrets[ref] = append(secrets[ref], fmt.Sprintf("%s env %v (key %s)", name, em["name"], key))
				}
				if ref, ok, _ := unstructured.NestedString(em, "valueFrom", "configMapKeyRef", "name"); ok {
					configMaps[ref] = append(configMaps[ref], fmt.Sprintf("%s env %v", name, em["name"]))
				}
			}
			envFrom, _ := m["envFrom"].([]any)
			for _, e := range envFrom {
				em, _ := e.(map[string]any)
				if ref, ok, _ := unstructured.NestedString(em, "secretRef", "name"); ok {
					secrets[ref] = append(secrets[ref], name+" env (all keys)")
				}
				if ref, ok, _ := unstructured.NestedString(em, "configMapRef", "name"); ok {
					configMaps[ref] = append(configMaps[ref], name+" env (all keys)")
				}
			}
		}
	}
	volumes, _ := spec["volumes"].([]any)
	for _, v := range volumes {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if p, ok, _ := unstructured.NestedString(vm, "hostPath", "path"); ok {
			warnings = append(warnings, fmt.Sprintf("⚠ hostPath volume %s: the node's %s", name, p))
		}
		if ref, ok, _ := unstructured.NestedString(vm, "secret", "secretName"); ok {
			secrets[ref] = append(secrets[ref], "volume "+name)
		}
		if ref, ok, _ := unstructured.NestedString(vm, "configMap", "name"); ok {
			configMaps[ref] = append(configMaps[ref], "volume "+name)
		}
		if claim, ok, _ := unstructured.NestedString(vm, "persistentVolumeClaim", "claimName"); ok {
			lines = append(lines, fmt.Sprintf("volume %s: claim %s", name, claim))
		}
	}
	out := append([]string{"containers: " + strings.Join(containers, "; ")}, warnings...)
	for _, ref := range sortedKeys(secrets) {
		out = append(out, fmt.Sprintf("reads Secret %s: %s", ref, strings.Join(secrets[ref], ", ")))
	}
	for _, ref := range sortedKeys(configMaps) {
		out = append(out, fmt.Sprintf("reads ConfigMap %s: %s", ref, strings.Join(configMaps[ref], ", ")))
	}
	out = append(out, lines...)
	if sa, _ := spec["serviceAccountName"].(string); sa != "" {
		out = append(out, "service account: "+sa)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
