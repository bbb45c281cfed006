package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// A change is made exactly as previewed: the render a preview made is
// pinned under the call's identity, and the call that follows (the bridge
// previews, judges, then calls) installs that render, not a new one. A
// chart may render differently each time (random values, the time,
// lookups of what changed since, a remote chart replaced): what the policy
// and the plan judged is what is applied.

// pinned is a previewed render.
type pinned struct {
	manifest string
	hooks    []*release.Hook
	notes    string
	at       time.Time
}

// pinTTL is how long a preview's render waits for its call, and maxPins
// how many renders wait at most (plan mode previews without calling).
const (
	pinTTL  = time.Minute
	maxPins = 64
)

// pinKey names the call a render is pinned for: its identity (none: no
// pin), caller, operation and arguments.
func pinKey(ctx context.Context, op string, args []byte) string {
	id := catalog.CallID(ctx)
	if id == "" {
		return ""
	}
	user := ""
	if c := catalog.CallerFrom(ctx); c != nil {
		user = c.User
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", id, user, op)
	h.Write(args)
	return hex.EncodeToString(h.Sum(nil))
}

// pin keeps rel's render for the call id.
func (a *Adapter) pin(id string, rel *release.Release) {
	if id == "" || rel == nil {
		return
	}
	p := &pinned{manifest: rel.Manifest, hooks: rel.Hooks, at: time.Now()}
	if rel.Info != nil {
		p.notes = rel.Info.Notes
	}
	a.pinMu.Lock()
	defer a.pinMu.Unlock()
	if a.pins == nil {
		a.pins = map[string]*pinned{}
	}
	oldest := ""
	for k, old := range a.pins {
		if time.Since(old.at) > pinTTL {
			delete(a.pins, k)
		} else if oldest == "" || old.at.Before(a.pins[oldest].at) {
			oldest = k
		}
	}
	if len(a.pins) >= maxPins {
		delete(a.pins, oldest)
	}
	a.pins[id] = p
}

// pinnedFor takes the render pinned for the call id, or nil.
func (a *Adapter) pinnedFor(id string) *pinned {
	a.pinMu.Lock()
	defer a.pinMu.Unlock()
	p := a.pins[id]
	delete(a.pins, id)
	if p != nil && time.Since(p.at) > pinTTL {
		return nil
	}
	return p
}

// pinnedChart is a chart that renders exactly p: its one template writes
// the previewed manifest and hooks (kept as files, so that nothing in
// them is read as a template), its notes the previewed notes. It keeps
// orig's metadata, values, schema and type definitions (its dependencies'
// too), so the release records the chart it came from.
func pinnedChart(orig *chart.Chart, p *pinned) *chart.Chart {
	md := *orig.Metadata
	md.Dependencies = nil
	c := &chart.Chart{Metadata: &md, Values: orig.Values, Schema: orig.Schema}
	for _, f := range orig.Files {
		if !strings.HasPrefix(f.Name, "crds/") {
			c.Files = append(c.Files, f)
		}
	}
	for i, crd := range orig.CRDObjects() {
		c.Files = append(c.Files, &chart.File{Name: fmt.Sprintf("crds/%03d-%s", i, path.Base(crd.Filename)), Data: crd.File.Data})
	}
	var b strings.Builder
	b.WriteString(p.manifest)
	for _, h := range p.hooks {
		if h != nil {
			b.WriteString("\n---\n" + h.Manifest + "\n")
		}
	}
	c.Files = append(c.Files,
		&chart.File{Name: "kubecode-pinned/manifest.yaml", Data: []byte(b.String())},
		&chart.File{Name: "kubecode-pinned/NOTES.txt", Data: []byte(p.notes)})
	c.Templates = []*chart.File{
		{Name: "templates/pinned.yaml", Data: []byte(`{{ .Files.Get "kubecode-pinned/manifest.yaml" }}`)},
		{Name: "templates/NOTES.txt", Data: []byte(`{{ .Files.Get "kubecode-pinned/NOTES.txt" }}`)},
	}
	return c
}

// renderEnd is a post-renderer that leaves the manifest as it is and
// marks the end of rendering: Secrets read from then on are Helm's own
// work (checking and patching the objects it applies), not a chart's.
type renderEnd struct{ rendering *atomic.Bool }

func (r renderEnd) Run(b *bytes.Buffer) (*bytes.Buffer, error) {
	r.rendering.Store(false)
	return b, nil
}

// secretPath matches API paths of Secrets: a namespace's or all, one or
// the list, watched or not, however the path goes on, and behind any
// prefix the server's URL has (a proxy's /k8s/clusters/c-1).
var secretPath = regexp.MustCompile(`/api/v1/(watch/)?(namespaces/[^/]+/)?secrets(/|$)`)

// secretRead says whether req reads Secrets: one, a namespace's, or all.
// Helm's release records are Secrets too, and are read by the release
// storage's own client, never through the guarded one.
func secretRead(req *http.Request) bool {
	return req.Method == http.MethodGet && secretPath.MatchString(req.URL.Path)
}

// notFound404 answers a request with the API's Not Found status.
func notFound404(req *http.Request) *http.Response {
	body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404,` +
		`"message":"kubecode: a chart cannot read Secrets while it renders"}`
	return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}
}
