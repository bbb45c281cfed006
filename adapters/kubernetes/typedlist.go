package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Lists of built-in resources are read as the API server stores them:
// protobuf, decoded into the typed objects client-go knows, and written
// once as the JSON array scripts get, without managedFields. A list of
// 5,000 pods is 25 MB of JSON; decoding that into maps and encoding it
// again cost seconds, where protobuf decodes in a fraction of that. The
// next page is fetched while the last one is written.
//
// Typed objects hold only the fields this build's API types know: a
// cluster newer than them (its minor version above this build's
// k8s.io/api) is listed as JSON, field for field, as are custom
// resources.

// typedLists lists built-in resources in protobuf for one adapter.
type typedLists struct {
	cfg  *rest.Config
	http *http.Client

	mu      sync.Mutex
	clients map[schema.GroupVersion]rest.Interface
	fits    *bool // the cluster is no newer than the API types; nil until known
}

func newTypedLists(cfg *rest.Config) (*typedLists, error) {
	cfg = rest.CopyConfig(cfg)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: protobuf client: %w", err)
	}
	return &typedLists{cfg: cfg, http: hc, clients: map[schema.GroupVersion]rest.Interface{}}, nil
}

// apiTypesMinor is the minor version of the k8s.io/api module this
// package is built with (v0.37.2: 37); TestAPITypesMinor keeps it in
// step with go.mod.
const apiTypesMinor = 37

// usable says lists of r can be typed: r is a type client-go knows and the
// cluster is no newer than this build's API types.
func (t *typedLists) usable(a *Adapter, r *resource) bool {
	gvk := r.gvr.GroupVersion().WithKind(r.kind + "List")
	if !scheme.Scheme.Recognizes(gvk) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fits == nil {
		v, err := a.disc.ServerVersion()
		if err != nil {
			return false // asked again next time
		}
		minor, err := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
		fits := err == nil && minor <= apiTypesMinor
		t.fits = &fits
	}
	return *t.fits
}

func (t *typedLists) client(gv schema.GroupVersion) (rest.Interface, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.clients[gv]; c != nil {
		return c, nil
	}
	cfg := rest.CopyConfig(t.cfg)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c, err := rest.RESTClientForConfigAndClient(cfg, t.http)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: protobuf client: %w", err)
	}
	t.clients[gv] = c
	return c, nil
}

// page is one fetched page of a list, or the error that ended it.
type page struct {
	list runtime.Object
	err  error
}

// list writes every item of r in ns (every namespace when "") matching
// opts as a JSON array, up to limit items when limit > 0, fetching the
// next page while it writes the last.
//
// With one non-nil, only the page opts asks for (its Continue) is
// fetched, of pageSize items, and one says where the next starts.
//
// With part non-nil, each page's items go to part as a JSON array as soon
// as they are encoded, and list returns nil: the list is never whole in
// memory (at 50,000 pods it is 105 MB of JSON).
func (t *typedLists) list(ctx context.Context, r *resource, ns string, opts metav1.ListOptions, pageSize, limit int64, keepManaged bool, one *pageInfo, part func(json.RawMessage) error) (json.RawMessage, error) {
	c, err := t.client(r.gvr.GroupVersion())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan page, 1)
	go func() {
		defer close(pages)
		fetched := int64(0)
		for {
			opts.Limit = pageSize
			if limit > 0 {
				opts.Limit = min(pageSize, limit-fetched)
			}
			req := c.Get().Resource(r.gvr.Resource).VersionedParams(&opts, scheme.ParameterCodec)
			if r.namespaced && ns != "" {
				req = req.Namespace(ns)
			}
			obj, err := req.Do(ctx).Get()
			if err == nil && !meta.IsListType(obj) {
				err = fmt.Errorf("kubernetes: %s: the server answered %T, not a list", r.gvr.Resource, obj)
			}
			select {
			case pages <- page{obj, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
			lm, _ := meta.ListAccessor(obj)
			fetched += int64(meta.LenList(obj))
			if one != nil && lm != nil {
				one.Continue, one.Remaining = lm.GetContinue(), lm.GetRemainingItemCount()
			}
			if one != nil || lm == nil || lm.GetContinue() == "" || (limit > 0 && fetched >= limit) {
				return
			}
			opts.Continue = lm.GetContinue()
		}
	}()
	gvk := r.gvr.GroupVersion().WithKind(r.kind)
	var buf bytes.Buffer
	buf.WriteByte('[')
	// Items are encoded straight into buf: no copy of each to throw away
	// (at 20,000 pods, 42 MB of garbage the server's heap grew by).
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true)
	n, inPart := 0, 0
	for p := range pages {
		if p.err != nil {
			return nil, wrapError(p.err)
		}
		before := buf.Len()
		err := meta.EachListItem(p.list, func(item runtime.Object) error {
			if limit > 0 && int64(n) >= limit {
				return nil
			}
			item.GetObjectKind().SetGroupVersionKind(gvk)
			if m, err := meta.Accessor(item); err == nil {
				if !keepManaged {
					m.SetManagedFields(nil)
				}
				if ann := m.GetAnnotations(); ann != nil {
					if _, ok := ann[kubeapi.LastApplied]; ok && (!keepManaged || kubeapi.IsSecret(r.kind)) {
						delete(ann, kubeapi.LastApplied)
						if len(ann) == 0 {
							ann = nil
						}
						m.SetAnnotations(ann)
					}
				}
			}
			if inPart > 0 {
				buf.WriteByte(',')
			}
			if err := enc.Encode(item); err != nil {
				return err
			}
			buf.Truncate(buf.Len() - 1) // Encode's line break
			n++
			inPart++
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("kubernetes: encoding %s: %w", r.gvr.Resource, err)
		}
		if part != nil {
			buf.WriteByte(']')
			if err := part(buf.Bytes()); err != nil {
				return nil, err
			}
			buf.Reset()
			buf.WriteByte('[')
			inPart = 0
			continue
		}
		// After the first page, room for the rest at its size per item
		// (the server says how many remain): no growing copies of 25 MB.
		if lm, _ := meta.ListAccessor(p.list); lm != nil && lm.GetRemainingItemCount() != nil && n > 0 && before == 1 {
			rest := *lm.GetRemainingItemCount()
			if limit > 0 {
				rest = min(rest, limit-int64(n))
			}
			buf.Grow(int(min(rest, 1<<20) * int64(buf.Len()/n)))
		}
	}
	if part != nil {
		return nil, nil
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}
