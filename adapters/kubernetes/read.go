package kubernetes

import (
	"context"
	"encoding/json"
	"io"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// list fetches every page (or up to limit items) and returns a plain array.
func (a *Adapter) list(ctx context.Context, r *resource, raw json.RawMessage) (json.RawMessage, error) {
	var args listArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
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
	opts := metav1.ListOptions{LabelSelector: args.LabelSelector, FieldSelector: fields}
	if a.typed.usable(a, r) {
		return a.typed.list(ctx, r, ns, opts, a.pageSize, args.Limit, a.keepManaged)
	}
	items := []map[string]any{}
	for {
		opts.Limit = a.pageSize
		if args.Limit > 0 {
			opts.Limit = min(a.pageSize, args.Limit-int64(len(items)))
		}
		l, err := a.client(r, ns).List(ctx, opts)
		if err != nil {
			return nil, wrapError(err)
		}
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
		if l.GetContinue() == "" || (args.Limit > 0 && int64(len(items)) >= args.Limit) {
			break
		}
		opts.Continue = l.GetContinue()
	}
	return json.Marshal(items)
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
