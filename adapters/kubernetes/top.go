package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/kubecode/kubecode/catalog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// pods.top and nodes.top: what kubectl top shows, from metrics.k8s.io
// (metrics-server), with each usage set against the requests and limits
// (pods) or the allocatable resources (nodes) in the same answer. They
// exist where the cluster serves metrics.k8s.io.

var (
	podMetrics  = schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}
	nodeMetrics = schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "nodes"}
)

// usage is one resource's use against what was asked for: CPU in
// millicores, memory in bytes; the percentages are rounded.
type usage struct {
	Usage       int64  `json:"usage"`
	Request     *int64 `json:"request,omitempty"`
	Limit       *int64 `json:"limit,omitempty"`
	Allocatable *int64 `json:"allocatable,omitempty"`
	OfRequest   *int64 `json:"ofRequest,omitempty"`
	OfLimit     *int64 `json:"ofLimit,omitempty"`
	Percent     *int64 `json:"percent,omitempty"` // of allocatable (nodes)
}

func percent(part, whole int64) *int64 {
	if whole <= 0 {
		return nil
	}
	p := (part*100 + whole/2) / whole
	return &p
}

func (u *usage) against(request, limit *int64) {
	u.Request, u.Limit = request, limit
	if request != nil {
		u.OfRequest = percent(u.Usage, *request)
	}
	if limit != nil {
		u.OfLimit = percent(u.Usage, *limit)
	}
}

type containerTop struct {
	Name   string `json:"name"`
	CPU    usage  `json:"cpu"`
	Memory usage  `json:"memory"`
}

type podTop struct {
	Namespace  string         `json:"namespace"`
	Name       string         `json:"name"`
	Node       string         `json:"node,omitempty"`
	CPU        usage          `json:"cpu"`
	Memory     usage          `json:"memory"`
	Containers []containerTop `json:"containers"`
}

type nodeTop struct {
	Name   string `json:"name"`
	CPU    usage  `json:"cpu"`
	Memory usage  `json:"memory"`
}

func usageSchema(unit string, node bool) *catalog.Schema {
	s := &catalog.Schema{Type: "object", Required: []string{"usage"}, Properties: map[string]*catalog.Schema{
		"usage": prop("integer", unit),
	}}
	if node {
		s.Properties["allocatable"] = prop("integer", unit)
		s.Properties["percent"] = prop("integer", "usage as a percentage of allocatable")
		return s
	}
	s.Properties["request"] = prop("integer", unit+", when requested")
	s.Properties["limit"] = prop("integer", unit+", when limited")
	s.Properties["ofRequest"] = prop("integer", "usage as a percentage of the request")
	s.Properties["ofLimit"] = prop("integer", "usage as a percentage of the limit")
	return s
}

func describeTop(op *catalog.Operation, r *resource) {
	cpu, mem := "millicores", "bytes"
	if r.kind == "Node" {
		op.Description = "CPU and memory in use on nodes now, as kubectl top node shows, each against the node's allocatable resources (metrics.k8s.io, served by metrics-server)."
		op.Input = &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
			"name":          prop("string", "one node; all when absent"),
			"labelSelector": prop("string", "e.g. node-role.kubernetes.io/worker="),
			"sortBy":        {Type: "string", Enum: []any{"cpu", "memory"}, Description: "highest first; by name when absent"},
		}}
		op.Output = &catalog.Schema{Type: "array", Items: &catalog.Schema{Type: "object", Name: "NodeTop", Required: []string{"name", "cpu", "memory"}, Properties: map[string]*catalog.Schema{
			"name": prop("string", ""), "cpu": usageSchema(cpu, true), "memory": usageSchema(mem, true),
		}}}
	} else {
		op.Description = "CPU and memory pods use now, as kubectl top pod shows, each against the containers' requests and limits (metrics.k8s.io, served by metrics-server; a pod is measured about 20 s after it starts, and left out until then)."
		op.Input = &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
			"namespace":     prop("string", "defaults to the context's namespace"),
			"allNamespaces": prop("boolean", "every namespace"),
			"name":          prop("string", "one pod"),
			"labelSelector": prop("string", "e.g. app=web"),
			"sortBy":        {Type: "string", Enum: []any{"cpu", "memory"}, Description: "highest first; by namespace and name when absent"},
		}}
		container := &catalog.Schema{Type: "object", Name: "ContainerTop", Required: []string{"name", "cpu", "memory"}, Properties: map[string]*catalog.Schema{
			"name": prop("string", ""), "cpu": usageSchema(cpu, false), "memory": usageSchema(mem, false),
		}}
		op.Output = &catalog.Schema{Type: "array", Items: &catalog.Schema{Type: "object", Name: "PodTop", Required: []string{"namespace", "name", "cpu", "memory", "containers"}, Properties: map[string]*catalog.Schema{
			"namespace": prop("string", ""), "name": prop("string", ""), "node": prop("string", ""),
			"cpu": usageSchema(cpu, false), "memory": usageSchema(mem, false),
			"containers": {Type: "array", Items: container},
		}}}
	}
	op.OutputName = ""
	op.Keywords = append(op.Keywords, "top", "kubectl top", "cpu usage", "memory usage", "resource usage", "metrics", "heaviest", "consumption")
}

type topArgs struct {
	Namespace     string `json:"namespace"`
	AllNamespaces bool   `json:"allNamespaces"`
	Name          string `json:"name"`
	LabelSelector string `json:"labelSelector"`
	SortBy        string `json:"sortBy"`
}

// metricsError names metrics-server where the metrics API fails.
func metricsError(err error) error {
	if apierrors.IsServiceUnavailable(err) || apierrors.IsNotFound(err) {
		return &catalog.CallError{Status: http.StatusServiceUnavailable, Reason: "ServiceUnavailable",
			Message: "metrics.k8s.io does not answer (" + err.Error() + "): metrics-server is not running or not ready; pods.list shows requests and limits meanwhile"}
	}
	return wrapError(err)
}

// quantity reads a metrics usage value: CPU in millicores, else bytes.
func quantity(obj map[string]any, key string) int64 {
	s, _ := obj[key].(string)
	q, err := apiresource.ParseQuantity(s)
	if err != nil {
		return 0
	}
	if key == "cpu" {
		return q.MilliValue()
	}
	return q.Value()
}

func sumOf(cs []corev1.Container, name corev1.ResourceName, limits bool) *int64 {
	var total int64
	for _, c := range cs {
		list := c.Resources.Requests
		if limits {
			list = c.Resources.Limits
		}
		q, ok := list[name]
		if !ok {
			return nil // a container without one: the pod has no bound
		}
		if name == corev1.ResourceCPU {
			total += q.MilliValue()
		} else {
			total += q.Value()
		}
	}
	return &total
}

func (a *Adapter) topPods(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args topArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	ns := cmp.Or(args.Namespace, a.ns)
	if args.AllNamespaces {
		ns = ""
	}
	opts := metav1.ListOptions{LabelSelector: args.LabelSelector}
	if args.Name != "" {
		opts.FieldSelector = "metadata.name=" + args.Name
	}
	ms, err := a.dyn.Resource(podMetrics).Namespace(ns).List(ctx, opts)
	if err != nil {
		return nil, metricsError(err)
	}
	pods, err := a.core.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return nil, wrapError(err)
	}
	specs := map[string]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		specs[p.Namespace+"/"+p.Name] = p
	}
	out := []podTop{}
	for _, m := range ms.Items {
		pod := specs[m.GetNamespace()+"/"+m.GetName()]
		if pod == nil {
			continue // gone since it was measured
		}
		t := podTop{Namespace: m.GetNamespace(), Name: m.GetName(), Node: pod.Spec.NodeName, Containers: []containerTop{}}
		containers, _, _ := unstructured.NestedSlice(m.Object, "containers")
		for _, c := range containers {
			cm, _ := c.(map[string]any)
			u, _ := cm["usage"].(map[string]any)
			name, _ := cm["name"].(string)
			ct := containerTop{Name: name, CPU: usage{Usage: quantity(u, "cpu")}, Memory: usage{Usage: quantity(u, "memory")}}
			if i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
				spec := pod.Spec.Containers[i : i+1]
				ct.CPU.against(sumOf(spec, corev1.ResourceCPU, false), sumOf(spec, corev1.ResourceCPU, true))
				ct.Memory.against(sumOf(spec, corev1.ResourceMemory, false), sumOf(spec, corev1.ResourceMemory, true))
			}
			t.CPU.Usage += ct.CPU.Usage
			t.Memory.Usage += ct.Memory.Usage
			t.Containers = append(t.Containers, ct)
		}
		t.CPU.against(sumOf(pod.Spec.Containers, corev1.ResourceCPU, false), sumOf(pod.Spec.Containers, corev1.ResourceCPU, true))
		t.Memory.against(sumOf(pod.Spec.Containers, corev1.ResourceMemory, false), sumOf(pod.Spec.Containers, corev1.ResourceMemory, true))
		out = append(out, t)
	}
	slices.SortFunc(out, func(x, y podTop) int {
		return cmp.Or(byUsage(args.SortBy, x.CPU, y.CPU, x.Memory, y.Memory), cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	return json.Marshal(out)
}

func (a *Adapter) topNodes(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args topArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{LabelSelector: args.LabelSelector}
	if args.Name != "" {
		opts.FieldSelector = "metadata.name=" + args.Name
	}
	ms, err := a.dyn.Resource(nodeMetrics).List(ctx, opts)
	if err != nil {
		return nil, metricsError(err)
	}
	nodes, err := a.core.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return nil, wrapError(err)
	}
	alloc := map[string]corev1.ResourceList{}
	for _, n := range nodes.Items {
		alloc[n.Name] = n.Status.Allocatable
	}
	out := []nodeTop{}
	for _, m := range ms.Items {
		u, _, _ := unstructured.NestedMap(m.Object, "usage")
		t := nodeTop{Name: m.GetName(), CPU: usage{Usage: quantity(u, "cpu")}, Memory: usage{Usage: quantity(u, "memory")}}
		if al, ok := alloc[m.GetName()]; ok {
			if q, ok := al[corev1.ResourceCPU]; ok {
				v := q.MilliValue()
				t.CPU.Allocatable, t.CPU.Percent = &v, percent(t.CPU.Usage, v)
			}
			if q, ok := al[corev1.ResourceMemory]; ok {
				v := q.Value()
				t.Memory.Allocatable, t.Memory.Percent = &v, percent(t.Memory.Usage, v)
			}
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(x, y nodeTop) int {
		return cmp.Or(byUsage(args.SortBy, x.CPU, y.CPU, x.Memory, y.Memory), cmp.Compare(x.Name, y.Name))
	})
	return json.Marshal(out)
}

// byUsage orders highest first by the usage sortBy names (0 for none).
func byUsage(sortBy string, xCPU, yCPU, xMem, yMem usage) int {
	switch sortBy {
	case "cpu":
		return cmp.Compare(yCPU.Usage, xCPU.Usage)
	case "memory":
		return cmp.Compare(yMem.Usage, xMem.Usage)
	}
	return 0
}
