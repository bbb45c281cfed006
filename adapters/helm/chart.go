package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
)

// chartArgs name a chart and how to render it.
type chartArgs struct {
	Chart     string         `json:"chart"`
	Version   string         `json:"version"`
	Values    map[string]any `json:"values"`
	Release   string         `json:"release"`
	Namespace string         `json:"namespace"`
}

// loadChart finds the chart ref names, among the allowed sources only,
// and loads it.
func (a *Adapter) loadChart(ref, version string) (*chart.Chart, error) {
	if ref == "" {
		return nil, badRequest(`name the chart: {chart: "./examples/charts/web-app"} (a local directory or archive, "repo/name", or oci://...)`)
	}
	path, err := a.locate(ref, version)
	if err != nil {
		return nil, err
	}
	ch, err := loader.Load(path)
	if err != nil {
		return nil, badRequest(fmt.Sprintf("chart %q: %v", ref, err))
	}
	if ch.Metadata != nil && ch.Metadata.Type == "library" {
		return nil, badRequest(fmt.Sprintf("chart %q is a library chart, which cannot be installed", ref))
	}
	return ch, nil
}

// locate returns the local path of the chart ref, refusing sources
// outside the allow-list.
func (a *Adapter) locate(ref, version string) (string, error) {
	notAllowed := func() error {
		return refused(fmt.Sprintf("chart %q is not from an allowed chart source (allowed: %s); use a chart from one of them, or ask a human to allow its source",
			ref, strings.Join(a.sources, ", ")))
	}
	remote := strings.HasPrefix(ref, "oci://") || strings.HasPrefix(ref, "https://") || strings.HasPrefix(ref, "http://")
	if !remote {
		if _, err := os.Stat(ref); err == nil || strings.HasPrefix(ref, ".") || filepath.IsAbs(ref) {
			if err != nil {
				return "", badRequest(fmt.Sprintf("chart %q: no such file or directory", ref))
			}
			abs, err := filepath.Abs(ref)
			if err != nil {
				return "", err
			}
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				abs = real
			}
			for _, s := range a.sources {
				if filepath.IsAbs(s) && (abs == s || strings.HasPrefix(abs, strings.TrimSuffix(s, string(filepath.Separator))+string(filepath.Separator))) {
					if err := noLinks(abs); err != nil {
						return "", refused(fmt.Sprintf("chart %q: %v", ref, err))
					}
					return abs, nil
				}
			}
			return "", notAllowed()
		}
	}
	allowed := false
	for _, s := range a.sources {
		switch {
		case filepath.IsAbs(s):
		case strings.Contains(s, "://"):
			allowed = allowed || underURL(ref, s)
		default: // a repository name
			allowed = allowed || !remote && strings.HasPrefix(ref, s+"/")
		}
	}
	if !allowed {
		return "", notAllowed()
	}
	a.chartMu.Lock()
	defer a.chartMu.Unlock()
	// An install carries the chart options with their registry client.
	inst := action.NewInstall(new(action.Configuration))
	inst.Version = version
	if strings.HasPrefix(ref, "oci://") {
		rc, err := registry.NewClient(registry.ClientOptCredentialsFile(a.settings.RegistryConfig))
		if err != nil {
			return "", err
		}
		inst.SetRegistryClient(rc)
	}
	path, err := inst.LocateChart(ref, a.settings)
	if err != nil {
		return "", badRequest(fmt.Sprintf("chart %q: %v", ref, err))
	}
	return path, nil
}

// underURL says whether the chart URL ref lies under the source URL
// prefix: same scheme and host, and a path under the prefix's once both
// are cleaned ("team/../other" is not under "team").
func underURL(ref, prefix string) bool {
	r, err := url.Parse(ref)
	p, err2 := url.Parse(prefix)
	if err != nil || err2 != nil || r.Scheme != p.Scheme || r.Host != p.Host || r.User != nil || r.RawQuery != "" || r.Fragment != "" {
		return false
	}
	rp, pp := path.Clean("/"+r.Path), path.Clean("/"+p.Path)
	if strings.Contains(r.RawPath, "%2") || strings.Contains(r.RawPath, "%5") {
		return false // encoded separators or dots
	}
	return rp == pp || strings.HasPrefix(rp, strings.TrimSuffix(pp, "/")+"/")
}

// noLinks refuses a chart directory holding symbolic links: Helm follows
// them, so a link could bring files from outside the allowed source.
func noLinks(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			rel, _ := filepath.Rel(dir, p)
			return fmt.Errorf("holds a symbolic link (%s), which could bring files from outside the allowed chart sources", rel)
		}
		return nil
	})
}

// Rendered is what a chart renders to.
type Rendered struct {
	Objects []map[string]any `json:"objects"`
	Notes   string           `json:"notes,omitempty"`
}

// template renders a chart locally, without the cluster, as helm template
// does.
func (a *Adapter) template(ctx context.Context, raw json.RawMessage) (any, error) {
	var args chartArgs
	if err := decode(raw, &args); err != nil {
		return nil, err
	}
	ch, err := a.loadChart(args.Chart, args.Version)
	if err != nil {
		return nil, err
	}
	if args.Release == "" {
		args.Release = "release-name"
	}
	if args.Namespace == "" {
		args.Namespace = a.ns
	}
	inst := action.NewInstall(new(action.Configuration))
	inst.DryRun, inst.ClientOnly, inst.Replace, inst.IncludeCRDs = true, true, true, true
	inst.ReleaseName, inst.Namespace = args.Release, args.Namespace
	sec := secretsOf(ctx)
	sec.addInputs(args.Values)
	rel, err := inst.RunWithContext(ctx, ch, args.Values)
	sec.addRelease(rel)
	opts := chartutil.ReleaseOptions{Name: args.Release, Namespace: args.Namespace, Revision: 1, IsInstall: true}
	if err != nil {
		return nil, badRequest(fmt.Sprintf("render chart %q: %v", args.Chart, maskedError(ch, args.Values, opts, sec.secretLeaf, err)))
	}
	// What the agent reads is the same render from values whose secrets
	// are markers (the real one above told which values are secrets): a
	// ConfigMap or the notes holding a secret transformed hold the marker
	// transformed instead.
	masked := action.NewInstall(new(action.Configuration))
	masked.DryRun, masked.ClientOnly, masked.Replace, masked.IncludeCRDs = true, true, true, true
	masked.ReleaseName, masked.Namespace = args.Release, args.Namespace
	if rel, err = masked.RunWithContext(ctx, maskChart(ch, sec.secretLeaf), maskMap(args.Values, sec.secretLeaf)); err != nil {
		return nil, badRequest(fmt.Sprintf("render chart %q: %v", args.Chart, errMasked))
	}
	objs, err := parseManifest(rel.Manifest)
	if err != nil {
		return nil, err
	}
	notes := ""
	if rel.Info != nil {
		notes = sec.text(rel.Info.Notes)
	}
	return Rendered{Objects: hideSecrets(objs), Notes: notes}, nil
}
