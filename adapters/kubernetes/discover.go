package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/adapters/kubeapi"
	"github.com/kubecode/kubecode/catalog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// resource is one served resource at its preferred version.
type resource struct {
	seg        string // operation name segment: "pods", "events_events_k8s_io"
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	shortNames []string
	namespaced bool
	verbs      []string // API verbs
	logs       bool     // serves pods/log
	exec       bool     // serves pods/exec
	evict      bool     // serves pods/eviction
	proxy      bool     // serves nodes/proxy
	top        bool     // metrics.k8s.io serves the usage of these (pods, nodes)
	scale      bool     // serves the scale subresource
}

// coreSubresources are the subresources of core v1 that operations use:
// pods/log, pods/exec, pods/eviction, nodes/proxy.
type coreSubresources map[string]bool

// allCore serves every subresource operations use.
var allCore = coreSubresources{"pods/log": true, "pods/exec": true, "pods/eviction": true, "nodes/proxy": true}

func (r *resource) can(verb string) bool {
	for _, v := range r.verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// opVerbs are the operation verbs of resources, in the order operations
// are listed.
var opVerbs = []string{"list", "page", "get", "top", "logs", "exec", "stats", "create", "run", "apply", "patch", "delete", "evict", "drain", "cordon", "uncordon", "scale",
	"rollout.status", "rollout.history", "rollout.restart", "rollout.undo"}

func (r *resource) hasOp(verb string) bool {
	switch verb {
	case "list", "get", "create", "delete":
		return r.can(verb)
	case "page":
		return r.can("list")
	case "logs":
		return r.logs || r.proxy
	case "exec":
		return r.exec
	case "stats":
		return r.proxy
	case "top":
		return r.top
	case "evict":
		return r.evict
	case "drain":
		return r.kind == "Node" && r.gvr.Group == "" && r.can("patch") && r.can("list")
	case "cordon", "uncordon":
		return r.kind == "Node" && r.gvr.Group == "" && r.can("patch")
	case "run":
		return r.kind == "Pod" && r.gvr.Group == "" && r.can("create")
	case "apply", "patch":
		return r.can("patch")
	case "scale":
		return r.scale && r.can("patch")
	case "rollout.status":
		return rolloutKind(r) && r.can("get")
	case "rollout.restart":
		return rolloutKind(r) && r.can("patch")
	case "rollout.history":
		return isDeployments(r) && r.can("get")
	case "rollout.undo":
		return isDeployments(r) && r.can("patch")
	}
	return false
}

// ResultRules are the Kubernetes rules every result honours (Secret
// values hidden, managedFields and kubectl's last-applied copy dropped):
// the bridge applies them to every provider's results.
func (a *Adapter) ResultRules() catalog.ResultRules { return kubeapi.ResultRules() }

// Discover reads the cluster's served resources (CRDs included) and returns
// their operations and a version fingerprint that changes when the set of
// resources does. Unchanged discovery returns the previous operations
// without fetching OpenAPI again.
func (a *Adapter) Discover(ctx context.Context) ([]*catalog.Operation, string, error) {
	lists, err := discovery.ServerPreferredResourcesWithContext(ctx, a.disc)
	if err != nil && len(lists) == 0 {
		return nil, "", fmt.Errorf("kubernetes: discovery: %w", wrapError(err))
	}
	// Subresources are only served through the full (non-preferred) list of
	// the group-version; those operations use are in core v1.
	sub := coreSubresources{}
	if core, err := a.disc.ServerResourcesForGroupVersion("v1"); err == nil {
		for _, r := range core.APIResources {
			if allCore[r.Name] {
				sub[r.Name] = true
			}
		}
	}
	res := collect(lists, sub)
	version := fingerprint(res)

	a.mu.RLock()
	same := version == a.version
	ops := a.ops
	a.mu.RUnlock()
	if same {
		return ops, version, nil
	}

	docs, complete := a.openapiDocs(ctx)
	ops, aliases := buildOperations(res, docs)
	if !complete {
		// Some schemas did not load (a timeout, an API server at work):
		// the next discovery tries them again, and the version changes
		// once they are all there.
		version += "~partial"
	}
	bySeg := make(map[string]*resource, len(res))
	for _, r := range res {
		bySeg[r.seg] = r
	}
	a.mu.Lock()
	a.resources, a.aliases, a.ops, a.version = bySeg, aliases, ops, version
	a.mu.Unlock()
	return ops, version, nil
}

// collect turns discovery lists into resources with stable operation
// segments: the plural, group-qualified only when several groups serve it
// and this one is not the core group.
func collect(lists []*metav1.APIResourceList, sub coreSubresources) []*resource {
	var out []*resource
	measured := map[string]bool{} // core resources metrics.k8s.io measures
	for _, l := range lists {
		if gv, err := schema.ParseGroupVersion(l.GroupVersion); err == nil && gv.Group == "metrics.k8s.io" {
			for _, ar := range l.APIResources {
				measured[ar.Name] = true
			}
		}
	}
	groupsOf := map[string][]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		scalable := map[string]bool{}
		for _, ar := range l.APIResources {
			if res, ok := strings.CutSuffix(ar.Name, "/scale"); ok {
				scalable[res] = true
			}
		}
		for _, ar := range l.APIResources {
			if strings.Contains(ar.Name, "/") {
				continue
			}
			r := &resource{
				gvr:        gv.WithResource(ar.Name),
				kind:       ar.Kind,
				singular:   ar.SingularName,
				shortNames: ar.ShortNames,
				namespaced: ar.Namespaced,
				verbs:      ar.Verbs,
				logs:       sub["pods/log"] && gv.Group == "" && ar.Name == "pods",
				exec:       sub["pods/exec"] && gv.Group == "" && ar.Name == "pods",
				evict:      sub["pods/eviction"] && gv.Group == "" && ar.Name == "pods",
				proxy:      sub["nodes/proxy"] && gv.Group == "" && ar.Name == "nodes",
				top:        gv.Group == "" && (ar.Name == "pods" || ar.Name == "nodes") && measured[ar.Name],
				scale:      scalable[ar.Name] || knownScalable[gv.WithResource(ar.Name).GroupResource().String()],
			}
			if r.singular == "" {
				r.singular = strings.ToLower(ar.Kind)
			}
			out = append(out, r)
			groupsOf[ar.Name] = append(groupsOf[ar.Name], gv.Group)
		}
	}
	qualify := func(r *resource) string {
		return r.gvr.Resource + "_" + strings.NewReplacer(".", "_", "-", "_").Replace(r.gvr.Group)
	}
	for _, r := range out {
		r.seg = r.gvr.Resource
		if len(groupsOf[r.gvr.Resource]) > 1 && r.gvr.Group != "" {
			r.seg = qualify(r)
		}
	}
	// Scripts resolve names ignoring case, '_' and '-', so segments must
	// differ after that folding too ("foo-bars" vs "foobars", a CRD plural
	// "apiresources" vs api_resources): qualify, then number, what clashes.
	sort.Slice(out, func(i, j int) bool {
		if (out[i].gvr.Group == "") != (out[j].gvr.Group == "") {
			return out[i].gvr.Group == "" // core keeps the plain name
		}
		return out[i].gvr.String() < out[j].gvr.String()
	})
	used := map[string]bool{foldName("api_resources"): true}
	for _, r := range out {
		if used[foldName(r.seg)] && r.gvr.Group != "" {
			r.seg = qualify(r)
		}
		base := r.seg
		for i := 2; used[foldName(r.seg)]; i++ {
			r.seg = fmt.Sprintf("%s_%d", base, i)
		}
		used[foldName(r.seg)] = true
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seg < out[j].seg })
	return out
}

// knownScalable are the built-in resources with a scale subresource, for
// discovery answers that leave subresources out.
var knownScalable = map[string]bool{
	"deployments.apps": true, "replicasets.apps": true, "statefulsets.apps": true, "replicationcontrollers": true,
}

// foldName is how the sandbox compares names: case, '_' and '-' ignored.
func foldName(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
}

func fingerprint(res []*resource) string {
	h := sha256.New()
	for _, r := range res {
		fmt.Fprintf(h, "%s|%s|%s|%v|%v|%v|%v|%v|%v|%v|%v|%v\n", r.seg, r.gvr, r.kind, r.namespaced, r.verbs, r.shortNames, r.logs, r.exec, r.evict, r.proxy, r.scale, r.top)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// openapiDocs fetches OpenAPI v3 documents, reusing cached ones whose URL
// (which embeds a content hash) has not changed. Failures leave schemas
// empty rather than failing discovery.
func (a *Adapter) openapiDocs(ctx context.Context) (docs map[string]*openapiDoc, complete bool) {
	out := map[string]*openapiDoc{}
	paths, err := a.disc.OpenAPIV3WithContext(ctx).PathsWithContext(ctx)
	if err != nil {
		return out, false
	}
	complete = true
	for path, gv := range paths {
		if path != "api/v1" && !strings.HasPrefix(path, "apis/") {
			continue
		}
		url := gv.ServerRelativeURL()
		a.mu.RLock()
		c := a.docs[path]
		a.mu.RUnlock()
		if c != nil && c.url == url {
			out[path] = c.doc
			continue
		}
		data, err := gv.SchemaWithContext(ctx, "application/json")
		if err != nil {
			complete = false
			continue
		}
		doc, err := parseOpenAPI(data)
		if err != nil {
			complete = false
			continue
		}
		a.mu.Lock()
		a.docs[path] = &cachedDoc{url: url, doc: doc}
		a.mu.Unlock()
		out[path] = doc
	}
	return out, complete
}

func openapiPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}
