package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// changeArgs are the arguments of the operations that change releases.
type changeArgs struct {
	Release         string         `json:"release"`
	Namespace       string         `json:"namespace"`
	Chart           string         `json:"chart"`
	Version         string         `json:"version"`
	Values          map[string]any `json:"values"`
	CreateNamespace bool           `json:"createNamespace"`
	ReuseValues     bool           `json:"reuseValues"`
	ResetValues     bool           `json:"resetValues"`
	Revision        int            `json:"revision"` // rollback: the revision to return to; 0 means the previous one
	KeepHistory     bool           `json:"keepHistory"`
	Wait            *bool          `json:"wait"`
	TimeoutSeconds  int            `json:"timeoutSeconds"`
}

// ChangeResult is what a changing operation did, or would do in a dry run.
type ChangeResult struct {
	Release Release `json:"release"`
	DryRun  bool    `json:"dryRun"`
	// Changes are the objects created, updated (with the fields) and
	// deleted: "update Deployment/web: spec.replicas".
	Changes []string `json:"changes"`
	Notes   string   `json:"notes,omitempty"`
}

func (a *Adapter) decodeChange(verb string, raw json.RawMessage) (changeArgs, error) {
	var c changeArgs
	if err := decode(raw, &c); err != nil {
		return c, err
	}
	if c.Release == "" {
		return c, badRequest(fmt.Sprintf(`name the release: tools.helm.%s({release: "web", ...})`, verb))
	}
	if c.Namespace == "" {
		c.Namespace = a.ns
	}
	if c.TimeoutSeconds < 0 || c.TimeoutSeconds > 900 {
		return c, badRequest("timeoutSeconds must be between 1 and 900")
	}
	if c.Revision < 0 {
		return c, badRequest(fmt.Sprintf("revision %d: revisions count from 1", c.Revision))
	}
	if c.ReuseValues && c.ResetValues {
		return c, badRequest("reuseValues and resetValues exclude each other: reuse the last values, or reset to the chart's")
	}
	return c, nil
}

func (c changeArgs) wait() bool { return c.Wait == nil || *c.Wait }

func (a *Adapter) waitFor(c changeArgs) time.Duration {
	if c.TimeoutSeconds > 0 {
		return time.Duration(c.TimeoutSeconds) * time.Second
	}
	return a.timeout
}

// preview runs a changing operation as a dry run.
func (a *Adapter) preview(ctx context.Context, name string, raw json.RawMessage) (*catalog.Change, any, error) {
	return a.run(ctx, name, raw, true)
}

// change runs a changing operation.
func (a *Adapter) change(ctx context.Context, name string, raw json.RawMessage) (any, error) {
	_, out, err := a.run(ctx, name, raw, false)
	return out, err
}

// run performs (or, dry, previews) install, upgrade, rollback or
// uninstall, and accounts for what it changes.
func (a *Adapter) run(ctx context.Context, name string, raw json.RawMessage, dry bool) (*catalog.Change, any, error) {
	verb := strings.TrimPrefix(name, "helm.")
	args, err := a.decodeChange(verb, raw)
	if err != nil {
		return nil, nil, err
	}
	secretsOf(ctx).addInputs(args.Values)
	var rendering atomic.Bool
	cfg, err := a.config(ctx, args.Namespace, &rendering)
	if err != nil {
		return nil, nil, err
	}
	ref := releaseArgs{Release: args.Release, Namespace: args.Namespace}
	current, err := cfg.Releases.Last(args.Release)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil, err
	}
	if err != nil || current.Info == nil || current.Info.Status == release.StatusUninstalled {
		current = nil // none, or kept history: a new install may reuse the name
	}
	change := &catalog.Change{Action: verb, Kind: "HelmRelease", Namespace: args.Namespace, Name: args.Release, Existed: current != nil}
	acct := &accounting{crds: map[schema.GroupKind]bool{}}
	// A render is pinned for the call that previewed it: the same call
	// identity, caller, operation and arguments.
	id := pinKey(ctx, name, raw)
	// render runs an install or upgrade: a preview renders (reading no
	// Secret while it does) and pins the render; the call that follows
	// applies the pinned render.
	render := func(ch *chart.Chart, do func(*chart.Chart, postrender.PostRenderer) (*release.Release, error)) (*release.Release, error) {
		acct.addCRDs(ch)
		if !dry {
			if p := a.pinnedFor(id); p != nil {
				secretsOf(ctx).addRelease(&release.Release{Manifest: p.manifest, Hooks: p.hooks, Chart: ch})
				rel, err := do(pinnedChart(ch, p), nil)
				secretsOf(ctx).addRelease(rel)
				return rel, err
			}
		}
		rendering.Store(true)
		defer rendering.Store(false)
		rel, err := do(ch, renderEnd{&rendering})
		secretsOf(ctx).addRelease(rel)
		if err == nil && dry {
			a.pin(id, rel)
		}
		return rel, err
	}
	var before, after *release.Release
	switch verb {
	case "install":
		if current != nil {
			return change, nil, catalog.StatusError(http.StatusConflict, "AlreadyExists", fmt.Sprintf("release %q already exists in namespace %q (revision %d): use tools.helm.upgrade to change it", args.Release, args.Namespace, current.Version))
		}
		ch, err := a.loadChart(args.Chart, args.Version)
		if err != nil {
			return change, nil, err
		}
		after, err = render(ch, func(ch *chart.Chart, pr postrender.PostRenderer) (*release.Release, error) {
			inst := action.NewInstall(cfg)
			inst.ReleaseName, inst.Namespace, inst.CreateNamespace = args.Release, args.Namespace, args.CreateNamespace
			inst.Wait, inst.Timeout, inst.PostRenderer = args.wait(), a.waitFor(args), pr
			if dry {
				inst.DryRunOption = "server"
			}
			rel, err := inst.RunWithContext(ctx, ch, args.Values)
			// The chart's types were just created, and the API server may
			// not serve them for a moment yet: nothing else was, so try
			// again (each time reading no Secret while rendering).
			for try := 1; err != nil && !dry && try < 5 && len(ch.CRDObjects()) > 0 && meta.IsNoMatchError(err); try++ {
				select {
				case <-ctx.Done():
					return rel, err
				case <-time.After(time.Duration(try) * 300 * time.Millisecond):
				}
				a.mapper.Reset()
				if pr != nil {
					rendering.Store(true)
				}
				rel, err = inst.RunWithContext(ctx, ch, args.Values)
			}
			if err != nil && dry && len(ch.CRDObjects()) > 0 && meta.IsNoMatchError(err) {
				// The chart's own types are not installed yet, and a dry
				// run installs none: render without the cluster instead
				// (the call applies this render).
				inst = action.NewInstall(new(action.Configuration))
				inst.ReleaseName, inst.Namespace = args.Release, args.Namespace
				inst.DryRun, inst.ClientOnly = true, true
				rel, err = inst.RunWithContext(ctx, ch, args.Values)
			}
			return rel, err
		})
		if err != nil {
			return change, nil, fmt.Errorf("install %s: %w", args.Release, err)
		}
		if args.CreateNamespace {
			if exists, err := a.namespaceExists(ctx, args.Namespace); err != nil {
				return change, nil, err
			} else if !exists {
				change.Objects = append(change.Objects, catalog.Change{Action: "create", Kind: "Namespace", Name: args.Namespace})
				change.Diff = append(change.Diff, "+ Namespace "+args.Namespace)
			}
		}
		for _, crd := range ch.CRDObjects() {
			objs, err := parseManifest(string(crd.File.Data))
			if err != nil {
				return change, nil, badRequest(fmt.Sprintf("chart %q: %s: %v", args.Chart, crd.Filename, err))
			}
			for _, o := range objs {
				change.Objects = append(change.Objects, a.objectChange("create", o, "", false, acct.crds))
				change.Diff = append(change.Diff, "+ "+o.GetKind()+" "+o.GetName())
			}
			acct.extra = append(acct.extra, crd.File.Data...)
		}
	case "upgrade":
		if current == nil {
			return change, nil, notFound(ref, driver.ErrReleaseNotFound)
		}
		ch, err := a.loadChart(args.Chart, args.Version)
		if err != nil {
			return change, nil, err
		}
		// Helm upgrades from the last deployed revision.
		if before, err = cfg.Releases.Deployed(args.Release); err != nil {
			before = current
		}
		after, err = render(ch, func(ch *chart.Chart, pr postrender.PostRenderer) (*release.Release, error) {
			up := action.NewUpgrade(cfg)
			up.Namespace, up.ReuseValues, up.ResetValues = args.Namespace, args.ReuseValues, args.ResetValues
			up.Wait, up.Timeout, up.PostRenderer, up.MaxHistory = args.wait(), a.waitFor(args), pr, cfg.Releases.MaxHistory
			if dry {
				up.DryRunOption = "server"
			}
			return up.RunWithContext(ctx, args.Release, ch, args.Values)
		})
		if err != nil {
			return change, nil, fmt.Errorf("upgrade %s: %w", args.Release, err)
		}
		acct.live = true
	case "rollback":
		if current == nil {
			return change, nil, notFound(ref, driver.ErrReleaseNotFound)
		}
		target := args.Revision
		if target == 0 {
			target = current.Version - 1
		}
		if target < 1 {
			return change, nil, badRequest(fmt.Sprintf("release %q has only revision %d: there is nothing to roll back to", args.Release, current.Version))
		}
		if target == current.Version {
			return change, nil, badRequest(fmt.Sprintf("revision %d is the current revision of %q: name an earlier one (tools.helm.history lists them)", target, args.Release))
		}
		ref.Revision = target
		if after, err = cfg.Releases.Get(args.Release, target); err != nil {
			return change, nil, notFound(ref, err)
		}
		before, acct.live = current, true
		change.Fingerprint = fmt.Sprint(target)
		if !dry {
			rb := action.NewRollback(cfg)
			rb.Version, rb.Wait, rb.Timeout, rb.MaxHistory = target, args.wait(), a.waitFor(args), cfg.Releases.MaxHistory
			if err := untilDone(ctx, func() error { return rb.Run(args.Release) }); err != nil {
				return change, nil, fmt.Errorf("rollback %s to revision %d: %w", args.Release, target, err)
			}
			if after, err = cfg.Releases.Last(args.Release); err != nil {
				return change, nil, err
			}
		}
	case "uninstall":
		if current == nil {
			return change, nil, notFound(ref, driver.ErrReleaseNotFound)
		}
		before = current
		change.Fingerprint = fmt.Sprint(current.Version)
		after = &release.Release{Name: current.Name, Namespace: current.Namespace, Version: current.Version, Chart: current.Chart,
			Info: &release.Info{Status: release.StatusUninstalled, LastDeployed: current.Info.LastDeployed}}
		// Helm runs the release's delete hooks.
		for _, h := range current.Hooks {
			if h != nil && (slices.Contains(h.Events, release.HookPreDelete) || slices.Contains(h.Events, release.HookPostDelete)) {
				after.Hooks = append(after.Hooks, h)
			}
		}
		if !dry {
			un := action.NewUninstall(cfg)
			un.KeepHistory, un.Wait, un.Timeout = args.KeepHistory, args.wait(), a.waitFor(args)
			var resp *release.UninstallReleaseResponse
			err := untilDone(ctx, func() (err error) {
				resp, err = un.Run(args.Release)
				return err
			})
			if err != nil {
				return change, nil, fmt.Errorf("uninstall %s: %w", args.Release, err)
			}
			if resp != nil && resp.Release != nil && resp.Release.Info != nil {
				after.Info = resp.Release.Info
			}
		}
	default:
		return nil, nil, fmt.Errorf("unknown operation %s", name)
	}
	lines, err := a.account(ctx, change, acct, before, after, verb == "uninstall")
	if err != nil {
		return change, nil, err
	}
	change.Diff = append([]string{headline(verb, before, after)}, change.Diff...)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", change.Fingerprint)
	h.Write(acct.extra)
	if after != nil {
		h.Write([]byte(after.Manifest))
		for _, hk := range after.Hooks {
			if hk != nil {
				h.Write([]byte(hk.Manifest))
			}
		}
	}
	if before != nil {
		fmt.Fprintf(h, "\x00%d\x00%s", before.Version, before.Manifest)
	}
	change.Fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
	out := ChangeResult{Release: summary(ctx, after), DryRun: dry, Changes: lines}
	if verb == "rollback" && dry {
		out.Release.Revision = current.Version + 1
		out.Release.Description = fmt.Sprintf("Rollback to %d", after.Version)
	}
	if after.Info != nil && verb != "uninstall" {
		out.Notes = secretsOf(ctx).text(after.Info.Notes)
	}
	return change, out, nil
}

// untilDone runs f, returning when it does or when ctx ends (Helm's
// rollback and uninstall take no context: they go on in the background).
func untilDone(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w (Helm goes on in the background: read the release's status later)", ctx.Err())
	}
}

// headline is the first line of a release change's diff.
func headline(verb string, before, after *release.Release) string {
	chartOf := func(r *release.Release) string {
		if r == nil || r.Chart == nil || r.Chart.Metadata == nil {
			return "?"
		}
		return r.Chart.Metadata.Name + " " + r.Chart.Metadata.Version
	}
	switch verb {
	case "install":
		return fmt.Sprintf("install %s as release %s/%s", chartOf(after), after.Namespace, after.Name)
	case "upgrade":
		return fmt.Sprintf("upgrade release %s/%s from %s (revision %d) to %s", before.Namespace, before.Name, chartOf(before), before.Version, chartOf(after))
	case "rollback":
		return fmt.Sprintf("roll back release %s/%s from revision %d to revision %d (%s)", before.Namespace, before.Name, before.Version, after.Version, chartOf(after))
	}
	return fmt.Sprintf("uninstall release %s/%s (revision %d, %s)", before.Namespace, before.Name, before.Version, chartOf(before))
}

// short shows a value in a diff line.
func short(v any, present bool) string {
	if !present {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
