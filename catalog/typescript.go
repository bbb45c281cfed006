package catalog

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
)

// TypeScript declarations are what search_tools answers with, so every byte
// is a token the model pays for. The operations become one
//
//	declare const tools: { kubernetes: { pods: { list(...): Promise<Pod[]> } } }
//
// block (one line per operation, with a one-line doc comment), followed by
// one single-line interface per named result type. Result types are
// compacted: each keeps the fields an agent needs within a character
// budget and closes every cut object with an index signature
// ([k: string]: unknown), so the model knows there is more.

// typeBudget is the approximate number of characters a named result type
// may spend on fields beyond its always-kept paths.
const typeBudget = 1600

// maxEnum is the longest enum shown as a union of literals.
const maxEnum = 16

// objectMeta replaces every metadata field: the compact, shared form of
// Kubernetes' ObjectMeta.
const objectMeta = "interface ObjectMeta { name: string; namespace?: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; resourceVersion?: string; generation?: number; ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[]; [k: string]: unknown }"

const more = "[k: string]: unknown"

// Declaration returns the TypeScript declaration of one operation and its
// result types.
func Declaration(op *Operation) string {
	return Declarations([]*Operation{op})
}

// Declarations returns the TypeScript declarations of ops, in order, with
// result types shared between them (Pod for pods.list and pods.get,
// ObjectMeta for all) declared once.
func Declarations(ops []*Operation) string {
	d := &declarer{named: map[string]string{}}
	root := &tsNode{}
	for _, op := range ops {
		root.add(strings.Split(op.Name, "."), op)
	}
	var b strings.Builder
	b.WriteString("declare const tools: {\n")
	for _, c := range root.children {
		d.writeNode(&b, c, 1)
	}
	b.WriteString("};\n")
	for _, name := range d.order {
		b.WriteString(d.named[name])
		b.WriteString("\n")
	}
	if d.meta {
		b.WriteString(objectMeta)
		b.WriteString("\n")
	}
	return b.String()
}

// tsNode is one segment of the operation names' tree.
type tsNode struct {
	name     string
	op       *Operation
	children []*tsNode
}

func (n *tsNode) add(path []string, op *Operation) {
	if len(path) == 0 {
		n.op = op
		return
	}
	for _, c := range n.children {
		if c.name == path[0] {
			c.add(path[1:], op)
			return
		}
	}
	c := &tsNode{name: path[0]}
	n.children = append(n.children, c)
	c.add(path[1:], op)
}

// declarer renders operations and collects the named types they use.
type declarer struct {
	named map[string]string // name → "interface Name { ... }"
	order []string
	meta  bool // ObjectMeta is used
}

func (d *declarer) writeNode(b *strings.Builder, n *tsNode, depth int) {
	indent := strings.Repeat("  ", depth)
	if n.op != nil {
		if desc := oneLine(n.op.Description); desc != "" {
			fmt.Fprintf(b, "%s/** %s */\n", indent, desc)
		}
		fmt.Fprintf(b, "%s%s(%s): Promise<%s>;\n", indent, propName(n.name), d.input(n.op.Input), d.output(n.op))
	}
	if len(n.children) > 0 {
		fmt.Fprintf(b, "%s%s: {\n", indent, propName(n.name))
		for _, c := range n.children {
			d.writeNode(b, c, depth+1)
		}
		fmt.Fprintf(b, "%s};\n", indent)
	}
}

func (d *declarer) input(s *Schema) string {
	if s == nil {
		return ""
	}
	opt := "?"
	if len(s.Required) > 0 {
		opt = ""
	}
	return "input" + opt + ": " + d.render(s, "", nil)
}

// output names the result type and declares it.
func (d *declarer) output(op *Operation) string {
	s := op.Output
	if s == nil {
		return "unknown"
	}
	name := op.OutputName
	switch {
	case isObject(s) && len(s.Properties) > 0:
		if name == "" {
			name = pascal(op.Name) + "Result"
		}
		return d.declare(name, op, s)
	case s.Type == "array" && s.Items != nil && isObject(s.Items) && len(s.Items.Properties) > 0:
		if name == "" {
			name = pascal(op.Name) + "Item"
		}
		return d.declare(name, op, s.Items) + "[]"
	}
	return d.render(s, "", nil)
}

// declare adds "interface name { ... }" for s, compacted, and returns the
// name it got: a different type already called name makes it qualify the
// name with the group ("EventEventsK8sIo", "EventCore"), then number it.
func (d *declarer) declare(name string, op *Operation, s *Schema) string {
	name = identifier(name)
	body, meta := renderCompact(s, op.Kind)
	d.meta = d.meta || meta
	for i := 1; ; i++ {
		cand := name
		switch {
		case i == 2 && op.Group != "":
			cand = name + pascal(op.Group)
		case i == 2:
			cand = name + "Core"
		case i >= 3:
			cand = fmt.Sprintf("%s%d", name, i)
		}
		decl := "interface " + cand + " " + body
		prev, ok := d.named[cand]
		if !ok {
			d.named[cand] = decl
			d.order = append(d.order, cand)
			return cand
		}
		if prev == decl {
			return cand
		}
	}
}

// renderCompact returns the compacted body of the result type s and whether
// it uses ObjectMeta. Schemas are immutable once built, so the answer is
// memoized: search_tools renders the same result types over and over.
func renderCompact(s *Schema, kind string) (string, bool) {
	key := compactKey{s, kind}
	if v, ok := compactCache.Load(key); ok {
		r := v.(compactResult)
		return r.body, r.meta
	}
	d := &declarer{named: map[string]string{}}
	r := compactResult{body: d.render(s, "", compact(s, kind))}
	r.meta = d.meta
	if compactCount.Add(1) > maxCompactCache { // schemas of old catalogs: start over
		compactCache.Clear()
		compactCount.Store(1)
	}
	compactCache.Store(key, r)
	return r.body, r.meta
}

type compactKey struct {
	s    *Schema
	kind string
}

type compactResult struct {
	body string
	meta bool
}

const maxCompactCache = 4096

var (
	compactCache sync.Map // compactKey → compactResult
	compactCount atomic.Int64
)

// render writes s as a TypeScript type. keep, when not nil, says which
// property paths to show; objects with properties left out end with an
// index signature.
func (d *declarer) render(s *Schema, path string, keep map[string]bool) string {
	if s == nil {
		return "unknown"
	}
	if s.IntOrString {
		return "number | string"
	}
	if len(s.Enum) > 0 && len(s.Enum) <= maxEnum {
		lits := make([]string, 0, len(s.Enum))
		for _, v := range s.Enum {
			j, err := json.Marshal(v)
			if err != nil {
				return "unknown"
			}
			lits = append(lits, string(j))
		}
		return strings.Join(lits, " | ")
	}
	switch s.Type {
	case "string":
		return "string"
	case "integer", "number":
		return "number"
	case "boolean":
		return "boolean"
	case "array":
		t := d.render(s.Items, path, keep)
		if !strings.HasPrefix(t, "{") && strings.Contains(t, " | ") {
			t = "(" + t + ")"
		}
		return t + "[]"
	}
	if !isObject(s) {
		return "unknown"
	}
	if len(s.Properties) == 0 {
		if s.AdditionalProperties != nil {
			return "Record<string, " + d.render(s.AdditionalProperties, path, keep) + ">"
		}
		return "{ " + more + " }"
	}
	var parts []string
	cut := false
	for _, k := range propOrder(s) {
		p := path + "." + k
		if keep != nil && !keep[p] {
			cut = true
			continue
		}
		opt := "?"
		if slices.Contains(s.Required, k) {
			opt = ""
		}
		var t string
		if k == "metadata" && (isObject(s.Properties[k]) || s.Properties[k].Type == "") {
			d.meta = true
			t = "ObjectMeta"
			if path == "" {
				opt = "" // every object the API returns has metadata
			}
		} else {
			t = d.render(s.Properties[k], p, keep)
		}
		parts = append(parts, propName(k)+opt+": "+t)
	}
	if cut || s.AdditionalProperties != nil {
		parts = append(parts, more)
	}
	return "{ " + strings.Join(parts, "; ") + " }"
}

// compact chooses the property paths of s to show: the always-kept paths of
// kind (with their subtrees), then, while the budget lasts, the others
// breadth first. Fields that usually matter (name, status, reason,
// replicas, ...) jump two levels ahead, required ones half a level. A
// field is a candidate once its parent is shown.
func compact(s *Schema, kind string) map[string]bool {
	children := map[string][]*field{}
	var walk func(s *Schema, path string, depth int)
	walk = func(s *Schema, path string, depth int) {
		s = container(s)
		if s == nil || !isObject(s) {
			return
		}
		for _, k := range propOrder(s) {
			p := path + "." + k
			c := s.Properties[k]
			f := &field{path: p, prio: 10 * depth, order: len(children), cost: len(k) + 4} // "k?: " and "; "
			if importantFields[k] {
				f.prio -= 20
			}
			if slices.Contains(s.Required, k) {
				f.prio -= 5
			}
			f.order = len(children[path])
			if inner := container(c); inner != nil && isObject(inner) && len(inner.Properties) > 0 {
				f.cost += 4 + len(more) // "{ ... [k: string]: unknown }"
			} else {
				f.cost += 8 // a scalar type
			}
			children[path] = append(children[path], f)
			if k != "metadata" {
				walk(c, p, depth+1)
			}
		}
	}
	walk(s, "", 0)

	budget := typeBudget
	keep := map[string]bool{"": true}
	var show func(f *field)
	show = func(f *field) {
		if !keep[f.path] {
			keep[f.path] = true
			budget -= f.cost
		}
	}
	for _, f := range children[""] {
		if slices.Contains(leadingFields, f.path[1:]) {
			show(f)
		}
	}
	var force func(path string)
	force = func(path string) { // path, its ancestors and its subtree
		for _, f := range children[path] {
			show(f)
			force(f.path)
		}
	}
	for _, p := range keepPaths[kind] {
		p = "." + p
		for parent := ""; ; {
			next := p
			if i := strings.IndexByte(p[len(parent)+1:], '.'); i >= 0 {
				next = p[:len(parent)+1+i]
			}
			for _, f := range children[parent] {
				if f.path == next {
					show(f)
				}
			}
			if next == p || !keep[next] {
				break
			}
			parent = next
		}
		if keep[p] {
			force(p)
		}
	}

	var q fieldQueue
	for path := range keep {
		for _, f := range children[path] {
			if !keep[f.path] {
				heap.Push(&q, f)
			}
		}
	}
	for q.Len() > 0 && budget > 0 {
		f := heap.Pop(&q).(*field)
		if f.cost > budget {
			continue
		}
		show(f)
		for _, c := range children[f.path] {
			heap.Push(&q, c)
		}
	}
	return keep
}

// field is a property path competing for a type's budget.
type field struct {
	path        string
	prio, order int // lower first
	cost        int // approximate characters when shown
}

type fieldQueue []*field

func (q fieldQueue) Len() int { return len(q) }
func (q fieldQueue) Less(i, j int) bool {
	if q[i].prio != q[j].prio {
		return q[i].prio < q[j].prio
	}
	if q[i].order != q[j].order {
		return q[i].order < q[j].order
	}
	return q[i].path < q[j].path
}
func (q fieldQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *fieldQueue) Push(x any)   { *q = append(*q, x.(*field)) }
func (q *fieldQueue) Pop() any {
	old := *q
	f := old[len(old)-1]
	*q = old[:len(old)-1]
	return f
}

// container returns the object schema inside arrays and maps, whose
// fields' paths are written as if the array or map were not there.
func container(s *Schema) *Schema {
	for s != nil {
		switch {
		case s.Type == "array":
			s = s.Items
		case isObject(s) && len(s.Properties) == 0 && s.AdditionalProperties != nil:
			s = s.AdditionalProperties
		default:
			return s
		}
	}
	return nil
}

func isObject(s *Schema) bool {
	return s.Type == "object" || (s.Type == "" && (len(s.Properties) > 0 || s.AdditionalProperties != nil))
}

// propOrder lists s's properties: required ones first in their order, then
// well-known leading fields, then the rest alphabetically.
func propOrder(s *Schema) []string {
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if i := slices.Index(s.Required, k); i >= 0 {
			return i - 1000
		}
		if i := slices.Index(leadingFields, k); i >= 0 {
			return i - 100
		}
		return 0
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank(keys[i]), rank(keys[j])
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// leadingFields come first in objects, in this order.
var leadingFields = []string{"apiVersion", "kind", "metadata", "name", "namespace", "allNamespaces", "type", "spec", "status"}

// importantFields are kept ahead of their depth in any schema (CRDs too).
var importantFields = map[string]bool{
	"name": true, "namespace": true, "type": true, "status": true, "phase": true, "reason": true,
	"message": true, "ready": true, "replicas": true, "readyReplicas": true, "availableReplicas": true,
	"conditions": true, "image": true, "selector": true, "state": true, "nodeName": true, "host": true,
	"schedule": true, "data": true, "count": true, "lastTransitionTime": true, "observedGeneration": true,
}

// keepPaths are the fields an agent needs of well-known kinds, shown
// whatever the budget. Paths go through arrays and maps as if they were
// not there: spec.containers.name is spec.containers[].name.
var keepPaths = map[string][]string{
	"Pod": {
		"spec.nodeName", "spec.containers.name", "spec.containers.image", "spec.containers.resources.requests",
		"spec.containers.resources.limits", "spec.restartPolicy", "spec.serviceAccountName",
		"status.phase", "status.reason", "status.message", "status.podIP", "status.startTime",
		"status.conditions.type", "status.conditions.status", "status.conditions.reason", "status.conditions.message",
		"status.containerStatuses.name", "status.containerStatuses.ready", "status.containerStatuses.restartCount",
		"status.containerStatuses.image", "status.containerStatuses.state.waiting.reason",
		"status.containerStatuses.state.waiting.message", "status.containerStatuses.state.running.startedAt",
		"status.containerStatuses.state.terminated.reason", "status.containerStatuses.state.terminated.exitCode",
		"status.containerStatuses.lastState.terminated.reason", "status.containerStatuses.lastState.terminated.exitCode",
		"status.containerStatuses.lastState.terminated.finishedAt",
	},
	"Deployment":  workloadPaths,
	"StatefulSet": workloadPaths,
	"ReplicaSet":  workloadPaths,
	"DaemonSet": {
		"spec.selector", "spec.template.spec.containers.name", "spec.template.spec.containers.image",
		"status.desiredNumberScheduled", "status.currentNumberScheduled", "status.numberReady",
		"status.numberAvailable", "status.numberUnavailable", "status.updatedNumberScheduled", "status.conditions",
	},
	"Event": {
		"type", "reason", "message", "count", "firstTimestamp", "lastTimestamp", "eventTime",
		"involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "involvedObject.uid",
		"source.component", "regarding.kind", "regarding.name", "regarding.namespace", "note",
	},
	"Service": {
		"spec.type", "spec.selector", "spec.clusterIP", "spec.ports.name", "spec.ports.port",
		"spec.ports.targetPort", "spec.ports.protocol", "spec.ports.nodePort",
		"status.loadBalancer.ingress.ip", "status.loadBalancer.ingress.hostname",
	},
	"Node": {
		"spec.unschedulable", "spec.taints", "status.conditions.type", "status.conditions.status",
		"status.conditions.reason", "status.conditions.message", "status.capacity", "status.allocatable",
		"status.nodeInfo.kubeletVersion", "status.addresses",
	},
	"Job": {
		"spec.completions", "spec.parallelism", "spec.backoffLimit", "status.active", "status.succeeded",
		"status.failed", "status.startTime", "status.completionTime", "status.conditions",
	},
	"CronJob": {"spec.schedule", "spec.suspend", "status.lastScheduleTime", "status.lastSuccessfulTime", "status.active"},
	"Ingress": {
		"spec.ingressClassName", "spec.rules.host", "spec.rules.http.paths.path",
		"spec.rules.http.paths.backend.service.name", "spec.rules.http.paths.backend.service.port",
		"spec.tls.hosts", "status.loadBalancer",
	},
	"PersistentVolumeClaim": {
		"spec.storageClassName", "spec.accessModes", "spec.resources.requests", "spec.volumeName",
		"status.phase", "status.capacity", "status.conditions",
	},
	"EndpointSlice": {"addressType", "endpoints.addresses", "endpoints.conditions.ready", "endpoints.targetRef", "ports"},
	"Endpoints":     {"subsets.addresses.ip", "subsets.addresses.targetRef", "subsets.notReadyAddresses.ip", "subsets.ports"},
	"HorizontalPodAutoscaler": {
		"spec.scaleTargetRef", "spec.minReplicas", "spec.maxReplicas", "status.currentReplicas",
		"status.desiredReplicas", "status.conditions",
	},
	"ConfigMap": {"data"},
	"Secret":    {"type", "data"},
}

var workloadPaths = []string{
	"spec.replicas", "spec.selector", "spec.template.spec.containers.name", "spec.template.spec.containers.image",
	"status.replicas", "status.readyReplicas", "status.availableReplicas", "status.updatedReplicas",
	"status.unavailableReplicas", "status.conditions.type", "status.conditions.status",
	"status.conditions.reason", "status.conditions.message",
}

// propName writes a property name, quoting it unless it is an identifier.
func propName(k string) string {
	if isIdentifier(k) {
		return k
	}
	j, _ := json.Marshal(k)
	return string(j)
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r)) {
			continue
		}
		return false
	}
	return true
}

// identifier turns a result type name into a TypeScript identifier.
func identifier(s string) string {
	if isIdentifier(s) {
		return s
	}
	if p := pascal(s); p != "" {
		return p
	}
	return "Result"
}

// pascal writes s's words in PascalCase: "kubernetes.api_resources" →
// KubernetesApiResources.
func pascal(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	if b.Len() > 0 && unicode.IsDigit(rune(b.String()[0])) {
		return "T" + b.String()
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "*/", "* /")
}
