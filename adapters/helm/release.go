package helm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// releaseArgs are the arguments of every operation on one release.
type releaseArgs struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	All       bool   `json:"all"` // get_values: computed values too
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badRequest("invalid arguments: " + err.Error())
	}
	return nil
}

// releaseTarget decodes the arguments naming one release.
func (a *Adapter) releaseTarget(raw json.RawMessage) (releaseArgs, error) {
	var r releaseArgs
	if err := decode(raw, &r); err != nil {
		return r, err
	}
	if r.Release == "" {
		return r, badRequest(`name the release: {release: "web"}; tools.helm.list() lists them`)
	}
	if r.Namespace == "" {
		r.Namespace = a.ns
	}
	if r.Revision < 0 {
		return r, badRequest(fmt.Sprintf("revision %d: revisions count from 1", r.Revision))
	}
	return r, nil
}

// load reads one revision of a release (0: the latest).
func (a *Adapter) load(ctx context.Context, r releaseArgs) (*action.Configuration, *release.Release, error) {
	cfg, err := a.config(ctx, r.Namespace, nil)
	if err != nil {
		return nil, nil, err
	}
	var rel *release.Release
	if r.Revision > 0 {
		rel, err = cfg.Releases.Get(r.Release, r.Revision)
	} else {
		rel, err = cfg.Releases.Last(r.Release)
	}
	if err != nil {
		return nil, nil, notFound(r, err)
	}
	return cfg, rel, nil
}

// loadTarget decodes the arguments naming a release and reads it.
func (a *Adapter) loadTarget(ctx context.Context, raw json.RawMessage) (releaseArgs, *action.Configuration, *release.Release, error) {
	r, err := a.releaseTarget(raw)
	if err != nil {
		return r, nil, nil, err
	}
	cfg, rel, err := a.load(ctx, r)
	return r, cfg, rel, err
}

// notFound says which release or revision is missing and how to find one.
func notFound(r releaseArgs, err error) error {
	if !errors.Is(err, driver.ErrReleaseNotFound) {
		return err
	}
	what := fmt.Sprintf("release %q", r.Release)
	if r.Revision > 0 {
		what = fmt.Sprintf("revision %d of release %q", r.Revision, r.Release)
	}
	return catalog.StatusError(http.StatusNotFound, "NotFound",
		fmt.Sprintf("%s not found in namespace %q: tools.helm.list({allNamespaces: true}) lists releases, tools.helm.history({release}) their revisions", what, r.Namespace))
}

// Release is a release as operations return it.
type Release struct {
	Name         string `json:"name"`
	Namespace    string `json:"namespace"`
	Revision     int    `json:"revision"`
	Status       string `json:"status"`
	Chart        string `json:"chart"`
	ChartVersion string `json:"chartVersion"`
	AppVersion   string `json:"appVersion,omitempty"`
	Updated      string `json:"updated"`
	Description  string `json:"description,omitempty"`
}

// summary describes rel; its description, which may quote an error
// holding what the chart rendered, loses the call's secrets as free text.
func summary(ctx context.Context, rel *release.Release) Release {
	out := Release{Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Version}
	if rel.Info != nil {
		out.Status = rel.Info.Status.String()
		out.Description = secretsOf(ctx).text(rel.Info.Description)
		if !rel.Info.LastDeployed.IsZero() {
			out.Updated = rel.Info.LastDeployed.UTC().Format(time.RFC3339)
		}
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		out.Chart = rel.Chart.Metadata.Name
		out.ChartVersion = rel.Chart.Metadata.Version
		out.AppVersion = rel.Chart.Metadata.AppVersion
	}
	return out
}

type listArgs struct {
	Namespace     string `json:"namespace"`
	AllNamespaces bool   `json:"allNamespaces"`
	Filter        string `json:"filter"`
	All           bool   `json:"all"` // every state, not only deployed and failed
}

func (a *Adapter) list(ctx context.Context, raw json.RawMessage) (any, error) {
	var args listArgs
	if err := decode(raw, &args); err != nil {
		return nil, err
	}
	if args.Filter != "" {
		if _, err := regexp.Compile(args.Filter); err != nil {
			return nil, badRequest(fmt.Sprintf("filter %q is not a regular expression: %v", args.Filter, err))
		}
	}
	ns := args.Namespace
	if ns == "" {
		ns = a.ns
	}
	if args.AllNamespaces {
		ns = ""
	}
	cfg, err := a.config(ctx, ns, nil)
	if err != nil {
		return nil, err
	}
	l := action.NewList(cfg)
	l.AllNamespaces, l.Filter, l.All = args.AllNamespaces, args.Filter, true
	l.StateMask = action.ListDeployed | action.ListFailed | action.ListPendingInstall | action.ListPendingUpgrade | action.ListPendingRollback
	if args.All {
		l.StateMask = action.ListAll
	}
	rels, err := l.Run()
	if err != nil {
		return nil, err
	}
	out := make([]Release, 0, len(rels))
	for _, r := range rels {
		out = append(out, summary(ctx, r))
	}
	return out, nil
}

// Status is a release with what it deployed.
type Status struct {
	Release
	FirstDeployed string   `json:"firstDeployed,omitempty"`
	Objects       []string `json:"objects"`
	Hooks         []string `json:"hooks,omitempty"`
}

func (a *Adapter) status(ctx context.Context, raw json.RawMessage) (any, error) {
	_, _, rel, err := a.loadTarget(ctx, raw)
	if err != nil {
		return nil, err
	}
	objs, err := parseManifest(rel.Manifest)
	if err != nil {
		return nil, err
	}
	out := Status{Release: summary(ctx, rel), Objects: make([]string, 0, len(objs))}
	if rel.Info != nil && !rel.Info.FirstDeployed.IsZero() {
		out.FirstDeployed = rel.Info.FirstDeployed.UTC().Format(time.RFC3339)
	}
	for _, o := range objs {
		out.Objects = append(out.Objects, objectKey(o))
	}
	for _, h := range rel.Hooks {
		if h != nil {
			out.Hooks = append(out.Hooks, h.Kind+"/"+h.Name)
		}
	}
	return out, nil
}

func (a *Adapter) history(ctx context.Context, raw json.RawMessage) (any, error) {
	r, err := a.releaseTarget(raw)
	if err != nil {
		return nil, err
	}
	cfg, err := a.config(ctx, r.Namespace, nil)
	if err != nil {
		return nil, err
	}
	rels, err := cfg.Releases.History(r.Release)
	if err != nil {
		return nil, notFound(r, err)
	}
	out := make([]Release, 0, len(rels))
	for _, rel := range rels {
		out = append(out, summary(ctx, rel))
	}
	slices.SortFunc(out, func(x, y Release) int { return x.Revision - y.Revision })
	return out, nil
}

func (a *Adapter) getValues(ctx context.Context, raw json.RawMessage) (any, error) {
	r, cfg, rel, err := a.loadTarget(ctx, raw)
	if err != nil {
		return nil, err
	}
	g := action.NewGetValues(cfg)
	g.Version, g.AllValues = rel.Version, r.All
	vals, err := g.Run(r.Release)
	if err != nil {
		return nil, notFound(r, err)
	}
	if vals == nil {
		vals = map[string]any{}
	}
	return redactValues(vals), nil
}

// redactValues replaces values under secret-looking keys (password,
// token, ...). Values a rendered Secret holds, or that flow into one, are
// scrubbed from every result (callSecrets).
func redactValues(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if catalog.SecretName.MatchString(k) {
				if _, nested := x.(map[string]any); !nested && x != nil {
					out[k] = redacted
					continue
				}
			}
			out[k] = redactValues(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = redactValues(x)
		}
		return out
	}
	return v
}

type manifestArgs struct {
	releaseArgs
	Hooks bool `json:"hooks"`
}

func (a *Adapter) getManifest(ctx context.Context, raw json.RawMessage) (any, error) {
	_, _, rel, err := a.loadTarget(ctx, raw)
	if err != nil {
		return nil, err
	}
	var args manifestArgs
	_ = decode(raw, &args)
	objs, err := parseManifest(rel.Manifest)
	if err != nil {
		return nil, err
	}
	if args.Hooks {
		for _, h := range rel.Hooks {
			if h == nil {
				continue
			}
			hobjs, err := parseManifest(h.Manifest)
			if err != nil {
				return nil, err
			}
			objs = append(objs, hobjs...)
		}
	}
	return hideSecrets(objs), nil
}

func (a *Adapter) getNotes(ctx context.Context, raw json.RawMessage) (any, error) {
	_, _, rel, err := a.loadTarget(ctx, raw)
	if err != nil {
		return nil, err
	}
	return notesOf(secretsOf(ctx), rel), nil
}
