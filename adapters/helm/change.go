package helm

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
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
// uninstall, and accounts for what it changes: one method of changeRun per
// verb, as Helm's own pkg/action has one action per verb.
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
	r := &changeRun{a: a, ctx: ctx, args: args, cfg: cfg, dry: dry, current: current, ref: ref, change: change, acct: acct,
		id: pinKey(ctx, name, raw), rendering: &rendering}
	var before, after *release.Release
	switch verb {
	case "install":
		after, err = r.install()
	case "upgrade":
		before, after, err = r.upgrade()
	case "rollback":
		before, after, err = r.rollback()
	case "uninstall":
		before, after, err = r.uninstall()
	default:
		return nil, nil, fmt.Errorf("unknown operation %s", name)
	}
	if err != nil {
		return change, nil, err
	}
	if verb == "rollback" && after != nil && after.Chart != nil {
		// The stored revision's chart, rendered again from its values
		// with the secrets masked: a field that differs there is secret.
		r.chart = after.Chart
	}
	masks := r.chart != nil && after != nil && (verb == "install" || verb == "upgrade" || verb == "rollback")
	var masked map[string]string
	var maskErr error
	if masks {
		masked, maskErr = r.maskedFiles(after)
		acct.maskObjects(masked, maskErr)
	}
	lines, err := a.account(ctx, change, acct, before, after, verb == "uninstall")
	if err != nil {
		return change, nil, err
	}
	if after != nil && verb != "uninstall" {
		warnSecretCopies(change, after)
	}
	if masks {
		// Names and summaries no masked render makes: no word that only a
		// secret makes.
		scrub := derivedScrub(r.chart, after.Config, releaseOptions(after), masked, maskErr)
		for i := range change.Diff {
			change.Diff[i] = scrub(change.Diff[i])
		}
		for i := range lines {
			lines[i] = scrub(lines[i])
		}
		for i := range change.Objects {
			o := &change.Objects[i]
			o.Name = scrub(o.Name)
			for j := range o.Diff {
				o.Diff[j] = scrub(o.Diff[j])
			}
			for j := range o.Fields {
				f := &o.Fields[j]
				f.Path, f.Before, f.After = scrub(f.Path), scrub(f.Before), scrub(f.After)
			}
		}
	}
	if (verb == "upgrade" || verb == "rollback") && len(change.Objects) == 0 && sameRelease(before, after) &&
		current.Info != nil && current.Info.Status == release.StatusDeployed {
		// The same chart with the same values, and the dry run changes no
		// object: nothing to decide.
		change.Unchanged = true
		change.Diff = append(change.Diff, "no change: the same chart and values, and every object as the cluster holds it")
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
	// The short lines name values too: scrubbed as the plan's are.
	for i := range lines {
		lines[i] = secretsOf(ctx).text(lines[i])
	}
	out := ChangeResult{Release: summary(ctx, after), DryRun: dry, Changes: lines}
	if verb == "rollback" && dry {
		out.Release.Revision = current.Version + 1
		out.Release.Description = fmt.Sprintf("Rollback to %d", after.Version)
	}
	if after.Info != nil && verb != "uninstall" {
		if verb == "rollback" { // a stored revision: its notes rendered again, masked
			out.Notes = notesOf(secretsOf(ctx), after)
		} else { // rendered masked by render
			out.Notes = secretsOf(ctx).text(after.Info.Notes)
		}
	}
	return change, out, nil
}

// warnSecretCopies finds the objects of after's render that are not
// Secrets yet hold a value of a secret-looking key of its values (a
// password copied into a ConfigMap, an annotation, a plain env var):
// whoever may read that kind reads the value. Each is marked Sensitive,
// so the policy judges it as a Secret write (allowSecretWrites), and the
// plan says so first, naming the object and the key, never the value.
func warnSecretCopies(change *catalog.Change, after *release.Release) {
	type keyed struct{ path, value string }
	var secrets []keyed
	var walk func(v any, path string, secret bool)
	walk = func(v any, path string, secret bool) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(x, p, secret || catalog.SecretName.MatchString(k))
			}
		case []any:
			for i, x := range t {
				walk(x, fmt.Sprintf("%s[%d]", path, i), secret)
			}
		case string:
			if secret && len(strings.TrimSpace(t)) >= minFlowing {
				secrets = append(secrets, keyed{path, t})
			}
		}
	}
	walk(after.Config, "", false)
	if len(secrets) == 0 {
		return
	}
	slices.SortFunc(secrets, func(a, b keyed) int { return strings.Compare(a.path, b.path) })
	objs, err := parseManifest(after.Manifest)
	if err != nil {
		return
	}
	var warnings []string
	for _, o := range objs {
		if isSecret(o) {
			continue
		}
		raw, err := json.Marshal(o.Object)
		if err != nil {
			continue
		}
		text := string(raw)
		var keys []string
		for _, s := range secrets {
			j, _ := json.Marshal(s.value)
			if strings.Contains(text, string(j[1:len(j)-1])) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(s.value))) {
				keys = append(keys, s.path)
			}
		}
		if len(keys) == 0 {
			continue
		}
		ns := o.GetNamespace()
		if ns == "" {
			ns = change.Namespace
		}
		for i := range change.Objects {
			if c := &change.Objects[i]; c.Kind == o.GetKind() && c.Name == o.GetName() {
				c.Sensitive = true
			}
		}
		warnings = append(warnings, fmt.Sprintf("⚠ %s %s/%s holds the value of %s, a secret-looking key (value not shown): whoever may read a %s reads it; judged as a write of secret values (allowSecretWrites)",
			o.GetKind(), ns, o.GetName(), strings.Join(keys, ", "), o.GetKind()))
	}
	change.Diff = append(warnings, change.Diff...)
}

// changeRun is one Helm change under way: what each verb's method needs.
type changeRun struct {
	a       *Adapter
	ctx     context.Context
	args    changeArgs
	cfg     *action.Configuration
	dry     bool
	current *release.Release // the release's last revision; nil when none (or uninstalled)
	ref     releaseArgs
	change  *catalog.Change
	acct    *accounting
	id      string       // the call's pin key (pinKey)
	chart   *chart.Chart // the chart rendered (not a pinned render's)
	// masked is the chart's render from masked values for the release
	// rendered (maskedFiles), made once for its notes, plan lines and
	// names; maskErr its failure.
	masked    map[string]string
	maskErr   error
	maskFor   *release.Release
	rendering *atomic.Bool // a render is under way: it reads no Secret
	// snapFrom are the manifests whose objects' cluster copies an upgrade
	// applied (not previewed) reads before it applies (accounting.snap).
	snapFrom []string
}

// render runs an install or upgrade: a preview renders (reading no Secret
// while it does) and pins the render for the call that previewed it (the
// same call identity, caller, operation and arguments); the call that
// follows applies the pinned render.
func (r *changeRun) render(ch *chart.Chart, do func(*chart.Chart, postrender.PostRenderer) (*release.Release, error)) (*release.Release, error) {
	r.acct.addCRDs(ch)
	r.chart = ch
	if !r.dry {
		if p := r.a.pinnedFor(r.id); p != nil {
			if len(r.snapFrom) > 0 {
				r.acct.snap = r.a.snapshot(r.ctx, r.args.Namespace, append(r.snapFrom, p.manifest)...)
			}
			secretsOf(r.ctx).addRelease(&release.Release{Manifest: p.manifest, Hooks: p.hooks, Chart: ch})
			rel, err := do(pinnedChart(ch, p), nil)
			secretsOf(r.ctx).addRelease(rel)
			return rel, err
		}
	}
	if !r.dry && len(r.snapFrom) > 0 {
		r.acct.snap = r.a.snapshot(r.ctx, r.args.Namespace, r.snapFrom...)
	}
	r.rendering.Store(true)
	defer r.rendering.Store(false)
	rel, err := do(ch, renderEnd{r.rendering})
	sec := secretsOf(r.ctx)
	sec.addRelease(rel)
	if err != nil {
		// The chart's message rendered from values whose secrets are
		// markers, and no word that only a secret makes.
		config, opts := r.renderInput()
		err = maskedError(ch, config, opts, sec.secretLeaf, err)
		masked, maskErr := maskedRender(ch, config, opts, sec.secretLeaf)
		if s := derivedScrub(ch, config, opts, masked, maskErr)(err.Error()); s != err.Error() {
			err = errors.New(s)
		}
		return rel, err
	}
	if rel != nil && rel.Info != nil && rel.Info.Notes != "" {
		// The notes the agent reads, and those the pin keeps for the
		// release, are rendered from values whose secrets are markers.
		files, ferr := r.maskedFiles(rel)
		rel.Info.Notes = notesIn(ch, files, ferr)
	}
	if r.dry {
		r.a.pin(r.id, rel)
	}
	return rel, nil
}

// maskedFiles is r.chart's render from values whose secrets are markers,
// for release rel's values and options: made once per release.
func (r *changeRun) maskedFiles(rel *release.Release) (map[string]string, error) {
	if r.maskFor != rel {
		r.masked, r.maskErr = maskedRender(r.chart, rel.Config, releaseOptions(rel), secretsOf(r.ctx).secretLeaf)
		r.maskFor = rel
	}
	return r.masked, r.maskErr
}

// renderInput is what the chart renders with, as Helm computes it for
// this install or upgrade: the values given (an upgrade given none, or
// asked to reuse them, merges the release's last ones in), and the
// release's options.
func (r *changeRun) renderInput() (map[string]any, chartutil.ReleaseOptions) {
	config := copyValues(r.args.Values)
	rev := 1
	if r.current != nil {
		rev = r.current.Version + 1
		if r.args.ReuseValues || !r.args.ResetValues && len(config) == 0 {
			config = chartutil.CoalesceTables(config, copyValues(r.current.Config))
		}
	}
	return config, chartutil.ReleaseOptions{Name: r.args.Release, Namespace: r.args.Namespace, Revision: rev, IsInstall: rev == 1, IsUpgrade: rev > 1}
}

// copyValues copies values deeply: merging must not change the caller's.
func copyValues(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return maskMap(m, func(string, bool) bool { return false })
}

// install installs the chart as a new release.
func (r *changeRun) install() (after *release.Release, err error) {
	if r.current != nil {
		return nil, catalog.StatusError(http.StatusConflict, "AlreadyExists", fmt.Sprintf("release %q already exists in namespace %q (revision %d): use tools.helm.upgrade to change it", r.args.Release, r.args.Namespace, r.current.Version))
	}
	ch, err := r.a.loadChart(r.args.Chart, r.args.Version)
	if err != nil {
		return nil, err
	}
	after, err = r.render(ch, func(ch *chart.Chart, pr postrender.PostRenderer) (*release.Release, error) {
		inst := action.NewInstall(r.cfg)
		inst.ReleaseName, inst.Namespace, inst.CreateNamespace = r.args.Release, r.args.Namespace, r.args.CreateNamespace
		inst.Wait, inst.Timeout, inst.PostRenderer = r.args.wait(), r.a.waitFor(r.args), pr
		if r.dry {
			inst.DryRunOption = "server"
		}
		rel, err := inst.RunWithContext(r.ctx, ch, r.args.Values)
		// The chart's types were just created, and the API server may
		// not serve them for a moment yet: nothing else was, so try
		// again (each time reading no Secret while rendering).
		for try := 1; err != nil && !r.dry && try < 5 && len(ch.CRDObjects()) > 0 && meta.IsNoMatchError(err); try++ {
			select {
			case <-r.ctx.Done():
				return rel, err
			case <-time.After(time.Duration(try) * 300 * time.Millisecond):
			}
			r.a.mapper.Reset()
			if pr != nil {
				r.rendering.Store(true)
			}
			rel, err = inst.RunWithContext(r.ctx, ch, r.args.Values)
		}
		if err != nil && r.dry && len(ch.CRDObjects()) > 0 && meta.IsNoMatchError(err) {
			// The chart's own types are not installed yet, and a dry
			// run installs none: render without the cluster instead
			// (the call applies this render).
			inst = action.NewInstall(new(action.Configuration))
			inst.ReleaseName, inst.Namespace = r.args.Release, r.args.Namespace
			inst.DryRun, inst.ClientOnly = true, true
			rel, err = inst.RunWithContext(r.ctx, ch, r.args.Values)
		}
		return rel, err
	})
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", r.args.Release, err)
	}
	if r.args.CreateNamespace {
		if exists, err := r.a.namespaceExists(r.ctx, r.args.Namespace); err != nil {
			return nil, err
		} else if !exists {
			r.change.Objects = append(r.change.Objects, catalog.Change{Action: "create", Kind: "Namespace", Name: r.args.Namespace})
			r.change.Diff = append(r.change.Diff, "+ Namespace "+r.args.Namespace)
		}
	}
	for _, crd := range ch.CRDObjects() {
		objs, err := parseManifest(string(crd.File.Data))
		if err != nil {
			return nil, badRequest(fmt.Sprintf("chart %q: %s: %v", r.args.Chart, crd.Filename, err))
		}
		for _, o := range objs {
			r.change.Objects = append(r.change.Objects, r.a.objectChange("create", o, "", false, r.acct.crds))
			r.change.Diff = append(r.change.Diff, "+ "+o.GetKind()+" "+o.GetName())
		}
		r.acct.extra = append(r.acct.extra, crd.File.Data...)
	}
	return after, nil
}

// upgrade upgrades the release from its last deployed revision.
func (r *changeRun) upgrade() (before, after *release.Release, err error) {
	if r.current == nil {
		return nil, nil, notFound(r.ref, driver.ErrReleaseNotFound)
	}
	ch, err := r.a.loadChart(r.args.Chart, r.args.Version)
	if err != nil {
		return nil, nil, err
	}
	// Helm upgrades from the last deployed revision.
	if before, err = r.cfg.Releases.Deployed(r.args.Release); err != nil {
		before = r.current
	}
	r.snapFrom = []string{before.Manifest, r.current.Manifest}
	after, err = r.render(ch, func(ch *chart.Chart, pr postrender.PostRenderer) (*release.Release, error) {
		up := action.NewUpgrade(r.cfg)
		up.Namespace, up.ReuseValues, up.ResetValues = r.args.Namespace, r.args.ReuseValues, r.args.ResetValues
		up.Wait, up.Timeout, up.PostRenderer, up.MaxHistory = r.args.wait(), r.a.waitFor(r.args), pr, r.cfg.Releases.MaxHistory
		if r.dry {
			up.DryRunOption = "server"
		}
		return up.RunWithContext(r.ctx, r.args.Release, ch, r.args.Values)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("upgrade %s: %w", r.args.Release, err)
	}
	r.acct.live = true
	return before, after, nil
}

// rollback rolls the release back to a revision (default: the one before).
func (r *changeRun) rollback() (before, after *release.Release, err error) {
	if r.current == nil {
		return nil, nil, notFound(r.ref, driver.ErrReleaseNotFound)
	}
	target := r.args.Revision
	if target == 0 {
		target = r.current.Version - 1
	}
	if target < 1 {
		return nil, nil, badRequest(fmt.Sprintf("release %q has only revision %d: there is nothing to roll back to", r.args.Release, r.current.Version))
	}
	if target == r.current.Version {
		return nil, nil, badRequest(fmt.Sprintf("revision %d is the current revision of %q: name an earlier one (tools.helm.history lists them)", target, r.args.Release))
	}
	r.ref.Revision = target
	if after, err = r.cfg.Releases.Get(r.args.Release, target); err != nil {
		return nil, nil, notFound(r.ref, err)
	}
	before, r.acct.live = r.current, true
	r.change.Fingerprint = fmt.Sprint(target)
	if !r.dry {
		r.acct.snap = r.a.snapshot(r.ctx, r.args.Namespace, r.current.Manifest, after.Manifest)
		rb := action.NewRollback(r.cfg)
		rb.Version, rb.Wait, rb.Timeout, rb.MaxHistory = target, r.args.wait(), r.a.waitFor(r.args), r.cfg.Releases.MaxHistory
		if err := untilDone(r.ctx, func() error { return rb.Run(r.args.Release) }); err != nil {
			return nil, nil, fmt.Errorf("rollback %s to revision %d: %w", r.args.Release, target, err)
		}
		if after, err = r.cfg.Releases.Last(r.args.Release); err != nil {
			return nil, nil, err
		}
	}
	return before, after, nil
}

// uninstall uninstalls the release (its delete hooks run).
func (r *changeRun) uninstall() (before, after *release.Release, err error) {
	if r.current == nil {
		return nil, nil, notFound(r.ref, driver.ErrReleaseNotFound)
	}
	before = r.current
	r.change.Fingerprint = fmt.Sprint(r.current.Version)
	after = &release.Release{Name: r.current.Name, Namespace: r.current.Namespace, Version: r.current.Version, Chart: r.current.Chart,
		Info: &release.Info{Status: release.StatusUninstalled, LastDeployed: r.current.Info.LastDeployed}}
	// Helm runs the release's delete hooks.
	for _, h := range r.current.Hooks {
		if h != nil && (slices.Contains(h.Events, release.HookPreDelete) || slices.Contains(h.Events, release.HookPostDelete)) {
			after.Hooks = append(after.Hooks, h)
		}
	}
	if !r.dry {
		r.acct.snap = r.a.snapshot(r.ctx, r.args.Namespace, r.current.Manifest)
		un := action.NewUninstall(r.cfg)
		un.KeepHistory, un.Wait, un.Timeout = r.args.KeepHistory, r.args.wait(), r.a.waitFor(r.args)
		var resp *release.UninstallReleaseResponse
		err := untilDone(r.ctx, func() (err error) {
			resp, err = un.Run(r.args.Release)
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("uninstall %s: %w", r.args.Release, err)
		}
		if resp != nil && resp.Release != nil && resp.Release.Info != nil {
			after.Info = resp.Release.Info
		}
	}
	return before, after, nil
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

// sameRelease says whether two revisions hold the same chart (name and
// version) and values.
func sameRelease(a, b *release.Release) bool {
	if a == nil || b == nil || a.Chart == nil || b.Chart == nil || a.Chart.Metadata == nil || b.Chart.Metadata == nil {
		return false
	}
	if a.Chart.Metadata.Name != b.Chart.Metadata.Name || a.Chart.Metadata.Version != b.Chart.Metadata.Version {
		return false
	}
	if len(a.Config) == 0 && len(b.Config) == 0 {
		return true
	}
	return reflect.DeepEqual(a.Config, b.Config)
}
