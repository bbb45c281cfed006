package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

type listArgs struct {
	Namespace      string `json:"namespace"`
	AllNamespaces  bool   `json:"allNamespaces"`
	LabelSelector  string `json:"labelSelector"`
	FieldSelector  string `json:"fieldSelector"`
	Limit          int64  `json:"limit"`
	InvolvedObject *struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"involvedObject"`
}

func (a *Adapter) client(r *resource, ns string) dynamic.ResourceInterface {
	c := a.dyn.Resource(r.gvr)
	if r.namespaced {
		return c.Namespace(ns)
	}
	return c
}

// list fetches every page (or up to limit items) and returns a plain
// array; with part non-nil, it sends each page's items to part as an
// array and returns nil.
func (a *Adapter) list(ctx context.Context, r *resource, raw json.RawMessage, part func(json.RawMessage) error) (json.RawMessage, error) {
	var args listArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	ns, opts := a.listOptions(args)
	if a.typed.usable(a, r) {
		return a.typed.list(ctx, r, ns, opts, a.pageSize, args.Limit, a.keepManaged, nil, part)
	}
	items := []map[string]any{}
	fetched := int64(0)
	for {
		opts.Limit = a.pageSize
		if args.Limit > 0 {
			opts.Limit = min(a.pageSize, args.Limit-fetched)
		}
		l, err := a.client(r, ns).List(ctx, opts)
		if err != nil {
			return nil, wrapError(err)
		}
		fetched += int64(len(l.Items))
		items = appendItems(items, r, l)
		if part != nil {
			b, err := json.Marshal(items)
			if err != nil {
				return nil, err
			}
			if err := part(b); err != nil {
				return nil, err
			}
			items = items[:0]
		}
		if l.GetContinue() == "" || (args.Limit > 0 && fetched >= args.Limit) {
			break
		}
		opts.Continue = l.GetContinue()
	}
	if part != nil {
		return nil, nil
	}
	return json.Marshal(items)
}

// pageInfo is where a page of a list ends: the token of the next page
// ("" after the last) and how many items remain after it, when the API
// server says.
type pageInfo struct {
	Continue  string `json:"continue,omitempty"`
	Remaining *int64 `json:"remainingItemCount,omitempty"`
}

// defaultPage and maxPage bound a page's items.
const (
	defaultPage = 500
	maxPage     = 5000
)

type pageArgs struct {
	listArgs
	Continue string `json:"continue"`
}

// page fetches one page of a list: limit items (500 by default, at most
// 5,000) from where continue says, and the token of the next.
func (a *Adapter) page(ctx context.Context, r *resource, raw json.RawMessage) (json.RawMessage, error) {
	var args pageArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	size := args.Limit
	switch {
	case size <= 0:
		size = defaultPage
	case size > maxPage:
		return nil, &catalog.CallError{Status: 400, Reason: "BadRequest", Message: fmt.Sprintf("limit %d: a page holds at most %d items (list returns every page at once)", size, maxPage)}
	}
	ns, opts := a.listOptions(args.listArgs)
	opts.Continue = args.Continue
	var info pageInfo
	var items json.RawMessage
	if a.typed.usable(a, r) {
		var err error
		if items, err = a.typed.list(ctx, r, ns, opts, size, size, a.keepManaged, &info, nil); err != nil {
			return nil, err
		}
	} else {
		opts.Limit = size
		l, err := a.client(r, ns).List(ctx, opts)
		if err != nil {
			return nil, wrapError(err)
		}
		info.Continue, info.Remaining = l.GetContinue(), l.GetRemainingItemCount()
		if items, err = json.Marshal(appendItems([]map[string]any{}, r, l)); err != nil {
			return nil, err
		}
	}
	tail, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(items)+len(tail)+16)
	out = append(out, `{"items":`...)
	out = append(out, items...)
	if len(tail) > 2 {
		out = append(out, ',')
		out = append(out, tail[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// appendItems appends the objects of l, each with its apiVersion and kind.
func appendItems(items []map[string]any, r *resource, l *unstructured.UnstructuredList) []map[string]any {
	apiVersion := l.GetAPIVersion()
	for i := range l.Items {
		obj := l.Items[i].Object
		if _, ok := obj["apiVersion"]; !ok {
			obj["apiVersion"] = apiVersion
		}
		if _, ok := obj["kind"]; !ok {
			obj["kind"] = r.kind
		}
		items = append(items, obj)
	}
	return items
}

// listOptions are the namespace ("" for all) and options of a list.
func (a *Adapter) listOptions(args listArgs) (string, metav1.ListOptions) {
	ns := args.Namespace
	if ns == "" && !args.AllNamespaces {
		ns = a.ns
	}
	if args.AllNamespaces {
		ns = ""
	}
	fields := args.FieldSelector
	if io := args.InvolvedObject; io != nil {
		var sel []string
		for k, v := range map[string]string{"involvedObject.kind": io.Kind, "involvedObject.name": io.Name, "involvedObject.namespace": io.Namespace, "involvedObject.uid": io.UID} {
			if v != "" {
				sel = append(sel, k+"="+v)
			}
		}
		sort.Strings(sel)
		if fields != "" {
			sel = append(sel, fields)
		}
		fields = strings.Join(sel, ",")
	}
	return ns, metav1.ListOptions{LabelSelector: args.LabelSelector, FieldSelector: fields}
}

type getArgs struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// target decodes the arguments naming one object, the context's namespace
// filled in.
func (a *Adapter) target(raw json.RawMessage) (getArgs, error) {
	var args getArgs
	if err := decodeArgs(raw, &args); err != nil {
		return args, err
	}
	if args.Namespace == "" {
		args.Namespace = a.ns
	}
	return args, nil
}

func (a *Adapter) get(ctx context.Context, r *resource, raw json.RawMessage) (json.RawMessage, error) {
	args, err := a.target(raw)
	if err != nil {
		return nil, err
	}
	obj, err := a.client(r, args.Namespace).Get(ctx, args.Name, metav1.GetOptions{})
	if err != nil {
		return nil, wrapError(err)
	}
	return obj.MarshalJSON()
}

type logsArgs struct {
	Name         string `json:"name"`
	Namespace    string `json:"namespace"`
	Container    string `json:"container"`
	TailLines    *int64 `json:"tailLines"`
	SinceSeconds *int64 `json:"sinceSeconds"`
	Previous     bool   `json:"previous"`
	Timestamps   bool   `json:"timestamps"`
}

// logs returns the log text as a JSON string.
func (a *Adapter) logs(ctx context.Context, _ *resource, raw json.RawMessage) (json.RawMessage, error) {
	var args logsArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	ns := args.Namespace
	if ns == "" {
		ns = a.ns
	}
	if !a.watch.Synced() {
		// What the pod prints may hold its Secrets' values: the boundary
		// must know them before the text leaves the bridge.
		pod, err := a.core.CoreV1().Pods(ns).Get(ctx, args.Name, metav1.GetOptions{})
		if err != nil {
			return nil, wrapError(err)
		}
		if err := a.ensurePodSecrets(ctx, pod); err != nil {
			return nil, err
		}
	}
	// Stream, unlike DoRaw, keeps the kubelet's error message (e.g.
	// "previous terminated container ... not found").
	rc, err := a.core.CoreV1().Pods(ns).GetLogs(args.Name, &corev1.PodLogOptions{
		Container: args.Container, TailLines: args.TailLines, SinceSeconds: args.SinceSeconds,
		Previous: args.Previous, Timestamps: args.Timestamps,
	}).Stream(ctx)
	if err != nil {
		return nil, wrapError(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxLogBytes+1))
	if err != nil {
		return nil, wrapError(err)
	}
	if len(b) > maxLogBytes {
		b = append(b[:maxLogBytes], "\n[log truncated at 16 MiB: pass tailLines or sinceSeconds]\n"...)
	}
	return json.Marshal(string(b))
}

// maxLogBytes bounds one logs call; the text stays in the sandbox anyway.
const maxLogBytes = 16 << 20

type apiResourcesArgs struct {
	Group      *string `json:"group"`
	Namespaced *bool   `json:"namespaced"`
}

// apiResources lists the discovered resources with their operation names.
func (a *Adapter) apiResources(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args apiResourcesArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	// The discovered table is everyone's: discover as the server.
	if _, _, err := a.Discover(catalog.WithCaller(ctx, nil)); err != nil {
		return nil, err
	}
	type entry struct {
		Resource   string   `json:"resource"`
		Group      string   `json:"group"`
		Version    string   `json:"version"`
		Kind       string   `json:"kind"`
		Namespaced bool     `json:"namespaced"`
		ShortNames []string `json:"shortNames,omitempty"`
		Verbs      []string `json:"verbs"`
		Operations []string `json:"operations"`
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := []entry{}
	for _, r := range a.resources {
		if args.Group != nil && *args.Group != r.gvr.Group {
			continue
		}
		if args.Namespaced != nil && *args.Namespaced != r.namespaced {
			continue
		}
		e := entry{Resource: r.gvr.Resource, Group: r.gvr.Group, Version: r.gvr.Version, Kind: r.kind,
			Namespaced: r.namespaced, ShortNames: r.shortNames, Verbs: r.verbs, Operations: []string{}}
		for _, v := range opVerbs {
			if r.hasOp(v) {
				e.Operations = append(e.Operations, "kubernetes."+r.seg+"."+v)
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Resource < out[j].Resource
	})
	return json.Marshal(out)
}
