package kubeapi

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// CreateSummary describes a new object for whoever approves its creation:
// one line per fact, no Secret value. Helm's plans use it for the objects
// a release creates.
func CreateSummary(obj *unstructured.Unstructured) []string {
	var lines []string
	if spec := podSpec(obj); spec != nil {
		lines = append(lines, podLines(spec)...)
	}
	if Workloads[obj.GetKind()] && obj.GetKind() != "DaemonSet" {
		lines = append([]string{fmt.Sprintf("replicas %d", Replicas(obj))}, lines...)
	}
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Service":
		lines = append(lines, serviceLine(obj))
	case "NetworkPolicy.networking.k8s.io":
		lines = append(lines, networkPolicyLines(obj)...)
	case "HorizontalPodAutoscaler.autoscaling":
		lines = append(lines, autoscalerLine(obj))
	case "PodDisruptionBudget.policy":
		sel, _, _ := unstructured.NestedMap(obj.Object, "spec", "selector")
		for _, f := range []string{"minAvailable", "maxUnavailable"} {
			if v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", f); ok {
				lines = append(lines, fmt.Sprintf("%s %v of pods %s", f, v, selectorText(sel)))
			}
		}
	case "Ingress.networking.k8s.io":
		lines = append(lines, ingressLines(obj)...)
	case "PersistentVolumeClaim":
		lines = append(lines, claimLine(obj))
	case "ResourceQuota":
		if hard, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "hard"); len(hard) > 0 {
			lines = append(lines, "allows at most "+pairs(hard, " "))
		}
	case "LimitRange":
		lines = append(lines, limitRangeLines(obj)...)
	}
	if obj.GetKind() == "ConfigMap" {
		if data, _, _ := unstructured.NestedStringMap(obj.Object, "data"); len(data) > 0 {
			shown := make(map[string]string, len(data))
			for k, v := range data {
				if len(v) > 60 {
					v = v[:57] + "…"
				}
				shown[k] = fmt.Sprintf("%q", v)
			}
			lines = append(lines, "data: "+pairs(shown, " = "))
		}
	}
	if IsSecret(obj.GetKind()) { // names, never values
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

// serviceLine says what a Service is as the API means it: its type
// (headless when clusterIP is None), the pods it selects and its ports.
func serviceLine(obj *unstructured.Unstructured) string {
	typ, _, _ := unstructured.NestedString(obj.Object, "spec", "type")
	typ = fmt.Sprint(orValue(typ, "ClusterIP"))
	if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip == "None" && typ == "ClusterIP" {
		typ = "headless (clusterIP None: DNS names the pods, no virtual IP)"
	}
	line := "service " + typ
	if typ == "ExternalName" {
		name, _, _ := unstructured.NestedString(obj.Object, "spec", "externalName")
		return line + " → " + name
	}
	if sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector"); len(sel) > 0 {
		line += ", selects pods " + labels.SelectorFromSet(sel).String()
	} else {
		line += ", selects no pods (endpoints set by hand)"
	}
	ports, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
	var ps []string
	for _, p := range ports {
		if m, ok := p.(map[string]any); ok {
			ps = append(ps, fmt.Sprintf("%v→%v/%v", m["port"], orValue(m["targetPort"], m["port"]), orValue(m["protocol"], "TCP")))
		}
	}
	return line + ", ports " + strings.Join(ps, ", ")
}

// selectorText is a label selector as kubectl prints it ("app=web"), or
// "(all)" when it selects everything.
func selectorText(sel map[string]any) string {
	var ls metav1.LabelSelector
	if sel != nil && runtime.DefaultUnstructuredConverter.FromUnstructured(sel, &ls) != nil {
		return fmt.Sprint(sel)
	}
	if s := metav1.FormatLabelSelector(&ls); s != "<none>" {
		return s
	}
	return "(all)"
}

// networkPolicyLines say whom a NetworkPolicy applies to and what it lets
// in and out, rule by rule: an empty rule list of a listed type denies
// all of that direction.
func networkPolicyLines(obj *unstructured.Unstructured) []string {
	sel, _, _ := unstructured.NestedMap(obj.Object, "spec", "podSelector")
	out := []string{"applies to pods " + selectorText(sel)}
	types, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "policyTypes")
	_, hasEgress, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "egress")
	if len(types) == 0 {
		types = []string{"Ingress"}
		if hasEgress {
			types = append(types, "Egress")
		}
	}
	for _, t := range types {
		field, peers, dir := "ingress", "from", "in"
		if t == "Egress" {
			field, peers, dir = "egress", "to", "out"
		}
		rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", field)
		if len(rules) == 0 {
			out = append(out, field+": denies all traffic "+dir)
			continue
		}
		for i, r := range rules {
			rm, _ := r.(map[string]any)
			var who []string
			list, _ := rm[peers].([]any)
			for _, p := range list {
				pm, _ := p.(map[string]any)
				var parts []string
				if ps, ok := pm["podSelector"].(map[string]any); ok {
					parts = append(parts, "pods "+selectorText(ps))
				}
				if ns, ok := pm["namespaceSelector"].(map[string]any); ok {
					parts = append(parts, "namespaces "+selectorText(ns))
				}
				if cidr, ok, _ := unstructured.NestedString(pm, "ipBlock", "cidr"); ok {
					ip := "addresses " + cidr
					if except, _, _ := unstructured.NestedStringSlice(pm, "ipBlock", "except"); len(except) > 0 {
						ip += " except " + strings.Join(except, ", ")
					}
					parts = append(parts, ip)
				}
				who = append(who, strings.Join(parts, " in "))
			}
			if len(who) == 0 {
				who = []string{"anywhere"}
			}
			ports := "all ports"
			if pl, _ := rm["ports"].([]any); len(pl) > 0 {
				var ps []string
				for _, p := range pl {
					pm, _ := p.(map[string]any)
					ps = append(ps, fmt.Sprintf("%v/%v", orValue(pm["port"], "*"), orValue(pm["protocol"], "TCP")))
				}
				ports = "ports " + strings.Join(ps, ", ")
			}
			out = append(out, fmt.Sprintf("%s rule %d: allows %s %s on %s", field, i+1, peers, strings.Join(who, "; "), ports))
		}
	}
	return out
}

// autoscalerLine says what an HPA scales, between which bounds, on what.
func autoscalerLine(obj *unstructured.Unstructured) string {
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "scaleTargetRef", "kind")
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "scaleTargetRef", "name")
	minR, ok := Int(obj.Object, "spec", "minReplicas")
	if !ok {
		minR = 1
	}
	maxR, _ := Int(obj.Object, "spec", "maxReplicas")
	line := fmt.Sprintf("scales %s %s between %d and %d replicas", kind, name, minR, maxR)
	var on []string
	if cpu, ok := Int(obj.Object, "spec", "targetCPUUtilizationPercentage"); ok {
		on = append(on, fmt.Sprintf("cpu %d%% of requests", cpu))
	}
	metrics, _, _ := unstructured.NestedSlice(obj.Object, "spec", "metrics")
	for _, m := range metrics {
		mm, _ := m.(map[string]any)
		typ, _ := mm["type"].(string)
		res, _ := mm["resource"].(map[string]any)
		if res == nil {
			on = append(on, strings.ToLower(typ)+" metric")
			continue
		}
		target, _ := res["target"].(map[string]any)
		switch {
		case target["averageUtilization"] != nil:
			on = append(on, fmt.Sprintf("%v %v%% of requests", res["name"], target["averageUtilization"]))
		case target["averageValue"] != nil:
			on = append(on, fmt.Sprintf("%v averaging %v", res["name"], target["averageValue"]))
		default:
			on = append(on, fmt.Sprint(res["name"]))
		}
	}
	if len(on) > 0 {
		line += " on " + strings.Join(on, ", ")
	}
	return line
}

// ingressLines say which hosts and paths an Ingress routes to which
// Services.
func ingressLines(obj *unstructured.Unstructured) []string {
	var out []string
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	for _, r := range rules {
		rm, _ := r.(map[string]any)
		host := fmt.Sprint(orValue(rm["host"], "*"))
		paths, _, _ := unstructured.NestedSlice(rm, "http", "paths")
		for _, p := range paths {
			pm, _ := p.(map[string]any)
			svc, _, _ := unstructured.NestedString(pm, "backend", "service", "name")
			port, _, _ := unstructured.NestedFieldNoCopy(pm, "backend", "service", "port", "number")
			if port == nil {
				port, _, _ = unstructured.NestedFieldNoCopy(pm, "backend", "service", "port", "name")
			}
			out = append(out, fmt.Sprintf("routes %s%v to Service %s:%v", host, orValue(pm["path"], "/"), svc, port))
		}
	}
	if tls, _, _ := unstructured.NestedSlice(obj.Object, "spec", "tls"); len(tls) > 0 {
		out = append(out, fmt.Sprintf("TLS for %d host group(s)", len(tls)))
	}
	return out
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
			if res, _ := m["resources"].(map[string]any); len(res) > 0 {
				for _, f := range []string{"requests", "limits"} {
					if rm, _ := res[f].(map[string]any); len(rm) > 0 {
						var rs []string
						for _, k := range sortedKeys(rm) {
							rs = append(rs, fmt.Sprintf("%s %v", k, rm[k]))
						}
						desc += " " + f + " " + strings.Join(rs, ", ")
					}
				}
			} else {
				desc += " no resource requests or limits"
			}
			if mounts, _ := m["volumeMounts"].([]any); len(mounts) > 0 {
				var ms []string
				for _, v := range mounts {
					vm, _ := v.(map[string]any)
					mnt := fmt.Sprintf("%v at %v", vm["name"], vm["mountPath"])
					if ro, _ := vm["readOnly"].(bool); ro {
						mnt += " (read-only)"
					}
					ms = append(ms, mnt)
				}
				desc += " mounts " + strings.Join(ms, ", ")
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

// claimLine says what a PersistentVolumeClaim asks for: its size, its
// storage class (or the cluster's default) and how it is mounted.
func claimLine(obj *unstructured.Unstructured) string {
	size, _, _ := unstructured.NestedString(obj.Object, "spec", "resources", "requests", "storage")
	class, found, _ := unstructured.NestedString(obj.Object, "spec", "storageClassName")
	switch {
	case !found:
		class = "the cluster's default storage class"
	case class == "":
		class = "no storage class (a volume bound by hand)"
	default:
		class = "storage class " + class
	}
	modes, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "accessModes")
	line := fmt.Sprintf("claims %s of %s, %s", orValue(size, "(no size)"), class, strings.Join(modes, ", "))
	if vol, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeName"); vol != "" {
		line += ", volume " + vol
	}
	return line
}

// limitRangeLines say what a LimitRange sets, by type: its defaults, its
// least and most.
func limitRangeLines(obj *unstructured.Unstructured) []string {
	items, _, _ := unstructured.NestedSlice(obj.Object, "spec", "limits")
	var out []string
	for _, it := range items {
		m, _ := it.(map[string]any)
		typ, _ := m["type"].(string)
		var parts []string
		for _, f := range []struct{ key, say string }{{"default", "default limit"}, {"defaultRequest", "default request"}, {"min", "least"}, {"max", "most"}, {"maxLimitRequestRatio", "most limit/request"}} {
			if v, ok := m[f.key].(map[string]any); ok && len(v) > 0 {
				vals := make(map[string]string, len(v))
				for k, x := range v {
					vals[k] = fmt.Sprint(x)
				}
				parts = append(parts, f.say+" "+pairs(vals, " "))
			}
		}
		if len(parts) > 0 {
			out = append(out, "each "+strings.ToLower(typ)+": "+strings.Join(parts, "; "))
		}
	}
	return out
}

// pairs writes a map as "k<sep>v, ...", sorted by key.
func pairs(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + sep + m[k]
	}
	return strings.Join(out, ", ")
}
